"""Pure-DP releases: the Laplace mechanism, the sparse vector technique and subsampling.

These are the releases of Priv-PC's "sieve and examine" (Wang, Pang & Song 2020):

- :func:`laplace_mechanism`: ``value + Lap(Δ/ε)``, pure ε-DP for a statistic of ℓ1-sensitivity Δ;
- :class:`AboveThreshold`: one round of the sparse vector technique with one positive answer
  (Dwork & Roth 2014, Alg. 1; Lyu, Su & Li 2017, Alg. 1 with c = 1). The threshold gets
  ``Lap(2Δ/ε)`` once, every query ``Lap(4Δ/ε)``; the round answers "below" until the first noisy
  query reaches the noisy threshold, answers "above" once and ends. Pure ε-DP for any number of
  adaptively chosen queries of sensitivity Δ (the threshold noise pays ε/2 for all the "below"
  answers, the positive query's noise the other ε/2);
- :func:`subsampled_epsilon`: a pure ε-DP mechanism run on ``m`` of ``n`` rows drawn uniformly
  without replacement is ``log(1 + (m/n)(e^ε − 1))``-DP under replace-one (Balle, Barthe &
  Gaboardi 2018, Thm. 9 with δ = 0); :func:`epsilon_before_subsampling` is its inverse.

Every pure ε-DP mechanism is dominated by binary randomized response with the same ε (Kairouz,
Oh & Viswanath 2015): :func:`pure_dp_event` is that dominating pair as dp-accounting's
``RandomizedResponseDpEvent(2/(1 + e^ε), 2)``, which its RDP and PLD accountants compose exactly.
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting.dp_event import RandomizedResponseDpEvent

from .._validation import ArrayLike, as_generator, check_real
from .releases import Release

__all__ = [
    "AboveThreshold",
    "epsilon_before_subsampling",
    "laplace_mechanism",
    "pure_dp_epsilon",
    "pure_dp_event",
    "subsampled_epsilon",
]

#: the largest per-release ε a pure-DP event represents (beyond it 2/(1 + e^ε) underflows)
MAX_PURE_EPSILON = 700.0


def pure_dp_event(epsilon: float) -> RandomizedResponseDpEvent:
    """The event of a pure ε-DP release: binary randomized response with P(truth) = e^ε/(1 + e^ε),
    the pair that dominates every pure ε-DP mechanism (module docstring)."""
    e = check_real(epsilon, "epsilon", low=0.0, high=MAX_PURE_EPSILON, low_open=True)
    p = 2.0 / (1.0 + math.exp(e))
    # the event must never claim less than ε: rounding can decode p to a slightly smaller ε (and
    # below ε ≈ 1e-16, p rounds to 1, no loss at all); step p down until it decodes to ≥ ε
    event = RandomizedResponseDpEvent(noise_parameter=p, num_buckets=2)
    while pure_dp_epsilon(event) < e:
        p = float(np.nextafter(p, 0.0))
        event = RandomizedResponseDpEvent(noise_parameter=p, num_buckets=2)
    return event


def pure_dp_epsilon(event: RandomizedResponseDpEvent) -> float:
    """The ε of a randomized-response event over k buckets: log((1 − p + p/k)/(p/k))."""
    p, k = float(event.noise_parameter), int(event.num_buckets)
    if k == 1 or p == 1.0:
        return 0.0
    if p == 0.0:
        return math.inf
    return math.log1p(k * (1.0 - p) / p)


def subsampled_epsilon(epsilon: float, fraction: float) -> float:
    """ε after running a pure ε-DP mechanism on a uniform ``fraction`` of the rows drawn without
    replacement: ``log(1 + fraction·(e^ε − 1))`` (replace-one)."""
    e = check_real(epsilon, "epsilon", low=0.0, allow_inf=True)
    q = check_real(fraction, "fraction", low=0.0, high=1.0, low_open=True)
    if math.isinf(e) or e > MAX_PURE_EPSILON:
        return e + math.log(q)  # log(q e^ε + 1 − q) → ε + log q
    return math.log1p(q * math.expm1(e))


def epsilon_before_subsampling(epsilon: float, fraction: float) -> float:
    """The ε a mechanism may spend on a ``fraction`` of the rows so that, after subsampling, it
    costs ``epsilon``: the inverse of :func:`subsampled_epsilon`."""
    e = check_real(epsilon, "epsilon", low=0.0, high=MAX_PURE_EPSILON)
    q = check_real(fraction, "fraction", low=0.0, high=1.0, low_open=True)
    return math.log1p(math.expm1(e) / q)


def laplace_mechanism(
    value: ArrayLike, *, sensitivity: float, epsilon: float, rng: np.random.Generator
) -> Release:
    """Release ``value + Lap(Δ/ε)`` (entrywise) for a statistic of ℓ1-sensitivity Δ: pure ε-DP.

    The event is :func:`pure_dp_event` (ε), which dominates the Laplace mechanism's own privacy
    loss, so that a run of Laplace releases and sparse-vector rounds composes under one
    neighbouring relation in every accountant."""
    s = check_real(sensitivity, "sensitivity", low=0.0, low_open=True)
    e = check_real(epsilon, "epsilon", low=0.0, high=MAX_PURE_EPSILON, low_open=True)
    v = np.asarray(value, float)
    if not np.all(np.isfinite(v)):
        raise ValueError(f"`value` must be finite; got {value!r}")
    noisy = v + as_generator(rng).laplace(0.0, s / e, v.shape)
    return Release(float(noisy) if noisy.ndim == 0 else noisy, pure_dp_event(e))


class AboveThreshold:
    """One round of the sparse vector technique with one positive answer (module docstring).

    ``round(q)`` answers whether ``q + Lap(4Δ/ε) ≥ threshold + Lap(2Δ/ε)`` (the threshold noise is
    drawn once, at construction); after the first True the round is over and further queries raise
    ``RuntimeError``. ``queries`` counts the answers given. The whole round, whatever the number of
    queries, costs :attr:`event` (pure ε-DP) for queries of sensitivity Δ.

    Examples
    --------
    >>> svt = AboveThreshold(0.0, sensitivity=0.1, epsilon=1.0, rng=0)
    >>> [svt(q) for q in (-5.0, -5.0, 5.0)], svt.done
    ([False, False, True], True)
    """

    def __init__(
        self, threshold: float, *, sensitivity: float, epsilon: float, rng: np.random.Generator | int
    ) -> None:
        self.sensitivity = check_real(sensitivity, "sensitivity", low=0.0, low_open=True)
        self.epsilon = check_real(epsilon, "epsilon", low=0.0, high=MAX_PURE_EPSILON, low_open=True)
        t = check_real(threshold, "threshold")
        self._rng = as_generator(rng)
        self.threshold_scale = 2.0 * self.sensitivity / self.epsilon
        self.query_scale = 4.0 * self.sensitivity / self.epsilon
        self._noisy_threshold = t + self._rng.laplace(0.0, self.threshold_scale)
        self.queries = 0
        self.done = False

    @property
    def event(self) -> RandomizedResponseDpEvent:
        """The round's privacy event (pure ε-DP)."""
        return pure_dp_event(self.epsilon)

    def __call__(self, query: float) -> bool:
        if self.done:
            raise RuntimeError("this sparse-vector round has answered 'above' and is over")
        q = float(query)
        if not math.isfinite(q):
            raise ValueError(f"`query` must be finite; got {query!r}")
        self.queries += 1
        above = q + self._rng.laplace(0.0, self.query_scale) >= self._noisy_threshold
        self.done = bool(above)
        return self.done
