"""Reference DP-PGCD that recomputes everything every iteration (O(n_k·d²) per step).

Not for use: it is the baseline that tests (same selections and values as :func:`pgcd`) and
``benchmarks/bench_dp_pgcd.py`` (iterations per second) compare the incremental solver against. It
draws from ``rng`` in the same order as :func:`pgcd`, through the same mechanisms (its releases
are not recorded: it is never used on data that need protecting).
"""

from __future__ import annotations

import numpy as np

from ...mechanisms import ColumnwiseExponentialMechanism, gaussian_mechanism
from .pgcd import PGCDNoise, clip_bounds, soft_threshold

__all__ = ["naive_dp_pgcd"]


def naive_dp_pgcd(
    X: np.ndarray,
    B: np.ndarray,
    W: np.ndarray,
    beta: np.ndarray,
    *,
    lambda1: float,
    rho2: float,
    iters: int,
    m: np.ndarray,
    noise: PGCDNoise,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Return (B, selected flat indices) after ``iters`` DP-PGCD iterations, naively."""
    n, d = X.shape
    M = np.asarray(m, float) + rho2
    C_a = clip_bounds(M, noise.clip, noise.scheme)
    delta_s = 2 * float(np.max(C_a / np.sqrt(M))) / n  # max_a 2C_a/(n√M_a), written out
    B = np.array(B, dtype=float, copy=True)
    selected = np.empty(iters, dtype=np.int64)
    for k in range(iters):
        R = X - X @ B
        G = np.empty((d, d))
        for b in range(d):  # clipped per-sample gradients, one column at a time
            G[:, b] = np.clip(-X * R[:, b, None], -C_a, C_a).mean(axis=0)
        G += beta + rho2 * (B - W)
        S = np.sqrt(M)[:, None] * np.abs(soft_threshold(B - G / M[:, None], lambda1 / M[:, None]) - B)
        np.fill_diagonal(S, -np.inf)
        sampler = ColumnwiseExponentialMechanism(S, sensitivity=delta_s, multiplier=noise.multiplier)
        a, b = divmod(sampler.sample(rng).value, d)
        g = gaussian_mechanism(
            G[a, b], sensitivity=2 * C_a[a] / n, multiplier=noise.multiplier, rng=rng
        ).value
        B[a, b] = soft_threshold(B[a, b] - g / M[a], lambda1 / M[a])
        selected[k] = a * d + b
    return B, selected
