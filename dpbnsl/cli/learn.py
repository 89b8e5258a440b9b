"""The ``learn`` command of the CLI: fit any registered learner to CSV/Parquet participants and
report the graph, the privacy statement and the metrics; write the weights or a run bundle."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ..learners.registry import LEARNERS
from .common import (
    COMMANDS,
    MAX_COUNT,
    MAX_SEED,
    STDIO,
    CLIError,
    add_json_option,
    count,
    format_accuracy,
    jsonable,
    print_privacy,
    privacy_json,
    private_methods,
    refuse_no_noise,
    refuse_unused,
    seed_warning,
    set_json,
)
from .files import check_input_files, check_output_file, distinct_files, read_csv, same_columns, write_files
from .learn_options import add_extra_options

if TYPE_CHECKING:
    import pandas as pd

    from ..learners.result import LearnResult

__all__ = ["add_learn_command", "learn_document", "check_scale"]

METHODS = tuple(LEARNERS)


def add_learn_command(
    sub: argparse._SubParsersAction, formatter: Callable[..., argparse.HelpFormatter]
) -> None:
    """Add ``learn`` to the sub-parsers ``sub``."""
    learn = sub.add_parser(
        "learn",
        formatter_class=formatter,
        help=COMMANDS["learn"],
        description="Learn a DAG. Each --data CSV (header row of variable names) "
        "is one participant; with a single CSV, --participants splits its rows "
        "into equal contiguous shards. Centralised NOTEARS pools all rows.",
    )
    learn.add_argument("--method", default="fed-bnsl", choices=METHODS, help="learner")
    learn.add_argument(
        "--data",
        nargs="+",
        type=Path,
        required=True,
        metavar="FILE",
        help="one CSV (or .parquet) per participant (required); '-' reads a CSV from stdin",
    )
    learn.add_argument(
        "--participants",
        type=count(1, 100_000),
        default=None,
        help="split a single --data file into this many participants",
    )
    learn.add_argument(
        "--out", type=Path, default=None, help="write the learned weights here as CSV ('-': stdout)"
    )
    learn.add_argument(
        "--out-dir",
        type=Path,
        default=None,
        help="write a run bundle here: weights with names, history, transcript, per-participant "
        "ledgers, privacy statement, params, versions (read it with `dpbnsl show`)",
    )
    learn.add_argument(
        "--force", action="store_true", help="overwrite an existing --out file or --out-dir bundle"
    )
    add_json_option(learn)
    learn.add_argument(
        "--truth",
        type=Path,
        default=None,
        help="true adjacency CSV (d×d, optionally labelled; may be cyclic, e.g. a consensus "
        "network, but without self-loops or 2-cycles); prints metrics ('-': stdin)",
    )
    learn.add_argument(
        "--lambda1",
        type=float,
        default=None,
        help="ℓ1 weight (default: each method's own: 0.1 for notears and "
        "(dp-)fed-sparse-bnsl, 1e-3 for fed-bnsl-mlp, Table 6 for "
        "ds-fcd/as-fcd, 0.01 otherwise)",
    )
    learn.add_argument("--threshold", type=float, default=0.3, help="edge weight threshold")
    learn.add_argument("--max-rounds", type=count(1, MAX_COUNT), default=200, help="Fed-BNSL rounds at most")
    learn.add_argument(
        "--max-iter",
        type=count(1, MAX_COUNT),
        default=None,
        help="NOTEARS dual updates at most (notears and its local-fit baselines; default 100)",
    )
    learn.add_argument(
        "--seed",
        type=count(0, MAX_SEED),
        default=None,
        help="random seed of the private noise and of random initialisations "
        "(default: fresh entropy from the operating system; a seed makes a "
        "private run reproducible and therefore NOT private against anyone "
        "who knows it)",
    )
    sparse = learn.add_argument_group("Fed-Sparse-BNSL and DP-Fed-Sparse-BNSL")
    sparse.add_argument(
        "--rounds",
        type=count(1, MAX_COUNT),
        default=None,
        help="ADMM rounds T (default: 100; private: chosen from d, n_k, ε, δ)",
    )
    sparse.add_argument(
        "--local-iters",
        type=count(1, MAX_COUNT),
        default=None,
        help="(DP-)PGCD iterations K per round (default: 20; private: chosen from d, n_k, ε, δ)",
    )
    dp = learn.add_argument_group("privacy (private methods)")
    dp.add_argument(
        "--epsilon", type=float, default=None, help="ε per participant, in [1e-6, 100] (required)"
    )
    dp.add_argument("--delta", type=float, default=1e-5, help="δ per participant")
    dp.add_argument(
        "--clip",
        type=float,
        default=1.0,
        help="DP-PGCD clip bound: per-sample gradients are clipped at --clip times "
        "their parent's scale (public: not chosen by looking at the data)",
    )
    dp.add_argument(
        "--clip-scheme",
        default="relative",
        choices=("relative", "parents", "coordinates"),
        help="how --clip becomes per-parent thresholds ('parents' reproduces the paper's C values)",
    )
    dp.add_argument(
        "--calibration",
        default="tight",
        choices=("tight", "paper", "classic", "zcdp"),
        help="noise calibration: 'tight' (every private method), 'paper' (dp-fed-sparse-bnsl: the "
        "paper's Theorem 5.1), 'classic' or 'zcdp' (the Gaussian covariance release of dp-fed-bnsl "
        "and dp-cov-pc)",
    )
    dp.add_argument(
        "--smoothness",
        default="private",
        choices=("private", "bounds"),
        help="smoothness constants: private estimate or the public bound itself",
    )
    dp.add_argument(
        "--feature-bound",
        type=float,
        default=None,
        help="public bound on every x_ia², from the data's known range, not from the "
        "data (required by the private method)",
    )
    dp.add_argument(
        "--centre",
        default="declared",
        choices=("declared", "private"),
        help="data declared centred, or centred by a private mean",
    )
    dp.add_argument(
        "--warm-start",
        default="auto",
        choices=("auto", "covariance", "none"),
        help="dp-fed-sparse-bnsl: start from a graph learned on one private "
        "covariance release per participant ('auto': when d <= 30)",
    )
    dp.add_argument(
        "--warm-share",
        type=float,
        default=None,
        help="dp-fed-sparse-bnsl: fraction of the budget for the warm start "
        "(default 0.8 below ε = 2, else 0.5)",
    )
    dp.add_argument(
        "--warm-clip-norm",
        type=float,
        default=1.0,
        help="dp-fed-sparse-bnsl: row clipping norm of the warm start's covariance "
        "release (public; 1 keeps each row's direction)",
    )
    dp.add_argument(
        "--clip-norm",
        type=float,
        default=None,
        help="dp-fed-bnsl, dp-cov-pc: row clipping norm R of the covariance release, a public "
        "bound on ‖x_i‖₂ in the data's units (required by both)",
    )
    dp.add_argument(
        "--aggregation",
        default="local",
        choices=("local", "secure"),
        help="dp-fed-bnsl, dp-cov-pc, dp-fed-sparse-bnsl (its warm start), dp-fed-pc: the trust "
        "model of the releases. 'local': each participant's release is private on its own; "
        "'secure': secure aggregation sums the participants' integer statistics and noise shares, "
        "the server reads one jointly noised covariance (dp-fed-pc: one jointly noised statistic "
        "per test) with about √P less noise",
    )
    dp.add_argument(
        "--dropouts",
        type=int,
        default=0,
        help="with --aggregation secure: t, the participants that may drop out or "
        "collude with the server (each noise share is sized for P − t honest shares)",
    )
    add_extra_options(learn)
    learn.set_defaults(handler=_learn)


def _read_truth(path: Path, columns: list[str]) -> pd.DataFrame:
    """The --truth matrix, checked against the data before any learning: square, d × d, finite,
    a DAG, and labelled like the data when it carries the same labels in another order."""
    df = read_csv(path, "--truth", index="auto")
    if df.shape[0] != df.shape[1]:
        raise CLIError(f"--truth {str(path)!r} must be a square matrix; got shape {df.shape}")
    if df.shape[0] != len(columns):
        raise CLIError(f"--truth {str(path)!r} has {df.shape[0]} variables but the data have {len(columns)}")
    import numpy as np

    labels = [str(c) for c in df.columns]
    if labels != columns and labels != [str(i) for i in range(len(columns))]:
        # unlabelled (pandas' default 0 .. d−1 header) is matched by position; names must match
        if sorted(labels) == sorted(columns):
            raise CLIError(
                f"--truth {str(path)!r} names the data's variables in another order "
                f"({labels} vs {columns}); write it in the data's column order"
            )
        raise CLIError(f"--truth {str(path)!r} names variables {labels} but the data have {columns}")
    A = df.to_numpy(dtype=float) != 0
    if np.any(np.diag(A)):
        raise CLIError(
            f"--truth {str(path)!r} has a self-loop on {labels[int(np.flatnonzero(np.diag(A))[0])]!r}"
        )
    if np.any(A & A.T):
        i, j = np.argwhere(A & A.T)[0]
        raise CLIError(f"--truth {str(path)!r} has the 2-cycle {labels[i]!r} <-> {labels[j]!r}")
    return df


def _participants(args: argparse.Namespace) -> tuple[list[pd.DataFrame], list[Path]]:
    from ..simulation import split

    distinct_files(args.data, "--data")
    frames = [read_csv(p, "--data", participant=k) for k, p in enumerate(args.data)]
    same_columns(frames, args.data, "--data")
    if args.participants is not None:
        if len(frames) != 1:
            raise CLIError(f"--participants needs exactly one --data file; got {len(frames)}")
        return split(frames[0], args.participants), args.data * args.participants
    return frames, list(args.data)


# options that only some methods read; giving one to another method is an error, never ignored
# (above all: --epsilon with a non-private method must not silently run without privacy)
_OPTION_USERS = {
    opt: tuple(name for name, x in LEARNERS.items() if opt in x.cli_options)
    for opt in dict.fromkeys(o for x in LEARNERS.values() for o in x.cli_options)
}


def _refuse_unused_options(args: argparse.Namespace) -> None:
    refuse_unused(args, _OPTION_USERS, args.method)


def check_scale(frames: Sequence[pd.DataFrame], paths: Sequence[Path]) -> None:
    """Refuse data whose magnitude overflows a non-private learner's statistics, naming the file,
    the data row and the column (:func:`dpbnsl._validation.check_data_scale` in file terms)."""
    from .._validation import MAX_DATA_ABS, too_large

    for k, (frame, path) in enumerate(zip(frames, paths)):
        found = too_large(frame.to_numpy(dtype=float))
        if found is not None:
            i, j, v = found
            raise CLIError(
                f"--data file {str(path)!r} (participant {k}): an entry of magnitude {v:.3g} at data "
                f"row {i}, column {frame.columns[j]!r}; beyond {MAX_DATA_ABS:g} this method's "
                f"covariances and losses overflow: rescale the data (the private methods clip every "
                f"record and accept it)"
            )


def _temporal(method: str) -> bool:
    return LEARNERS[method].family == "temporal"


#: the public bounds a private method cannot run without (no default can know the data's units)
_PUBLIC_BOUNDS = {
    "dp-fed-sparse-bnsl": (
        "feature_bound",
        "--feature-bound B, a public bound on every x_ia² in the data's units (from the "
        "measurement's known range, not from the data)",
    ),
    **{
        method: (
            "clip_norm",
            "--clip-norm R, a public bound on each row's norm ‖x_i‖₂ in the data's units (from the "
            "measurement's known range, not from the data)",
        )
        for method in ("dp-fed-bnsl", "dp-cov-pc", "dp-sortnregress", "dp-r2-sortnregress")
    },
}
_PUBLIC_BOUNDS["dp-cov-pc"] = _PUBLIC_BOUNDS["dp-fed-bnsl"]


def _learn(args: argparse.Namespace) -> int:
    # --- everything is checked before any learning and before any file is written -------------
    private = args.method in private_methods()
    if private and args.epsilon is None:
        raise CLIError(f"--method {args.method} needs --epsilon")
    _refuse_unused_options(args)
    needed = _PUBLIC_BOUNDS.get(args.method)
    if needed is not None and getattr(args, needed[0]) is None:
        raise CLIError(f"--method {args.method} needs {needed[1]}")
    if args.method in ("priv-pc", "dp-fed-pc") and args.variables == "continuous" and args.bounds is None:
        raise CLIError(
            f"--method {args.method} with --variables continuous needs --bounds LOW,HIGH, a public range "
            "of every column in the data's units (from the measurement's known range, not from the data)"
        )
    refuse_no_noise(args)
    if args.force and args.out is None and args.out_dir is None:
        raise CLIError("--force applies only with --out or --out-dir (it allows overwriting them)")
    stdout = args.out is not None and str(args.out) == STDIO
    if args.out is not None and not stdout:
        check_output_file(args.out, "--out", force=args.force)
        if _temporal(args.method):
            check_output_file(args.out.with_suffix(".lagged.csv"), "--out (lagged weights)", force=args.force)
    if stdout and _temporal(args.method):
        raise CLIError("--out - writes one CSV; a time-series learner writes two (use a file, or --out-dir)")
    if [str(p) for p in args.data].count(STDIO) and args.truth is not None and str(args.truth) == STDIO:
        raise CLIError("--data and --truth cannot both read stdin ('-')")
    check_input_files(args.data, "--data")
    if args.truth is not None:
        check_input_files([args.truth], "--truth")
    if args.out_dir is not None:
        from ..io.bundle import check_bundle_dir

        check_bundle_dir(args.out_dir, overwrite=args.force, what="--out-dir")
    participants, _ = _participants(args)
    names = [str(c) for c in participants[0].columns]
    entry = LEARNERS[args.method]
    if not entry.private:  # the private learners clip every record; the others square the data
        check_scale(participants, args.data)
    rows = sum(len(f) for f in participants)
    if entry.pooled and rows < 2:
        files = ", ".join(repr(str(p)) for p in args.data)
        raise CLIError(
            f"--data file(s) {files} hold {rows} row in all; --method {args.method} "
            f"pools the rows and needs at least 2"
        )
    truth = _read_truth(args.truth, names) if args.truth is not None else None
    if entry.oracle and truth is None:
        raise CLIError(f"--method {args.method} is an oracle: it needs --truth")
    if entry.pooled and len({tuple(f.columns) for f in participants}) > 1:
        raise CLIError(f"--data files must have the same columns to be pooled for {args.method}")
    if private and args.seed is not None:
        seed_warning()
    B = None if truth is None or not entry.oracle else truth.to_numpy(dtype=float)
    from ..federation.progress import StderrProgress

    with StderrProgress(args.method):  # one line on a terminal once the run lasts a few seconds
        result = entry.run(participants, B_true=B, **entry.cli_kwargs(args))
    _report(args, participants, truth, result)
    return 0


def _report(
    args: argparse.Namespace,
    participants: Sequence[pd.DataFrame],
    truth: pd.DataFrame | None,
    result: LearnResult,
) -> None:
    import numpy as np
    import pandas as pd

    W = result.to_frame()
    doc = learn_document(result, truth, participants=len(participants))
    print(
        f"{result.method}: {len(participants)} participant(s), d = {W.shape[0]}, "
        f"{result.n_edges} edges" + (f", {len(result.history)} rounds" if len(result.history) else "")
    )
    if result.lagged is not None:
        print(
            f"lagged edges (lag {result.info.get('lag', args.lag)}): {int(np.count_nonzero(result.lagged))}"
        )
    warm = result.info.get("warm_start")
    if warm:
        print(
            f"warm start: {warm['edges']} edges from one private covariance release per "
            f"participant ({warm['share']:.0%} of the budget after pre-processing)"
        )
    if result.communication_mb is not None:
        print(f"communication: {result.communication_text()}")
    print_privacy(result)
    if "accuracy" in doc:
        print(format_accuracy(doc["accuracy"]))
    if "shd_cpdag" in doc:
        print(f"shd_cpdag={doc['shd_cpdag']}")
    if args.out_dir is not None:  # first: encoding the bundle is what can still fail
        from ..io.bundle import write_bundle

        write_bundle(
            args.out_dir,
            "learn",
            result=result,
            truth=truth,
            summary=doc,
            command=args.argv,
            overwrite=args.force,
        )
        print(f"run bundle written to {args.out_dir} (read it with `dpbnsl show {args.out_dir}`)")
        doc["bundle"] = str(args.out_dir)
    if args.out is not None and str(args.out) == STDIO:
        W.to_csv(args.stdout)
    elif args.out is not None:
        files = [(args.out, lambda tmp: W.to_csv(tmp))]
        if result.lagged is not None:  # time series: the lagged weights too
            lagged = args.out.with_suffix(".lagged.csv")
            A = pd.DataFrame(
                np.asarray(result.lagged),
                index=list(cast("tuple[str, ...]", result.lagged_index)),  # set whenever `lagged` is
                columns=W.columns,
            )
            files.append((lagged, lambda tmp: A.to_csv(tmp)))
        write_files(files)
        print(f"weights written to {args.out}")
        if len(files) > 1:
            print(f"lagged weights written to {files[1][0]}")
        doc["files"] = [str(p) for p, _ in files]
    set_json(args, doc)


def learn_document(result: LearnResult, truth: pd.DataFrame | None, *, participants: int) -> dict:
    """The JSON summary of a learning run (``learn --json``, and a bundle's summary)."""
    import numpy as np

    from ..graphs import is_dag
    from ..metrics import count_accuracy, shd_cpdag

    names = result.names
    doc: dict = {
        "method": result.method,
        "participants": participants,
        "d": result.W.shape[0],
        "variables": names,
        "n_edges": result.n_edges,
        "rounds": len(result.history),
        "edges": [[names[i], names[j], float(result.W[i, j])] for i, j in zip(*np.nonzero(result.W))],
        "is_dag": result.is_dag,
        "privacy": privacy_json(result),
    }
    if result.lagged is not None:
        doc["lagged_edges"] = int(np.count_nonzero(result.lagged))
    if result.communication_mb is not None:  # every phase (per phase: communication_phases_mb)
        doc["communication_mb"] = result.communication_mb
        doc["communication_phases_mb"] = {k: t.total_mb for k, t in result.transcripts.items()}
    if truth is not None:
        T = truth.to_numpy(dtype=float)
        doc["accuracy"] = jsonable(count_accuracy(T, result.W).as_dict())
        entry = LEARNERS.get(result.method.split(" ")[0])  # oracle names carry " (oracle)"
        if entry is not None and entry.family == "constraint" and result.is_dag and is_dag(T):
            doc["shd_cpdag"] = shd_cpdag(T, result.W)  # PC learns an equivalence class
    return doc
