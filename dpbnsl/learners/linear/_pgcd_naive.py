"""Reference DP-PGCD that recomputes everything every iteration (O(n_k·d²) per step).

Not for use: it is the baseline that tests (same selections and values as :func:`pgcd`) and
``benchmarks/bench_dp_pgcd.py`` (iterations per second) compare the incremental solver against. It
takes the same random numbers from ``rng`` as :func:`pgcd`, in the same order (per block of
:data:`DRAW_BLOCK` iterations: the two uniforms of each selection, then the standard normal of each
gradient release), and writes the mechanisms out: the two-level inverse-CDF draw of the
exponential mechanism on freshly computed scores, and value + σ·z (its releases are not recorded:
it is never used on data that need protecting).
"""

from __future__ import annotations

import numpy as np

from ...mechanisms import exponential_mechanism_sample
from .pgcd import DRAW_BLOCK, PGCDNoise, clip_bounds, soft_threshold

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
    scale = noise.multiplier * delta_s  # λ_G of the exponential mechanism
    B = np.array(B, dtype=float, copy=True)
    selected = np.empty(iters, dtype=np.int64)
    for k in range(iters):
        if k % DRAW_BLOCK == 0:  # the random numbers of the next block of iterations
            block = min(DRAW_BLOCK, iters - k)
            uniforms = rng.random((block, 2))
            normals = rng.standard_normal(block)
        u_col, u_row = uniforms[k % DRAW_BLOCK]
        z = normals[k % DRAW_BLOCK]
        R = X - X @ B
        G = np.empty((d, d))
        for b in range(d):  # clipped per-sample gradients, one column at a time
            G[:, b] = np.clip(-X * R[:, b, None], -C_a, C_a).mean(axis=0)
        G += beta + rho2 * (B - W)
        S = np.sqrt(M)[:, None] * np.abs(soft_threshold(B - G / M[:, None], lambda1 / M[:, None]) - B)
        np.fill_diagonal(S, -np.inf)
        # P(a, b) ∝ exp(S_ab/λ_G): a column by its log-sum-exp, then a row within it
        logits = S / scale
        b = exponential_mechanism_sample(np.logaddexp.reduce(logits, axis=0), u_col)
        a = exponential_mechanism_sample(logits[:, b], u_row)
        g = G[a, b] + noise.multiplier * (2 * C_a[a] / n) * z  # σ = m·Δ_g,ab
        B[a, b] = soft_threshold(B[a, b] - g / M[a], lambda1 / M[a])
        selected[k] = a * d + b
    return B, selected
