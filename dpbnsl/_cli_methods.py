"""`dpbnsl learn` methods beyond the linear score-based family: one registry entry per method.

Each :class:`Method` names the ``learn`` options it reads (any other non-default option is refused
by the CLI) and how to run it on the participants' DataFrames. The linear methods stay in
:mod:`dpbnsl.cli`; this module adds the constraint-based, nonlinear and time-series learners and
their option groups.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from ._cli_common import CLIError, count
from .learners._admm import MAX_COUNT
from .learners.dynotears import dynotears
from .learners.dynotears_baselines import dynotears_all, dynotears_average, dynotears_best
from .learners.fed_bnsl_mlp import fed_bnsl_mlp
from .learners.fed_dbn import fed_dbn
from .learners.notears_mlp import notears_mlp, notears_mlp_best, notears_mlp_voting
from .learners import as_fcd, ds_fcd, fed_pc, fed_pc_simple_i, fed_pc_simple_ii, pc, pc_all, pc_best

__all__ = ["Method", "EXTRA_METHODS", "add_extra_options"]


@dataclass(frozen=True)
class Method:
    """A learner as the CLI sees it: the options it reads and how to run it."""

    family: str
    options: tuple[str, ...]
    run: Callable[[list[pd.DataFrame], argparse.Namespace, object], object]
    oracle: bool = False
    pooled: bool = False


def _pooled(parts: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(parts, ignore_index=True)


_CI = ("alpha", "ci_test")


def _ci(args) -> dict:
    return dict(alpha=args.alpha, test=args.ci_test)


_FCD = ("lambda1", "seed", "it_in", "it_fl", "participants_per_round")


def _fcd(args) -> dict:  # None = the paper's Table 6/7 value for this d
    return dict(lambda1=args.lambda1, it_in=args.it_in, it_fl=args.it_fl,
                participants_per_round=args.participants_per_round, rng=args.seed)


_MLP = ("lambda1", "threshold", "seed", "ftol")


def _mlp(args, *, rounds: bool = False) -> dict:  # --lambda1 unset = the learner's default
    out = dict(threshold=args.threshold, rng=args.seed)
    if args.lambda1 is not None:
        out["lambda1"] = args.lambda1
    if args.ftol is not None:
        out["solver_options"] = {"ftol": args.ftol}
    if rounds:
        out["max_rounds"] = args.max_rounds
    return out


_DBN = ("lag", "lambda_w", "lambda_a", "threshold")


def _dbn(args, *, rounds: bool = False) -> dict:  # unset ℓ1 weights = the learner's default
    out = dict(lag=args.lag, threshold_w=args.threshold, threshold_a=args.threshold)
    out.update({k: getattr(args, k) for k in ("lambda_w", "lambda_a")
                if getattr(args, k) is not None})
    if rounds:
        out["max_rounds"] = args.max_rounds
    return out


EXTRA_METHODS: dict[str, Method] = {
    "pc": Method("constraint", _CI, lambda parts, a, t: pc(_pooled(parts), **_ci(a)),
                 pooled=True),
    "fed-pc": Method("constraint", _CI, lambda parts, a, t: fed_pc(parts, **_ci(a))),
    "pc-all": Method("constraint", _CI, lambda parts, a, t: pc_all(parts, **_ci(a))),
    "pc-best": Method("constraint", _CI,
                      lambda parts, a, t: pc_best(parts, B_true=t, **_ci(a)), oracle=True),
    "fed-pc-simple-i": Method("constraint", _CI,
                              lambda parts, a, t: fed_pc_simple_i(parts, **_ci(a))),
    "fed-pc-simple-ii": Method("constraint", _CI,
                               lambda parts, a, t: fed_pc_simple_ii(parts, **_ci(a))),
    "notears-mlp": Method("nonlinear", _MLP,
                          lambda parts, a, t: notears_mlp(_pooled(parts), **_mlp(a)), pooled=True),
    "fed-bnsl-mlp": Method("nonlinear", _MLP + ("max_rounds",),
                           lambda parts, a, t: fed_bnsl_mlp(parts, **_mlp(a, rounds=True))),
    "notears-mlp-voting": Method("nonlinear", _MLP,
                                 lambda parts, a, t: notears_mlp_voting(parts, **_mlp(a))),
    "notears-mlp-best": Method("nonlinear", _MLP, lambda parts, a, t: notears_mlp_best(
        parts, B_true=t, **_mlp(a)), oracle=True),
    "dynotears": Method("temporal", _DBN,
                        lambda parts, a, t: dynotears(list(parts), **_dbn(a)), pooled=True),
    "fed-dbn": Method("temporal", _DBN + ("max_rounds",),
                      lambda parts, a, t: fed_dbn(parts, **_dbn(a, rounds=True))),
    "dynotears-average": Method("temporal", _DBN,
                                lambda parts, a, t: dynotears_average(parts, **_dbn(a))),
    "dynotears-best": Method("temporal", _DBN, lambda parts, a, t: dynotears_best(
        parts, B_true=t, **_dbn(a)), oracle=True),
    "dynotears-all": Method("temporal", _DBN,
                            lambda parts, a, t: dynotears_all(parts, **_dbn(a)), pooled=True),
    "ds-fcd": Method("nonlinear", _FCD, lambda parts, a, t: ds_fcd(parts, **_fcd(a))),
    "as-fcd": Method("nonlinear", _FCD, lambda parts, a, t: as_fcd(parts, **_fcd(a))),
}


def add_extra_options(learn: argparse.ArgumentParser) -> None:
    """The option groups of the methods in :data:`EXTRA_METHODS`."""
    ci = learn.add_argument_group("constraint-based methods (pc, fed-pc, …)")
    ci.add_argument("--alpha", type=float, default=0.01,
                    help="significance level of the conditional-independence tests")
    ci.add_argument("--ci-test", default="fisher-z", choices=("fisher-z", "g2", "auto"),
                    help="Fisher-z (continuous) or G² (discrete, integer-coded columns)")
    dbn = learn.add_argument_group(
        "time series (dynotears, fed-dbn, …): each --data CSV is one participant's series, rows "
        "in time order; --truth is the intra-slice graph; --out also writes <out>.lagged.csv")
    dbn.add_argument("--lag", type=count(1, 1000), default=1, help="autoregressive order p")
    dbn.add_argument("--lambda-w", type=float, default=None,
                     help="ℓ1 weight on the intra-slice W (default: the learner's)")
    dbn.add_argument("--lambda-a", type=float, default=None,
                     help="ℓ1 weight on the lagged A (default: the learner's)")
    mlp = learn.add_argument_group("NOTEARS-MLP methods (notears-mlp, fed-bnsl-mlp, …)")
    mlp.add_argument("--ftol", type=float, default=None,
                     help="L-BFGS-B tolerance of every local and server solve (default: scipy's "
                          "2.2e-9; 1e-6 is about 5x faster and is what the experiments use)")
    fcd = learn.add_argument_group("DS-FCD and AS-FCD (nonlinear; full schedule: minutes at d = 10)")
    fcd.add_argument("--it-in", type=count(1, MAX_COUNT), default=None,
                     help="Adam steps per augmented-Lagrangian sub-problem (default: Table 6)")
    fcd.add_argument("--it-fl", type=count(1, MAX_COUNT), default=None,
                     help="local steps between two averagings of U (default: Table 6)")
    fcd.add_argument("--participants-per-round", type=count(1, 100_000), default=None,
                     help="participants drawn at random per averaging (default: all)")


def run_extra(name: str, parts: list[pd.DataFrame], args, truth) -> object:
    method = EXTRA_METHODS[name]
    if method.oracle and truth is None:
        raise CLIError(f"--method {name} is an oracle: it needs --truth")
    if method.pooled:
        names = [tuple(f.columns) for f in parts]
        if len(set(names)) > 1:
            raise CLIError(f"--data files must have the same columns to be pooled for {name}")
    return method.run(parts, args, truth)
