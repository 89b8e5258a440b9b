"""Every private release of the package, with its sensitivity next to the computation.

- :mod:`~dpbnsl.mechanisms.releases`: the Gaussian mechanism, the exponential mechanism
  (Gumbel-max, and the column-wise sampler of DP-PGCD), clipping of entries and rows, the
  neighbouring relation;
- :mod:`~dpbnsl.mechanisms.covariance`: the clipped-covariance release (DP-Fed-BNSL, the warm
  start of DP-Fed-Sparse-BNSL);
- :mod:`~dpbnsl.mechanisms.gradients`: DP-PGCD's per-sample gradient clipping and the gradient
  and score sensitivities; :mod:`~dpbnsl.mechanisms.clip_kernel` its clip-and-sum kernel (numpy,
  or compiled with numba: the same bits);
- :mod:`~dpbnsl.mechanisms.moments`: private means and smoothness constants (centring, the step
  sizes and clip thresholds of DP-PGCD).

Each release returns its value and its dp-accounting event, for the participant's ledger.
"""

from .covariance import covariance_sensitivity, release_covariance
from .gradients import (
    CLIP_SCHEMES,
    ClippedProductSums,
    clip_bounds,
    clip_score_sensitivity,
    clipped_products,
    scores_sensitivity,
)
from .moments import as_bounds, private_mean, private_smoothness, public_smoothness
from .releases import (
    CLIP_RANGE,
    BoundedRangeDpEvent,
    ColumnwiseExponentialMechanism,
    ColumnwiseExponentialStream,
    GaussianStream,
    Neighbouring,
    Release,
    check_neighbouring,
    clip,
    clip_rows,
    exponential_mechanism_sample,
    gaussian_mechanism,
    gumbel_max,
    row_norms,
)

__all__ = [
    "Neighbouring",
    "check_neighbouring",
    "BoundedRangeDpEvent",
    "Release",
    "clip",
    "clip_rows",
    "row_norms",
    "CLIP_RANGE",
    "gaussian_mechanism",
    "gumbel_max",
    "exponential_mechanism_sample",
    "ColumnwiseExponentialMechanism",
    "ColumnwiseExponentialStream",
    "GaussianStream",
    "covariance_sensitivity",
    "release_covariance",
    "CLIP_SCHEMES",
    "clip_bounds",
    "clip_score_sensitivity",
    "clipped_products",
    "ClippedProductSums",
    "scores_sensitivity",
    "as_bounds",
    "private_mean",
    "private_smoothness",
    "public_smoothness",
]
