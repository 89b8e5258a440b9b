"""Checking privacy claims and measuring their price.

- :mod:`~dpbnsl.audits.bounds`: empirical ε lower bounds (Clopper–Pearson, one-run) and a
  Gaussian-DP estimate; :mod:`~dpbnsl.audits.gdp`: a μ-GDP lower bound from the trade-off of
  many tests; :mod:`~dpbnsl.audits.bounded_range`: a lower bound on a selection's bounded-range
  parameter ε₀;
- :mod:`~dpbnsl.audits.games`: distinguishing games on worst-case neighbours, with broken variants
  (negative controls);
- :mod:`~dpbnsl.audits.verdict`: game → bound → verdict in one call;
- :mod:`~dpbnsl.audits.one_run`: a one-run canary audit of a whole DP-Fed-Sparse-BNSL run;
  :mod:`~dpbnsl.audits.gdp_one_run`: the one-run test of a claimed Gaussian curve (f-DP);
  :mod:`~dpbnsl.audits.isolated_canaries`: one-run audits of the covariance releases with
  isolated canaries, read from the server's view; :mod:`~dpbnsl.audits.canary_participants`:
  the same releases with canary participants whose records have random directions, scored by
  cosine; :mod:`~dpbnsl.audits.gaussian_fit`: Andrew et al.'s ε estimate from Gaussians fitted
  to canary scores;
- :mod:`~dpbnsl.audits.parallel`: games in independently seeded blocks of trials on any executor;
- :mod:`~dpbnsl.audits.sensitivity`: grey-box checks that every pre-noise quantity moves by at most
  its declared sensitivity on neighbouring datasets, with identical control flow;
- :mod:`~dpbnsl.audits.samplers`: the selection and Gaussian samplers against their exact laws;
- :mod:`~dpbnsl.audits.tradeoff` and :mod:`~dpbnsl.audits.plots`: resumable privacy–utility sweeps
  and their plots (matplotlib, the ``plot`` extra, imported only when drawing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

#: where each exported name lives; imported on first use (PEP 562), so that importing one
#: submodule (e.g. for a name table) does not load the others
_EXPORTS = {
    "BoundedRangeLowerBound": "bounded_range",
    "bounded_range_lower_bound": "bounded_range",
    "CanaryParticipantAudit": "canary_participants",
    "canary_participant_audit": "canary_participants",
    "EpsilonEstimate": "bounds",
    "EpsilonLowerBound": "bounds",
    "OneRunBound": "bounds",
    "clopper_pearson_bound": "bounds",
    "gdp_epsilon": "bounds",
    "gdp_estimate": "bounds",
    "one_run_bound": "bounds",
    "BROKEN": "games",
    "GAMES": "games",
    "GameResult": "games",
    "run_game": "games",
    "GaussianFitEstimate": "gaussian_fit",
    "gaussian_fit_epsilon": "gaussian_fit",
    "GDPLowerBound": "gdp",
    "gdp_lower_bound": "gdp",
    "OneRunAudit": "one_run",
    "OneRunGDPBound": "gdp_one_run",
    "one_run_gdp_bound": "gdp_one_run",
    "CovarianceOneRunAudit": "isolated_canaries",
    "covariance_one_run_audit": "isolated_canaries",
    "one_run_audit": "one_run",
    "play": "parallel",
    "check_gaussian_sampler": "samplers",
    "check_selection_sampler": "samplers",
    "CHECKS": "sensitivity",
    "SensitivityCheck": "sensitivity",
    "check_sensitivity": "sensitivity",
    "SweepResult": "tradeoff",
    "summarize": "tradeoff",
    "sweep": "tradeoff",
    "Audit": "verdict",
    "audit": "verdict",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, for type checkers and editors
    from .bounded_range import BoundedRangeLowerBound, bounded_range_lower_bound
    from .bounds import (
        EpsilonEstimate,
        EpsilonLowerBound,
        OneRunBound,
        clopper_pearson_bound,
        gdp_epsilon,
        gdp_estimate,
        one_run_bound,
    )
    from .canary_participants import CanaryParticipantAudit, canary_participant_audit
    from .games import BROKEN, GAMES, GameResult, run_game
    from .gaussian_fit import GaussianFitEstimate, gaussian_fit_epsilon
    from .gdp import GDPLowerBound, gdp_lower_bound
    from .gdp_one_run import OneRunGDPBound, one_run_gdp_bound
    from .isolated_canaries import CovarianceOneRunAudit, covariance_one_run_audit
    from .one_run import OneRunAudit, one_run_audit
    from .parallel import play
    from .samplers import check_gaussian_sampler, check_selection_sampler
    from .sensitivity import CHECKS, SensitivityCheck, check_sensitivity
    from .tradeoff import SweepResult, summarize, sweep
    from .verdict import Audit, audit

__all__ = [
    "Audit",
    "audit",
    "EpsilonEstimate",
    "EpsilonLowerBound",
    "OneRunBound",
    "clopper_pearson_bound",
    "gdp_epsilon",
    "gdp_estimate",
    "one_run_bound",
    "GDPLowerBound",
    "gdp_lower_bound",
    "BoundedRangeLowerBound",
    "bounded_range_lower_bound",
    "BROKEN",
    "GAMES",
    "GameResult",
    "run_game",
    "play",
    "OneRunAudit",
    "one_run_audit",
    "OneRunGDPBound",
    "one_run_gdp_bound",
    "CovarianceOneRunAudit",
    "covariance_one_run_audit",
    "CanaryParticipantAudit",
    "canary_participant_audit",
    "GaussianFitEstimate",
    "gaussian_fit_epsilon",
    "SweepResult",
    "summarize",
    "sweep",
    "check_gaussian_sampler",
    "check_selection_sampler",
    "CHECKS",
    "SensitivityCheck",
    "check_sensitivity",
]
