"""Privacy accounting: zCDP/RDP formulas, the ledger of privacy events, and noise calibration.

Deterministic: nothing here draws random numbers.
"""

from .calibrate import (
    BudgetSplit,
    LaplaceScales,
    NoiseScales,
    calibrate_dp_pgcd,
    calibrate_dp_pgcd_laplace,
    calibrate_gaussian,
    calibrate_smoothness,
    dp_pgcd_entries,
    split_budget,
)
from .ledger import (
    ORDERS,
    BoundedRangeDpEvent,
    BudgetExceededError,
    LedgerEntry,
    PrivacyLedger,
    UnsupportedEventError,
    compose_epsilon,
    event_rdp,
    event_rho,
)
from .zcdp import (
    bounded_range_rdp,
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
    "BoundedRangeDpEvent", "BudgetExceededError", "BudgetSplit", "LaplaceScales", "LedgerEntry",
    "NoiseScales", "ORDERS", "PrivacyLedger", "UnsupportedEventError", "bounded_range_rdp",
    "bounded_range_rho", "calibrate_dp_pgcd", "calibrate_dp_pgcd_laplace", "calibrate_gaussian",
    "calibrate_smoothness", "cks_epsilon_from_rdp", "compose_epsilon", "dp_pgcd_entries",
    "epsilon_to_rho", "event_rdp", "event_rho", "gaussian_rho", "gumbel_max_epsilon0",
    "gumbel_max_rho", "pure_dp_rho", "rho_to_epsilon", "split_budget",
]
