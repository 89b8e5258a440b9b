"""`dpbnsl learn` option groups of the learners beyond the linear score-based family.

Which learner reads which option, and how the options become keyword arguments, is in the learner
registry (:mod:`dpbnsl.learners.registry`); this module only declares the options.
"""

from __future__ import annotations

import argparse
import math

from .common import MAX_COUNT, count

__all__ = ["add_extra_options"]


def _pair(text: str) -> tuple[float, float]:
    """LOW,HIGH: two finite numbers with LOW < HIGH."""
    parts = text.split(",")
    try:
        low, high = (float(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LOW,HIGH (two numbers); got {text!r}") from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise argparse.ArgumentTypeError(f"expected finite LOW < HIGH; got {text!r}")
    return low, high


def add_extra_options(learn: argparse.ArgumentParser) -> None:
    """The option groups of the constraint-based, nonlinear and time-series learners."""
    ci = learn.add_argument_group("constraint-based methods (pc, fed-pc, …)")
    ci.add_argument(
        "--alpha",
        type=float,
        default=0.01,
        help="significance level of the conditional-independence tests (priv-pc and dp-fed-pc: "
        "0.2 unless given)",
    )
    ci.add_argument(
        "--ci-test",
        default="fisher-z",
        choices=("fisher-z", "g2", "auto"),
        help="Fisher-z (continuous) or G² (discrete, integer-coded columns)",
    )
    priv = learn.add_argument_group("Priv-PC (priv-pc, dp-fed-pc): PC with sparse-vector screened tests")
    priv.add_argument(
        "--variables",
        choices=("discrete", "continuous"),
        default=None,
        help="discrete: integer category codes 0, 1, … per column (default); continuous: "
        "measurements, with --bounds",
    )
    priv.add_argument(
        "--bounds",
        type=_pair,
        default=None,
        metavar="LOW,HIGH",
        help="continuous variables: a public range of every column in the data's units (from the "
        "measurement's known range, not from the data); --bins equal-width bins of it stratify "
        "the conditioning variables",
    )
    priv.add_argument("--bins", type=count(2, 1 << 16), default=None, help="bins of --bounds (default 4)")
    priv.add_argument(
        "--max-examinations",
        type=count(1, 1_000_000),
        default=None,
        help="rounds paid for in advance (default: 3 per pair of variables)",
    )
    dbn = learn.add_argument_group(
        "time series (dynotears, fed-dbn, …): each --data CSV is one participant's series, rows "
        "in time order; --truth is the intra-slice graph; --out also writes <out>.lagged.csv"
    )
    dbn.add_argument("--lag", type=count(1, 1000), default=1, help="autoregressive order p")
    dbn.add_argument(
        "--lambda-w", type=float, default=None, help="ℓ1 weight on the intra-slice W (default: the learner's)"
    )
    dbn.add_argument(
        "--lambda-a", type=float, default=None, help="ℓ1 weight on the lagged A (default: the learner's)"
    )
    mlp = learn.add_argument_group("NOTEARS-MLP methods (notears-mlp, fed-bnsl-mlp, …)")
    mlp.add_argument(
        "--ftol",
        type=float,
        default=None,
        help="L-BFGS-B tolerance of every local and server solve (default: scipy's "
        "2.2e-9; 1e-6 is about 5x faster and is what the experiments use)",
    )
    fcd = learn.add_argument_group("DS-FCD and AS-FCD (nonlinear; full schedule: minutes at d = 10)")
    fcd.add_argument(
        "--it-in",
        type=count(1, MAX_COUNT),
        default=None,
        help="Adam steps per augmented-Lagrangian sub-problem (default: Table 6)",
    )
    fcd.add_argument(
        "--it-fl",
        type=count(1, MAX_COUNT),
        default=None,
        help="local steps between two averagings of U (default: Table 6)",
    )
    fcd.add_argument(
        "--participants-per-round",
        type=count(1, 100_000),
        default=None,
        help="participants drawn at random per averaging (default: all)",
    )
