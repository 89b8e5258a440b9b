"""dp-accounting's RDP accountant, taught the exact curve of bounded-range selections.

dp-accounting's ``RdpAccountant`` refuses :class:`~dpbnsl.mechanisms.BoundedRangeDpEvent`, so a
DP-PGCD run (Gumbel-max selections + Gaussian gradients) cannot be composed there with a user's own
events. :class:`BoundedRangeRdpAccountant` is that accountant with one more event type: it keeps
dp-accounting's API (``compose``, ``supports``, ``get_epsilon``, ``get_delta``, ``ledger``) and
its conversion, and composes on this package's grid of orders
(:data:`~dpbnsl.accounting.ORDERS`), so it reproduces a :class:`~dpbnsl.accounting.PrivacyLedger`'s
``"rdp"`` figure exactly. The ledger's ``"rdp"`` accountant *is* this class.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from dp_accounting import GaussianDpEvent, NeighboringRelation, ZCDpEvent
from dp_accounting.dp_event import (
    DpEvent,
    LaplaceDpEvent,
    PoissonSampledDpEvent,
    RandomizedResponseDpEvent,
    SampledWithoutReplacementDpEvent,
)
from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS, RdpAccountant

from .._validation import check_real
from ..mechanisms import BoundedRangeDpEvent
from ..mechanisms.distributed import SkellamDpEvent
from ..mechanisms.sparse_vector import pure_dp_epsilon
from .bounded_range import bounded_range_rdp
from .skellam import skellam_rdp

__all__ = ["ORDERS", "BoundedRangeRdpAccountant", "closed_form_rdp", "randomized_response_rdp"]

#: Rényi orders of the "rdp" accountant: dp-accounting's defaults plus a geometric tail, so that the
#: small per-step losses of long runs (optimal order in the thousands) are covered.
ORDERS = np.unique(np.concatenate([np.asarray(DEFAULT_RDP_ORDERS, float), np.geomspace(1.05, 1e6, 240)]))

#: the events whose RDP curve this package computes itself (the rest is dp-accounting's)
CLOSED_FORM = (GaussianDpEvent, ZCDpEvent, BoundedRangeDpEvent, SkellamDpEvent, RandomizedResponseDpEvent)
#: dp-accounting's curves of sampled events are evaluated at orders up to this (see below)
SAMPLED_MAX_ORDER = 4096.0
#: a Laplace release of ε = 1/b beyond this is accounted as pure ε-DP at every order
LAPLACE_MAX_EPSILON = 500.0
_SAMPLED = (PoissonSampledDpEvent, SampledWithoutReplacementDpEvent)


def closed_form_rdp(event: DpEvent, orders: np.ndarray) -> np.ndarray:
    """The RDP curve at ``orders`` of a Gaussian (α/(2z²)), zCDP (ξ + ρα), ε₀-bounded-range
    (:func:`~dpbnsl.accounting.bounded_range_rdp`) or binary randomized-response
    (:func:`randomized_response_rdp`) event, its parameters validated."""
    if isinstance(event, GaussianDpEvent):
        z = check_real(event.noise_multiplier, "noise_multiplier", low=0.0, allow_inf=True)
        return np.full(orders.shape, math.inf) if z == 0 else orders / 2.0 / z / z  # z*z underflows
    if isinstance(event, ZCDpEvent):
        rho = check_real(event.rho, "rho", low=0.0, allow_inf=True)
        return check_real(event.xi, "xi", low=0.0) + rho * orders
    if isinstance(event, BoundedRangeDpEvent):
        e0 = check_real(event.epsilon0, "epsilon0", low=0.0, allow_inf=True)
        if math.isinf(e0):
            return np.full(orders.shape, math.inf)
        return np.asarray(bounded_range_rdp(orders, e0))
    if isinstance(event, SkellamDpEvent):
        return skellam_rdp(
            orders,
            l2=check_real(event.l2_sensitivity, "l2_sensitivity", low=0.0),
            l1=check_real(event.l1_sensitivity, "l1_sensitivity", low=0.0),
            variance=check_real(event.variance, "variance", low=0.0),
        )
    if isinstance(event, RandomizedResponseDpEvent) and event.num_buckets == 2:
        return randomized_response_rdp(orders, pure_dp_epsilon(event))
    raise TypeError(f"no closed-form RDP curve here for {type(event).__name__}")


def _log_cosh(x: np.ndarray) -> np.ndarray:
    """log cosh x without cancellation: log1p(2 sinh²(x/2)) near 0, |x| + log1p(e^{−2|x|}) − log 2
    beyond."""
    x = np.abs(np.asarray(x, float))
    small = x < 1.0
    with np.errstate(over="ignore"):
        near = np.log1p(2.0 * np.sinh(np.where(small, x, 0.0) / 2.0) ** 2)
    far = x + np.log1p(np.exp(-2.0 * x)) - math.log(2.0)
    return np.where(small, near, far)


def randomized_response_rdp(orders: np.ndarray, epsilon: float) -> np.ndarray:
    """The RDP curve of binary randomized response with P(truth) = e^ε/(1 + e^ε) (the pair that
    dominates every pure ε-DP mechanism): with p = e^ε/(1 + e^ε),
    D_α = log(p^α (1 − p)^{1−α} + (1 − p)^α p^{1−α})/(α − 1)
    = (log cosh((α − ½)ε) − log cosh(ε/2))/(α − 1), at most ε (dp-accounting evaluates the same
    divergence order by order; the crosscheck tests compare the two)."""
    a = np.asarray(orders, float)
    if math.isinf(epsilon):
        return np.full(a.shape, math.inf)
    curve = (_log_cosh((a - 0.5) * epsilon) - _log_cosh(np.full(a.shape, 0.5 * epsilon))) / (a - 1.0)
    return np.minimum(np.maximum(curve, 0.0), epsilon)


class BoundedRangeRdpAccountant(RdpAccountant):
    """dp-accounting's ``RdpAccountant`` that also composes ``BoundedRangeDpEvent``.

    Gaussian, zCDP, bounded-range and binary randomized-response events (alone or inside
    ``ComposedDpEvent`` / ``SelfComposedDpEvent``) use this package's curves; every other event is
    dp-accounting's
    (Laplace, Poisson-subsampled Gaussian under add/remove-one, sampling without replacement under
    replace-one, …). ε(δ) is dp-accounting's conversion on the composed curve.

    dp-accounting evaluates a sampled event's curve in seconds to minutes at fractional or very
    large orders, so here it is evaluated at dp-accounting's default orders and the integers up to
    4096 only, and each order of the grid takes the value at the next evaluated order above it —
    an upper bound, because Rényi divergences never decrease with the order; orders above 4096
    get ∞ for such a composition.

    Parameters
    ----------
    orders : sequence of float, optional
        Rényi orders; default :data:`ORDERS`, the ledger's grid.
    neighboring_relation : dp_accounting.NeighboringRelation
        As in dp-accounting; it matters only to its sampled events. This package's own releases
        state their noise against the sensitivity under the relation of the run, so compose them
        with events stated under the same relation.

    Examples
    --------
    A DP-PGCD ledger composed with a user's own Poisson-subsampled Gaussian:

    >>> import dp_accounting
    >>> from dpbnsl.accounting import PrivacyLedger, BoundedRangeDpEvent
    >>> ledger = PrivacyLedger()
    >>> ledger.record("select", BoundedRangeDpEvent(0.05), count=200)
    >>> ledger.record("gradient", dp_accounting.GaussianDpEvent(40.0), count=200)
    >>> acct = BoundedRangeRdpAccountant()
    >>> _ = acct.compose(ledger.as_dp_event())
    >>> bool(acct.get_epsilon(1e-5) == ledger.epsilon(1e-5))
    True
    >>> sgd = dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.1))
    >>> _ = acct.compose(sgd, count=1000)
    >>> bool(acct.get_epsilon(1e-5) > ledger.epsilon(1e-5))
    True
    """

    def __init__(
        self,
        orders: Sequence[float] | np.ndarray | None = None,
        neighboring_relation: NeighboringRelation = NeighboringRelation.ADD_OR_REMOVE_ONE,
    ) -> None:
        grid: np.ndarray = np.asarray(ORDERS if orders is None else orders, dtype=float)
        if grid.ndim != 1 or grid.size == 0 or not bool(np.all(grid > 1.0)):
            raise ValueError(f"`orders` must be a non-empty sequence of orders > 1; got {orders!r}")
        super().__init__(grid, neighboring_relation)
        self._orders: np.ndarray = grid
        self._rdp: np.ndarray = np.zeros_like(grid)

    def _maybe_compose(self, event: DpEvent, count: int, do_compose: bool) -> Any:
        if isinstance(event, CLOSED_FORM) and getattr(event, "num_buckets", 2) == 2:
            if do_compose:
                self._rdp = self._rdp + count * closed_form_rdp(event, self._orders)
            return None
        if isinstance(event, LaplaceDpEvent) and not event.noise_multiplier * LAPLACE_MAX_EPSILON > 1.0:
            # pure ε-DP bounds every Rényi divergence by ε; dp-accounting's curve divides by b
            # and overflows here (ε = 1/b ≥ 500; b = 0 is no noise)
            if do_compose:
                b = event.noise_multiplier
                self._rdp = self._rdp + count * (math.inf if b == 0 else 1.0 / b)
            return None
        if isinstance(event, _SAMPLED):
            child = RdpAccountant(_coarse_orders(self._orders), self.neighboring_relation)
            error = child._maybe_compose(event, count, do_compose)
            if error is None and do_compose:
                self._rdp = self._rdp + _upper_envelope(child.orders, child.rdp, self._orders)
            return error
        return super()._maybe_compose(event, count, do_compose)


def _coarse_orders(orders: np.ndarray) -> np.ndarray:
    """dp-accounting's default orders and the integers that bound ``orders`` from above, up to
    :data:`SAMPLED_MAX_ORDER`."""
    default = np.asarray(DEFAULT_RDP_ORDERS, float)
    ceil = np.ceil(orders[orders <= SAMPLED_MAX_ORDER])
    grid = np.unique(np.concatenate([default[default <= SAMPLED_MAX_ORDER], ceil]))
    return grid[grid > 1.0]


def _upper_envelope(grid: np.ndarray, values: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """At each of ``orders``, the value at the smallest grid order ≥ it (∞ beyond the grid): an
    upper bound on a non-decreasing curve."""
    i = np.searchsorted(grid, orders, side="left")
    out = np.full(orders.shape, math.inf)
    inside = i < grid.size
    out[inside] = values[i[inside]]
    return out
