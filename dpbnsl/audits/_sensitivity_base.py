"""What every sensitivity check shares: its result, the neighbour generator, the comparison loop
(see :mod:`dpbnsl.audits.sensitivity`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from .._validation import ArrayLike, as_float_matrix, as_generator, check_int

__all__ = ["SensitivityCheck", "BROKEN_CHECKS", "RTOL", "Spec", "run_check", "check_inputs"]

#: Relative slack for floating-point error when comparing a movement with its declared bound, and
#: a released difference with the pre-noise difference.
RTOL = 1e-9
KINDS = ("random", "far", "boundary")

#: Broken variants (negative controls) and the checks each applies to. ``"no-clipping"`` and
#: ``"raw-smoothness"`` are the games' variants (:data:`~dpbnsl.audits.games.BROKEN`): clipping
#: skipped with the noise still calibrated to the declared bound; DP-PGCD's m_a taken from each
#: dataset's raw data. ``"data-dependent-noise"`` scales the covariance noise by the dataset's own
#: mean clipped squared row norm instead of R² (a local-sensitivity bug: same number of draws,
#: different noise and events), so only the control-flow part of the check can catch it.
BROKEN_CHECKS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "no-clipping": ("pgcd-gradient", "pgcd-score", "smoothness", "covariance", "mean"),
        "raw-smoothness": ("pgcd-gradient", "pgcd-score"),
        "data-dependent-noise": ("covariance",),
    }
)


@dataclass(frozen=True)
class SensitivityCheck:
    """Result of a sensitivity check (:func:`~dpbnsl.audits.sensitivity.check_sensitivity`).

    Attributes
    ----------
    computation : str
        A key of :data:`~dpbnsl.audits.sensitivity.CHECKS`.
    declared, observed_max : float
        The declared sensitivity of the component that came closest to its bound, and that
        component's largest movement (ℓ2 checks: the whole vector; coordinate checks: one
        coordinate, each with its own declared bound).
    ratio : float
        ``observed_max / declared``: the worst over all pairs and components.
    pairs : int
        Neighbouring pairs examined.
    passed : bool
        ``ratio ≤ 1 + RTOL`` and ``same_control_flow``.
    same_control_flow : bool
        For every pair, the noisy runs on D and D′ from generators in the same state drew equally
        many numbers (the generators end in the same state), recorded equal privacy events, and,
        where the release is the statistic plus noise, released values whose difference is the
        pre-noise difference (the noise drawn was identical).
    broken : str or None
        The negative-control variant run (a key of :data:`BROKEN_CHECKS`), or None.
    details : mapping
        ``"norm"`` ("l2" or "coordinate"), ``"ratio_by_kind"`` (worst ratio per neighbour kind),
        ``"flow_failures"`` (pairs whose noisy runs differed outside the noise), read-only.
    """

    computation: str
    declared: float
    observed_max: float
    ratio: float
    pairs: int
    passed: bool
    same_control_flow: bool
    broken: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))


@dataclass(frozen=True)
class Spec:
    """A private computation as a check sees it."""

    exact: Callable  # (X, ctx) -> pre-noise vector (the package's path with the noise off)
    noisy: Callable  # (X, ctx, generator) -> (released vector or None, privacy events)
    declared: np.ndarray  # one bound per component, or a single ℓ2 bound
    boundary: Callable  # generator -> (row of D, row of D′), attaining the bound
    l2: bool
    context: Callable = lambda rng, kind: None  # per-pair public inputs (DP-PGCD: B, W, β)
    floor: float = -math.inf  # released values at or below it were post-processed: not compared


def run_check(
    name: str,
    spec: Spec,
    X: np.ndarray,
    X_prime: np.ndarray | None,
    pairs: int,
    broken: str | None,
    rng: np.random.Generator,
) -> SensitivityCheck:
    """Compare pre-noise movements with ``spec.declared`` and noisy runs in the same random
    state, over the pairs of :func:`neighbours`."""
    worst: tuple[float, float, float] | None = None
    by_kind: dict[str, float] = {}
    failures, count = 0, 0
    for kind, X0, X1 in neighbours(X, X_prime, pairs, spec.boundary, rng):
        ctx = spec.context(rng, kind)
        u0, u1 = spec.exact(X0, ctx), spec.exact(X1, ctx)
        moved = np.atleast_1d(np.linalg.norm(u1 - u0)) if spec.l2 else np.abs(u1 - u0)
        j = int(np.argmax(moved / spec.declared))
        r = float(moved[j] / spec.declared[j])
        by_kind[kind] = max(by_kind.get(kind, 0.0), r)
        if worst is None or r > worst[0]:
            worst = (r, float(moved[j]), float(spec.declared[j]))
        seed = int(rng.integers(2**63))
        g0, g1 = np.random.default_rng(seed), np.random.default_rng(seed)
        (r0, e0), (r1, e1) = spec.noisy(X0, ctx, g0), spec.noisy(X1, ctx, g1)
        same = g0.bit_generator.state == g1.bit_generator.state and e0 == e1
        if same and r0 is not None:
            keep = (r0 > spec.floor) & (r1 > spec.floor)
            tol = RTOL * (1.0 + np.maximum(np.abs(r0), np.abs(r1)))
            same = bool(np.all((np.abs((r1 - r0) - (u1 - u0)) <= tol)[keep]))
        failures += not same
        count += 1
    assert worst is not None  # neighbours() yields at least one pair (pairs >= 1 is checked)
    ratio, observed, declared = worst
    flow = failures == 0
    return SensitivityCheck(
        name,
        declared,
        observed,
        ratio,
        count,
        ratio <= 1 + RTOL and flow,
        flow,
        broken,
        {"norm": "l2" if spec.l2 else "coordinate", "ratio_by_kind": by_kind, "flow_failures": failures},
    )


def neighbours(
    X: np.ndarray,
    X_prime: np.ndarray | None,
    pairs: int,
    boundary: Callable[[np.random.Generator], tuple[np.ndarray, np.ndarray]],
    rng: np.random.Generator,
) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """(kind, D, D′): the given pair, or ``pairs`` pairs replacing a random row, kinds in turn:
    a Gaussian row at the data's scale, one 10^U(1, 3) times larger, a crafted boundary pair."""
    if X_prime is not None:
        yield "given", X, X_prime
        return
    n, d = X.shape
    scale = np.maximum(X.std(axis=0), 1e-3)
    for j in range(pairs):
        kind, i = KINDS[j % 3], int(rng.integers(n))
        X0, X1 = X.copy(), X.copy()
        if kind == "boundary":
            X0[i], X1[i] = boundary(rng)
        else:
            f = 1.0 if kind == "random" else 10.0 ** rng.uniform(1.0, 3.0)
            X1[i] = f * scale * rng.standard_normal(d)
        yield kind, X0, X1


def check_inputs(
    X: ArrayLike | None,
    X_prime: ArrayLike | None,
    pairs: int,
    broken: str | None,
    name: str,
    rng: np.random.Generator | int | None,
    min_d: int = 1,
) -> tuple[np.ndarray, np.ndarray | None, int, np.random.Generator]:
    """Validated (X, X_prime, pairs, generator); X defaults to 40 × 5 N(0, 0.5²) rows."""
    rng = as_generator(rng)
    pairs = check_int(pairs, "pairs", low=1)
    allowed = [b for b, names in BROKEN_CHECKS.items() if name in names]
    if broken is not None and (not isinstance(broken, str) or broken not in allowed):
        raise ValueError(
            f"`broken` must be None or one of {', '.join(map(repr, allowed))} for "
            f"the {name!r} check; got {broken!r}"
        )
    X = rng.normal(scale=0.5, size=(40, 5)) if X is None else as_float_matrix(X, "X")
    if X.shape[0] < 2 or X.shape[1] < min_d:
        raise ValueError(f"`X` must have at least 2 rows and {min_d} column(s); got shape {X.shape}")
    if X_prime is not None:
        X_prime = as_float_matrix(X_prime, "X_prime")
        if X_prime.shape != X.shape:
            raise ValueError(f"`X_prime` must have the shape of `X` {X.shape}; got {X_prime.shape}")
        rows = np.flatnonzero(np.any(X != X_prime, axis=1))
        if rows.size > 1:
            raise ValueError(
                f"`X_prime` must be a replace-one neighbour of `X` (differ in at "
                f"most one row); rows {rows.tolist()} differ"
            )
    return X, X_prime, pairs, rng
