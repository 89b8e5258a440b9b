"""`dpbnsl learn` option groups of the learners beyond the linear score-based family.

Which learner reads which option, and how the options become keyword arguments, is in the learner
registry (:mod:`dpbnsl.learners.registry`); this module only declares the options.
"""

from __future__ import annotations

import argparse

from .common import MAX_COUNT, count

__all__ = ["add_extra_options"]


def add_extra_options(learn: argparse.ArgumentParser) -> None:
    """The option groups of the constraint-based, nonlinear and time-series learners."""
    ci = learn.add_argument_group("constraint-based methods (pc, fed-pc, …)")
    ci.add_argument(
        "--alpha", type=float, default=0.01, help="significance level of the conditional-independence tests"
    )
    ci.add_argument(
        "--ci-test",
        default="fisher-z",
        choices=("fisher-z", "g2", "auto"),
        help="Fisher-z (continuous) or G² (discrete, integer-coded columns)",
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
