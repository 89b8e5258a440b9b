"""Checking privacy claims and measuring their price.

- :mod:`~dpbnsl.audits.bounds`: empirical ε lower bounds (Clopper–Pearson, one-run) and a
  Gaussian-DP estimate;
- :mod:`~dpbnsl.audits.games`: distinguishing games on worst-case neighbours, with broken variants
  (negative controls);
- :mod:`~dpbnsl.audits.audit`: game → bound → verdict in one call;
- :mod:`~dpbnsl.audits.tradeoff` and :mod:`~dpbnsl.audits.plots`: resumable privacy–utility sweeps
  and their plots (matplotlib, the ``plot`` extra, imported only when drawing).
"""

from .audit import Audit, audit
from .bounds import (EpsilonEstimate, EpsilonLowerBound, OneRunBound, clopper_pearson_bound,
                     gdp_epsilon, gdp_estimate, one_run_bound)
from .games import BROKEN, GAMES, GameResult, run_game
from .tradeoff import SweepResult, summarize, sweep

__all__ = ["Audit", "audit", "EpsilonEstimate", "EpsilonLowerBound", "OneRunBound",
           "clopper_pearson_bound", "gdp_epsilon", "gdp_estimate", "one_run_bound", "BROKEN",
           "GAMES", "GameResult", "run_game", "SweepResult", "summarize", "sweep"]
