"""Command-line interface: a thin shell over the importable functions.

Every bad input becomes a one-line ``dpbnsl: error: ...`` on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .learners import fed_bnsl, notears, notears_average, notears_best, notears_voting
from .learners.dp_fed_bnsl import dp_fed_bnsl
from .learners.dp_fed_sparse_bnsl import dp_fed_sparse_bnsl
from .learners.fed_sparse_bnsl import fed_sparse_bnsl
from .graphs import is_dag
from .metrics import count_accuracy, shd_cpdag
from .simulate import simulate, split
from ._cli_accounting import add_accounting_commands
from ._cli_attack import add_attack_command
from ._cli_audit import add_audit_command
from ._cli_curve import add_curve_command
from ._cli_demo import add_demo_command
from ._cli_common import PRIVATE, CLIError, formatter as _formatter
from ._cli_methods import EXTRA_METHODS, add_extra_options, run_extra

__all__ = ["main", "build_parser"]

LINEAR = ("notears", "fed-bnsl", "notears-voting", "notears-average", "notears-best",
          "fed-sparse-bnsl", "dp-fed-sparse-bnsl", "dp-fed-bnsl")
METHODS = LINEAR + tuple(EXTRA_METHODS)
# ℓ1 weight per method; every other method: 0.01 (the Fed-BNSL authors' default)
DEFAULT_LAMBDA = {"notears": 0.1, "fed-sparse-bnsl": 0.1, "dp-fed-sparse-bnsl": 0.1}


class _Parser(argparse.ArgumentParser):
    """Argument errors become one line on stderr and exit status 2 (``--help`` shows the usage)."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"dpbnsl: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="dpbnsl",
        description="Federated and differentially private Bayesian-network structure learning.",
        formatter_class=_formatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sim = sub.add_parser("simulate", formatter_class=_formatter,
                         help="simulate a linear SEM and write one CSV per participant",
                         description="Simulate an ER/SF DAG with weights U(±[0.5, 2]) and a linear "
                         "SEM; write participant_<k>.csv, true_graph.csv and true_weights.csv.")
    sim.add_argument("--d", type=int, default=10, help="number of variables")
    sim.add_argument("--n", type=int, default=1000, help="total number of samples")
    sim.add_argument("--participants", type=int, default=10, help="number of participants")
    sim.add_argument("--s0", type=int, default=None, help="number of edges (default: d)")
    sim.add_argument("--graph-type", default="ER", choices=("ER", "SF"),
                     help="Erdős–Rényi or scale-free DAG")
    sim.add_argument("--noise", default="gaussian",
                     choices=("gaussian", "exponential", "gumbel", "uniform"), help="noise family")
    sim.add_argument("--seed", type=int, default=0, help="random seed")
    sim.add_argument("--out", type=Path, default=Path("dpbnsl-data"), help="output directory")
    sim.set_defaults(handler=_simulate)

    learn = sub.add_parser("learn", formatter_class=_formatter,
                           help="learn a DAG from one or several CSV files",
                           description="Learn a DAG. Each --data CSV (header row of variable names) "
                           "is one participant; with a single CSV, --participants splits its rows "
                           "into equal contiguous shards. Centralised NOTEARS pools all rows.")
    learn.add_argument("--method", default="fed-bnsl", choices=METHODS, help="learner")
    learn.add_argument("--data", nargs="+", type=Path, required=True, metavar="CSV",
                       help="one CSV per participant (required)")
    learn.add_argument("--participants", type=int, default=None,
                       help="split a single --data file into this many participants")
    learn.add_argument("--out", type=Path, default=None, help="write the learned weights here")
    learn.add_argument("--truth", type=Path, default=None,
                       help="true adjacency CSV (d×d, optionally labelled); prints metrics")
    learn.add_argument("--lambda1", type=float, default=None,
                       help="ℓ1 weight (default: each method's own: 0.1 for notears and "
                            "(dp-)fed-sparse-bnsl, 1e-3 for fed-bnsl-mlp, Table 6 for "
                            "ds-fcd/as-fcd, 0.01 otherwise)")
    learn.add_argument("--threshold", type=float, default=0.3, help="edge weight threshold")
    learn.add_argument("--max-rounds", type=int, default=200, help="Fed-BNSL rounds at most")
    sparse = learn.add_argument_group("Fed-Sparse-BNSL and DP-Fed-Sparse-BNSL")
    sparse.add_argument("--rounds", type=int, default=None,
                        help="ADMM rounds T (default: 100, or 10 for the private method)")
    sparse.add_argument("--local-iters", type=int, default=None,
                        help="(DP-)PGCD iterations K per round (default: 20, or 10 if private)")
    sparse.add_argument("--seed", type=int, default=0, help="random seed (private and randomly initialised methods)")
    dp = learn.add_argument_group("privacy (private methods)")
    dp.add_argument("--epsilon", type=float, default=None, help="ε per participant (required)")
    dp.add_argument("--delta", type=float, default=1e-5, help="δ per participant")
    dp.add_argument("--clip", type=float, default=30.0, help="DP-PGCD clip bound C")
    dp.add_argument("--calibration", default="tight", choices=("tight", "paper"),
                    help="DP-PGCD noise calibration")
    dp.add_argument("--smoothness", default="private", choices=("private", "bounds"),
                    help="smoothness constants: private estimate or the public bound itself")
    dp.add_argument("--feature-bound", type=float, default=None,
                    help="public bound on every x_ia² (required by the private method)")
    dp.add_argument("--centre", default="declared", choices=("declared", "private"),
                    help="data declared centred, or centred by a private mean")
    dp.add_argument("--clip-norm", type=float, default=1.0,
                    help="dp-fed-bnsl: row clipping norm R of the covariance release")
    dp.add_argument("--gaussian", default="analytic", choices=("analytic", "classic", "zcdp"),
                    help="dp-fed-bnsl: calibration of the covariance release")
    add_extra_options(learn)
    learn.set_defaults(handler=_learn)

    add_accounting_commands(sub, _formatter)
    add_attack_command(sub, _formatter)
    add_audit_command(sub, _formatter)
    add_curve_command(sub, _formatter)
    add_demo_command(sub, _formatter)
    return parser


def _read_csv(path: Path, what: str) -> pd.DataFrame:
    if not path.is_file():
        raise CLIError(f"{what} file {str(path)!r} does not exist")
    try:
        return pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise CLIError(f"cannot read {what} file {str(path)!r}: {exc}") from exc


def _read_truth(path: Path) -> pd.DataFrame:
    df = _read_csv(path, "--truth")
    first = df.columns[0]
    if str(first).startswith("Unnamed") or not pd.api.types.is_numeric_dtype(df[first]):
        df = df.set_index(first)
        df.index.name = None
    if df.shape[0] != df.shape[1]:
        raise CLIError(f"--truth {str(path)!r} must be a square matrix; got shape {df.shape}")
    for col in df.columns:
        if not pd.api.types.is_numeric_dtype(df[col]):
            raise CLIError(f"--truth {str(path)!r} column {col!r} is not numeric")
    return df


def _participants(args) -> list[pd.DataFrame]:
    frames = [_read_csv(p, "--data") for p in args.data]
    if args.participants is not None:
        if len(frames) != 1:
            raise CLIError(f"--participants needs exactly one --data file; got {len(frames)}")
        return split(frames[0], args.participants)
    return frames


# options that only some methods read; giving one to another method is an error, never ignored
# (above all: --epsilon with a non-private method must not silently run without privacy)
_OPTION_USERS = {
    "epsilon": PRIVATE, "delta": PRIVATE, "centre": PRIVATE, "seed": PRIVATE,
    "clip": ("dp-fed-sparse-bnsl",), "calibration": ("dp-fed-sparse-bnsl",),
    "smoothness": ("dp-fed-sparse-bnsl",), "feature_bound": ("dp-fed-sparse-bnsl",),
    "clip_norm": ("dp-fed-bnsl",), "gaussian": ("dp-fed-bnsl",),
    "rounds": ("fed-sparse-bnsl", "dp-fed-sparse-bnsl"),
    "local_iters": ("fed-sparse-bnsl", "dp-fed-sparse-bnsl"),
    "max_rounds": ("fed-bnsl", "dp-fed-bnsl"),
    "lambda1": LINEAR + tuple(k for k, m in EXTRA_METHODS.items() if "lambda1" in m.options),
    "threshold": LINEAR + tuple(k for k, m in EXTRA_METHODS.items() if "threshold" in m.options),
}
for _name, _method in EXTRA_METHODS.items():  # the extra methods' own options
    for _opt in _method.options:
        if _opt not in ("lambda1", "threshold"):
            _OPTION_USERS[_opt] = _OPTION_USERS.get(_opt, ()) + (_name,)


def _refuse_unused_options(args) -> None:
    defaults = build_parser().parse_args(["learn", "--data", "x"])
    for name, users in _OPTION_USERS.items():
        if args.method not in users and getattr(args, name) != getattr(defaults, name):
            flag = "--" + name.replace("_", "-")
            raise CLIError(f"{flag} does not apply to --method {args.method} (it is used by "
                           f"{', '.join(users)})")


def _learn(args) -> int:
    participants = _participants(args)
    truth = _read_truth(args.truth) if args.truth is not None else None
    if args.method in EXTRA_METHODS:
        _refuse_unused_options(args)
        B = None if truth is None else truth.to_numpy(dtype=float)
        return _report(args, participants, truth,
                       run_extra(args.method, participants, args, B))
    lam = DEFAULT_LAMBDA.get(args.method, 0.01) if args.lambda1 is None else args.lambda1
    common = dict(lambda1=lam, threshold=args.threshold)
    private = args.method in PRIVATE
    if private and args.epsilon is None:
        raise CLIError(f"--method {args.method} needs --epsilon")
    _refuse_unused_options(args)
    if args.method == "notears-best" and truth is None:
        raise CLIError("--method notears-best is an oracle: it needs --truth")
    sparse = dict(rounds=args.rounds or (10 if private else 100),
                  local_iters=args.local_iters or (10 if private else 20))
    if args.method == "notears":
        names = [tuple(f.columns) for f in participants]
        if len(set(names)) > 1:
            raise CLIError("--data files must have the same columns to be pooled for notears")
    run = {
        "notears": lambda: notears(pd.concat(participants, ignore_index=True), **common),
        "fed-bnsl": lambda: fed_bnsl(participants, max_rounds=args.max_rounds, **common),
        "notears-voting": lambda: notears_voting(participants, **common),
        "notears-average": lambda: notears_average(participants, **common),
        "notears-best": lambda: notears_best(participants, B_true=truth, **common),
        "fed-sparse-bnsl": lambda: fed_sparse_bnsl(participants, **sparse, **common),
        "dp-fed-sparse-bnsl": lambda: dp_fed_sparse_bnsl(
            participants, epsilon=args.epsilon, delta=args.delta, clip=args.clip,
            calibration=args.calibration, smoothness=args.smoothness,
            feature_bound=args.feature_bound, centre=args.centre, rng=args.seed, **sparse,
            **common),
        "dp-fed-bnsl": lambda: dp_fed_bnsl(
            participants, epsilon=args.epsilon, delta=args.delta, clip_norm=args.clip_norm,
            calibration=args.gaussian, centre=args.centre, max_rounds=args.max_rounds,
            rng=args.seed, **common),
    }
    return _report(args, participants, truth, run[args.method]())


def _report(args, participants, truth, result) -> int:
    W = result.to_frame()
    print(f"{result.method}: {len(participants)} participant(s), d = {W.shape[0]}, "
          f"{result.n_edges} edges" + (f", {len(result.history)} rounds" if len(result.history) else ""))
    if "A" in result.info:
        print(f"lagged edges (lag {result.info.get('lag', args.lag)}): "
              f"{int(np.count_nonzero(result.info['A']))}")
    if result.transcript is not None:
        print(f"communication: {result.transcript.total_mb:.3f} MB")
    if "epsilon" in result.info:
        spent = result.info["epsilon"]
        print(f"privacy spent per participant at δ = {args.delta:g}: "
              + ", ".join(f"ε = {v:.7g} ({k})" for k, v in spent.items()))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        W.to_csv(args.out)
        print(f"weights written to {args.out}")
        if "A" in result.info:  # time series: the lagged weights too
            lagged = args.out.with_suffix(".lagged.csv")
            pd.DataFrame(np.asarray(result.info["A"]), index=list(result.info["A_index"]),
                         columns=W.columns).to_csv(lagged)
            print(f"lagged weights written to {lagged}")
    if truth is not None:
        if truth.shape[0] != W.shape[0]:
            raise CLIError(f"--truth has {truth.shape[0]} variables but the data have {W.shape[0]}")
        acc = count_accuracy(truth.to_numpy(dtype=float), result.W)
        print("  ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                        for k, v in acc.as_dict().items()))
        constraint = getattr(EXTRA_METHODS.get(args.method), "family", "") == "constraint"
        if constraint and result.is_dag and is_dag(truth.to_numpy()):  # PC learns a class
            print(f"shd_cpdag={shd_cpdag(truth.to_numpy(dtype=float), result.W)}")
    return 0


def _simulate(args) -> int:
    data = simulate(args.d, args.n, participants=args.participants, s0=args.s0,
                    graph_type=args.graph_type, noise=args.noise, rng=args.seed)
    names = [f"X{i}" for i in range(args.d)]
    args.out.mkdir(parents=True, exist_ok=True)
    for k, X in enumerate(data.participants):
        pd.DataFrame(X, columns=names).to_csv(args.out / f"participant_{k}.csv", index=False)
    pd.DataFrame(data.B_true, index=names, columns=names).to_csv(args.out / "true_graph.csv")
    pd.DataFrame(data.W_true, index=names, columns=names).to_csv(args.out / "true_weights.csv")
    print(f"wrote {len(data.participants)} participant files, true_graph.csv and true_weights.csv "
          f"to {args.out} ({int(np.count_nonzero(data.B_true))} true edges)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except (CLIError, ValueError, TypeError, FileNotFoundError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"dpbnsl: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
