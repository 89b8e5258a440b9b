"""The ``flower-app`` command of the CLI: write the Flower App project that runs a study on separate
machines (``flwr run`` submits it; see the documentation's *Federation on Flower* page)."""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from pathlib import Path

from ..learners.registry import names
from .common import COMMANDS, CLIError, add_json_option, count, set_json

__all__ = ["add_flower_app_command"]


def add_flower_app_command(
    sub: argparse._SubParsersAction, formatter: Callable[..., argparse.HelpFormatter]
) -> None:
    """Add ``flower-app`` to the sub-parsers ``sub``."""
    p = sub.add_parser(
        "flower-app",
        formatter_class=formatter,
        help=COMMANDS["flower-app"],
        description=__doc__.splitlines()[0] + ' Needs the flower extra: pip install "dpbnsl[flower]".',
    )
    p.add_argument("directory", type=Path, help="the project directory to create (must not exist)")
    p.add_argument(
        "--protocol",
        choices=sorted(names(hosted=True)),
        default="fed-bnsl",
        help="the run config's default protocol",
    )
    p.add_argument("--participants", type=count(1, 10_000), default=2, help="the run config's default P")
    add_json_option(p)
    p.set_defaults(handler=_flower_app)


def _flower_app(args: argparse.Namespace) -> int:
    try:
        with warnings.catch_warnings():  # Flower's own dependencies' deprecation notices
            warnings.simplefilter("ignore")
            from ..flower.deployment import write_app
    except ImportError as exc:
        raise CLIError(str(exc).splitlines()[0]) from None
    root = write_app(args.directory, protocol=args.protocol, participants=args.participants)
    print(f"Flower App written to {root}; submit it with: flwr run {root} <connection> --run-config '...'")
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    set_json(
        args,
        {
            "directory": str(root),
            "protocol": args.protocol,
            "participants": args.participants,
            "files": files,
        },
    )
    return 0
