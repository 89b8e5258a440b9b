"""The ``show`` command of the CLI: print a run bundle, or render it as one HTML page."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import (
    COMMANDS,
    STDIO,
    CLIError,
    add_json_option,
    format_accuracy,
    jsonable,
    privacy_json,
    set_json,
    table,
)
from .files import check_output_file, write_files

if TYPE_CHECKING:
    from ..io.bundle import Bundle

__all__ = ["add_show_command"]


def add_show_command(
    sub: argparse._SubParsersAction, formatter: Callable[..., argparse.HelpFormatter]
) -> None:
    """Add ``show`` to the sub-parsers ``sub``."""
    p = sub.add_parser(
        "show",
        formatter_class=formatter,
        help=COMMANDS["show"],
        description=__doc__.splitlines()[0],
    )
    p.add_argument("bundle", type=Path, help="the bundle directory")
    p.add_argument(
        "--html",
        type=Path,
        default=None,
        help="write one self-contained HTML page (graph, convergence, privacy, tables) here ('-': stdout)",
    )
    p.add_argument("--force", action="store_true", help="overwrite an existing --html file")
    add_json_option(p)
    p.set_defaults(handler=_show)


def _show(args: argparse.Namespace) -> int:
    to_stdout = args.html is not None and str(args.html) == STDIO
    if args.force and (args.html is None or to_stdout):
        raise CLIError("--force applies only with --html FILE (it allows overwriting that file)")
    if args.html is not None and not to_stdout:
        if args.html.suffix.lower() not in (".html", ".htm"):
            raise CLIError(f"--html {str(args.html)!r} must end in .html or .htm")
        check_output_file(args.html, "--html", force=args.force)
    if not args.bundle.is_dir():
        what = "does not exist" if not args.bundle.exists() else "is not a directory"
        raise CLIError(
            f"{str(args.bundle)!r} is not a bundle: it {what} (give the directory `--out-dir` wrote)"
        )
    from ..io.bundle import read_bundle

    bundle = read_bundle(args.bundle)
    doc = describe(bundle)
    _print(bundle, doc)
    if args.html is not None:
        from ..io.report import render_html

        page = render_html(bundle)
        if to_stdout:
            args.stdout.write(page)
        else:
            write_files([(args.html, lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))])
            print(f"report written to {args.html}")
            doc["html"] = str(args.html)
    set_json(args, doc)
    return 0


def describe(bundle: Bundle) -> dict[str, Any]:
    from ..metrics import count_accuracy

    """A bundle as JSON-ready data: what it is, when and with what it was made, and its results."""
    doc: dict[str, Any] = {
        "bundle": str(bundle.path),
        "kind": bundle.kind,
        "created": bundle.created,
        "versions": dict(bundle.versions),
        "command": None if bundle.command is None else " ".join(bundle.command),
        "summary": jsonable(bundle.summary),
    }
    r = bundle.result
    if r is not None:
        doc["result"] = {
            "method": r.method,
            "d": r.W.shape[0],
            "n_edges": r.n_edges,
            "rounds": len(r.history),
            "privacy": privacy_json(r),
            "communication_mb": r.communication_mb,
            "communication_phases_mb": {k: t.total_mb for k, t in r.transcripts.items()},
        }
        if bundle.truth is not None:
            acc = count_accuracy(bundle.truth.to_numpy(dtype=float), r.W).as_dict()
            doc["result"]["accuracy"] = jsonable(acc)
    doc["tables"] = {name: jsonable(t.to_dict("records")) for name, t in bundle.tables.items()}
    return doc


def _print(bundle: Bundle, doc: dict[str, Any]) -> None:
    import numpy as np

    print(f"{bundle.kind} bundle {str(bundle.path)!r}, written {bundle.created}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in bundle.versions.items()))
    if doc["command"]:
        print(f"command: {doc['command']}")
    r = bundle.result
    if r is not None:
        res = doc["result"]
        rounds = f", {res['rounds']} rounds" if res["rounds"] else ""
        mb = f", {res['communication_mb']:.3f} MB" if res["communication_mb"] is not None else ""
        print(f"{r.method}: d = {res['d']}, {res['n_edges']} edges{rounds}{mb}")
        names = r.names
        edges = [f"{names[i]} -> {names[j]} ({r.W[i, j]:.3g})" for i, j in zip(*np.nonzero(r.W))]
        print("edges: " + ("; ".join(edges) if edges else "none"))
        print(f"privacy: {r.privacy}" if r.privacy is not None else "privacy: none (not a private run)")
        for k, ledger in enumerate(r.ledger or ()):
            print(f"participant {k} ledger:")
            print(ledger.summary().to_string(index=False))
        if "accuracy" in res:
            print(format_accuracy(res["accuracy"]))
    elif bundle.summary:
        for key, v in bundle.summary.items():
            if not isinstance(v, (list, dict)):
                print(f"{key}: {v}")
    for name, t in bundle.tables.items():
        print(f"{name}: {len(t)} rows (first 20)" if len(t) > 20 else f"{name}:")
        print(table([str(c) for c in t.columns], t.head(20).values.tolist()))
