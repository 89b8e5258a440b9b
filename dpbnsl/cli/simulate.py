"""The ``simulate`` command of the CLI: a linear SEM written as one CSV per participant, with the
true graph and weights beside them; outputs checked before any work and written all-or-nothing.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from .common import COMMANDS, MAX_SEED, CLIError, add_json_option, count, set_json
from .files import check_output_dir, write_files

__all__ = ["add_simulate_command"]


def add_simulate_command(
    sub: argparse._SubParsersAction, formatter: Callable[..., argparse.HelpFormatter]
) -> None:
    """Add ``simulate`` to the sub-parsers ``sub``."""
    sim = sub.add_parser(
        "simulate",
        formatter_class=formatter,
        help=COMMANDS["simulate"],
        description="Simulate an ER/SF DAG with weights U(±[0.5, 2]) and a linear "
        "SEM; write participant_<k>.csv, true_graph.csv and true_weights.csv. With --lag L, "
        "a structural VAR(L) time series instead (FedDBN's benchmark): each participant's file "
        "holds its segment of the series, rows in time order, and true_lagged.csv the lag weights.",
    )
    sim.add_argument("--d", type=count(2, 10_000), default=None, help="number of variables (default 10)")
    sim.add_argument("--n", type=count(2, 10**8), default=1000, help="total number of samples")
    sim.add_argument("--participants", type=count(1, 100_000), default=10, help="number of participants")
    sim.add_argument("--s0", type=count(0, 10**8), default=None, help="number of edges (default: d)")
    sim.add_argument("--graph-type", default="ER", choices=("ER", "SF"), help="Erdős–Rényi or scale-free DAG")
    sim.add_argument(
        "--noise",
        default="gaussian",
        choices=("gaussian", "exponential", "gumbel", "uniform"),
        help="noise family",
    )
    sim.add_argument(
        "--seed",
        type=count(0, MAX_SEED),
        default=0,
        help="random seed (simulated data, not privacy noise: a fixed default keeps examples reproducible)",
    )
    sim.add_argument(
        "--lag",
        type=count(1, 100),
        default=None,
        help="simulate a structural VAR time series of this lag instead (for fed-dbn; "
        "--n design rows in all, --graph-type and --noise do not apply)",
    )
    sim.add_argument(
        "--network",
        default=None,
        choices=("ecoli70", "magic-niab", "alarm", "child", "insurance"),
        help="sample a packaged bnlearn network instead (Gaussian: ecoli70, magic-niab, centred "
        "with the population mean; discrete: alarm, child, insurance, integer state codes); "
        "--d, --s0, --graph-type, --noise and --lag do not apply",
    )
    sim.add_argument(
        "--standardise",
        action="store_true",
        help="divide each variable by its population standard deviation (from the simulated or "
        "published parameters, not from the sample; true_weights.csv is rescaled to match)",
    )
    sim.add_argument("--out", type=Path, default=Path("dpbnsl-data"), help="output directory")
    sim.add_argument(
        "--force",
        action="store_true",
        help="overwrite the files of an earlier simulation in --out (and remove its "
        "participant files beyond --participants)",
    )
    add_json_option(sim)
    sim.set_defaults(handler=_simulate)


def _stale(out: Path, names: list[str]) -> list[Path]:
    """An earlier simulation's participant files that this one would not overwrite."""
    if not out.is_dir():
        return []
    return sorted(
        p for p in out.glob("participant_*.csv") if p.name not in names and p.stem.split("_", 1)[1].isdigit()
    )


def _simulate(args: argparse.Namespace) -> int:
    names = [f"participant_{k}.csv" for k in range(args.participants)]
    outputs = names + ["true_graph.csv", "true_weights.csv"] + (["true_lagged.csv"] if args.lag else [])
    check_output_dir(args.out, "--out", outputs, force=args.force)
    stale = _stale(args.out, names)
    if stale and not args.force:  # `--data out/participant_*.csv` would pick them up
        raise CLIError(
            f"--out {str(args.out)!r} holds {stale[0].name} of an earlier simulation; "
            f"pass --force to replace that simulation, or choose another directory"
        )
    if args.network is not None:
        foreign = [
            flag
            for flag, given in (
                ("--d", args.d is not None),
                ("--s0", args.s0 is not None),
                ("--graph-type", args.graph_type != "ER"),
                ("--noise", args.noise != "gaussian"),
                ("--lag", args.lag is not None),
            )
            if given
        ]
        if foreign:
            raise CLIError(f"--network samples a packaged network: {', '.join(foreign)} do(es) not apply")
    if args.participants > args.n:
        raise CLIError(
            f"--participants {args.participants} exceeds --n {args.n}: every "
            f"participant needs at least one row"
        )
    import numpy as np
    import pandas as pd

    from ..simulation import simulate
    from ..simulation.temporal import simulate_temporal

    d = 10 if args.d is None else args.d
    cols = [f"X{i}" for i in range(d)]
    if args.network is not None:
        from ..io.networks import GAUSSIAN_NETWORKS, sample_network

        if args.standardise and args.network not in GAUSSIAN_NETWORKS:
            raise CLIError(f"--standardise applies to the Gaussian networks ({', '.join(GAUSSIAN_NETWORKS)})")
        sample = sample_network(
            args.network, args.n, participants=args.participants, standardise=args.standardise, rng=args.seed
        )
        series, B_true, W_true = list(sample.participants), sample.B_true, sample.W_true
        cols = list(sample.columns)
    elif args.lag is not None:
        if args.graph_type != "ER" or args.noise != "gaussian" or args.s0 is not None:
            raise CLIError("--lag simulates FedDBN's benchmark: --graph-type, --noise and --s0 do not apply")
        if args.standardise:
            raise CLIError("--standardise applies to the linear SEM and the Gaussian networks, not to --lag")
        temporal = simulate_temporal(d, args.n, participants=args.participants, lag=args.lag, rng=args.seed)
        series, B_true, W_true = [s[0] for s in temporal.series], temporal.B_true, temporal.W_true
        lagged = pd.DataFrame(
            temporal.A_true,
            index=[f"{c}(t-{k})" for k in range(1, args.lag + 1) for c in cols],
            columns=cols,
        )
    else:
        data = simulate(
            d,
            args.n,
            participants=args.participants,
            s0=args.s0,
            graph_type=args.graph_type,
            noise=args.noise,
            standardise=args.standardise,
            rng=args.seed,
        )
        series, B_true, W_true = list(data.participants), data.B_true, data.W_true
    frames = [pd.DataFrame(X, columns=cols) for X in series]
    files: list[tuple[Path, Callable[..., object]]] = [
        (args.out / n, lambda tmp, f=f: f.to_csv(tmp, index=False)) for n, f in zip(names, frames)
    ]
    files += [
        (
            args.out / "true_graph.csv",
            lambda tmp: pd.DataFrame(B_true, index=cols, columns=cols).to_csv(tmp),
        ),
        (
            args.out / "true_weights.csv",
            lambda tmp: pd.DataFrame(W_true, index=cols, columns=cols).to_csv(tmp),
        ),
    ]
    if args.lag is not None:
        files.append((args.out / "true_lagged.csv", lambda tmp: lagged.to_csv(tmp)))
    write_files(files)
    for p in stale:  # only with --force (refused above otherwise)
        p.unlink()
    print(
        f"wrote {len(series)} participant files, true_graph.csv"
        + (", true_weights.csv and true_lagged.csv " if args.lag else " and true_weights.csv ")
        + f"to {args.out} ({int(np.count_nonzero(B_true))} true edges"
        + (f"; network {args.network}" if args.network else "")
        + ("; standardised" if args.standardise else "")
        + ")"
        + (f"; removed {len(stale)} participant file(s) of an earlier simulation" if stale else "")
    )
    set_json(
        args,
        {
            "out": str(args.out),
            "files": [str(p) for p, _ in files],
            "d": len(cols),
            "n": args.n,
            "network": args.network,
            "standardise": args.standardise,
            "participants": len(series),
            "true_edges": int(np.count_nonzero(B_true)),
            "lag": args.lag,
            "removed": [str(p) for p in stale],
            "seed": args.seed,
        },
    )
    return 0
