"""Privacy accounting: zCDP/RDP formulas, the ledger of privacy events, and noise calibration.

Modules: ``zcdp`` (closed forms and conversions), ``bounded_range`` (the exact RDP curve of
Gumbel-max), ``gaussian`` (the exact Gaussian privacy profile and composition),
``rdp_accountant`` (dp-accounting's RDP accountant, with bounded-range events), ``compose``
(events → ε(δ) under the zcdp / rdp / pld accountants), ``ledger`` (the stateful record and budget
filter), ``events_json`` (events to and from JSON), ``calibrate`` (target ε → Gaussian noise,
budget splits), ``calibrate_pgcd`` (DP-PGCD's T·K-step calibration) and ``summary`` (what a
private run guarantees, as one object).

Deterministic: nothing here draws random numbers.
"""

from ..mechanisms import BoundedRangeDpEvent
from .bounded_range import bounded_range_rdp
from .calibrate import BudgetSplit, calibrate_gaussian, calibrate_smoothness, split_budget
from .calibrate_pgcd import (
    LaplaceScales,
    NoiseScales,
    calibrate_dp_pgcd,
    calibrate_dp_pgcd_laplace,
    dp_pgcd_entries,
)
from .compose import (
    ORDERS,
    LedgerEntry,
    UnsupportedEventError,
    compose_epsilon,
    event_rdp,
    event_rho,
)
from .gaussian import composed_mu, gaussian_delta, gaussian_epsilon
from .ledger import BudgetExceededError, PrivacyLedger
from .rdp_accountant import BoundedRangeRdpAccountant
from .summary import PrivacySummary, format_up, summarize_privacy
from .zcdp import (
    bounded_range_rho,
    cks_epsilon_from_rdp,
    epsilon_to_rho,
    gaussian_rho,
    gumbel_max_epsilon0,
    gumbel_max_rho,
    pure_dp_rho,
    rho_to_epsilon,
)

__all__ = [
    "BoundedRangeDpEvent",
    "BoundedRangeRdpAccountant",
    "BudgetExceededError",
    "BudgetSplit",
    "LaplaceScales",
    "LedgerEntry",
    "NoiseScales",
    "ORDERS",
    "PrivacyLedger",
    "PrivacySummary",
    "UnsupportedEventError",
    "bounded_range_rdp",
    "bounded_range_rho",
    "calibrate_dp_pgcd",
    "calibrate_dp_pgcd_laplace",
    "calibrate_gaussian",
    "calibrate_smoothness",
    "cks_epsilon_from_rdp",
    "compose_epsilon",
    "composed_mu",
    "dp_pgcd_entries",
    "epsilon_to_rho",
    "event_rdp",
    "event_rho",
    "format_up",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_rho",
    "gumbel_max_epsilon0",
    "gumbel_max_rho",
    "pure_dp_rho",
    "rho_to_epsilon",
    "split_budget",
    "summarize_privacy",
]
