"""Worst-case neighbouring pairs for DP-PGCD: one local run, and a whole DP-Fed-Sparse-BNSL run.

DP-PGCD's ledger composes, per iteration, a selection (the exponential mechanism, bounded range
ε₀ = 2/m) and a Gaussian release of the selected gradient (μ = 1/m). A pair realises the claim
only if *every* iteration's two releases carry their full loss. Both designs here rest on one
canary row, s·(1, …, 1) in D and s·σ in D′ with σ_l = −1 on the first half S of the variables,
with s² far beyond every clip bound C_a: its per-sample gradient −x_a r_b is clipped in both
worlds and flips from −C_a to +C_a exactly on the *cross* coordinates (one end in S, one not),
moving their gradients by Δ_g,a = 2C_a/n, the most one record can.

- **Gaussian releases.** Every cross coordinate's release is a full-sensitivity Gaussian test.
- **Selections.** If every coordinate with non-negligible selection probability is a cross
  coordinate, the canary moves each one's score by +Δ_s (those whose gradient is positive in D:
  "up") or −Δ_s ("down"). The selection is then the two-point exponential mechanism "up group or
  down group", whose loss spans the whole bounded range. The split matters: at K = 3 and ε = 4
  an up share of 0.2 composes to the largest ε(δ) of the splits tried (3.74 of the RDP claim
  4.00; an even split gives 3.62; ``experiments/worst_pair_ceiling.py``).

The designs differ in who places D's scores: the public dual β in one local run
(:func:`worst_step_design`), the data themselves in a whole run (:func:`worst_run_rows`, where the
protocol sets β).
"""

from __future__ import annotations

import math

import numpy as np

from ..learners.linear.pgcd import PGCDNoise, new_state, score_sensitivity
from .game_base import EXCESS

__all__ = ["WORST_ROWS", "WORST_S", "WORST_LEVEL", "WORST_UP", "worst_step_design", "worst_run_rows"]

#: the local run's pair: rows, canary magnitude (× √C), D's score level (in units of λ_G) and the
#: share of the competing coordinates whose score the canary raises
WORST_ROWS, WORST_S, WORST_LEVEL, WORST_UP = 400, 3.0, 15.0, 0.2
_RHO2 = 1.0  # the local games' ρ₂


def _canary(d: int, s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(D's canary, D′'s canary, the cross-coordinate mask)."""
    S = np.arange(d) < d // 2
    return np.full(d, s), np.where(S, -s, s), S[:, None] != S[None, :]


def worst_step_design(
    *, d: int, n: int, clip: float, multiplier: float, up: float
) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray, np.ndarray, tuple[int, int], np.ndarray]:
    """The pair of one local DP-PGCD run (B = W = 0, λ₁ = 0, ρ₂ = 1, the dual β public).

    Rows: n − 1 rows of zeros and the canary (s² = 9C; s²/n ≪ ρ₂). β puts D's gradients at
    +Lλ_G√M_a on the share ``up`` of the cross coordinates and −Lλ_G√M_a on the others (L = 15),
    0 elsewhere, so only cross coordinates compete. After an update of (a, b) only that
    coordinate's gradient changes: the zero rows' residuals stay 0, the canary's stays clipped
    (n keeps each step s·|ΔB| small), and the step 1/M_a with M_a = s²/n + ρ₂ ≈ ρ₂ cancels the
    gradient up to the noise, so it leaves the competition and the next iteration meets the same
    pair. Returns (worlds, β, the public constants m, a placeholder canary coordinate, the cross
    mask), every array read-only.
    """
    x0, x1, cross = _canary(d, WORST_S * math.sqrt(clip))
    X0, X1 = np.zeros((n, d)), np.zeros((n, d))
    X0[-1], X1[-1] = x0, x1
    m = (X0 * X0).mean(axis=0)
    M = m + _RHO2
    zero = np.zeros((d, d))
    state = new_state(
        X0, zero.copy(), zero, zero, M=M, lambda1=0.0, rho2=_RHO2, noise=PGCDNoise(clip, multiplier)
    )
    C_a = state.C_a
    if C_a is None or np.any(x0 * x0 < EXCESS * C_a):  # pragma: no cover - s is chosen for the bound
        raise RuntimeError("the worst-case canary is not beyond the clip bounds")
    lam = multiplier * score_sensitivity(state)
    flat = np.flatnonzero(cross.ravel())
    ups = flat[np.round(np.linspace(0, flat.size - 1, max(1, round(up * flat.size)))).astype(int)]
    level = np.where(cross, -WORST_LEVEL * lam, 0.0).ravel()
    level[ups] = WORST_LEVEL * lam
    beta = level.reshape(d, d) * np.sqrt(M)[:, None] - state.Gd  # D's gradient: level·√M_a
    np.fill_diagonal(beta, 0.0)
    for arr in (X0, X1, beta, m, cross):
        arr.setflags(write=False)
    return (X0, X1), beta, m, (-1, -1), cross


def worst_run_rows(
    *, d: int, clip: float, multiplier: float, lambda1: float, rho2: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Participant 0's data in D and D′ for a whole DP-Fed-Sparse-BNSL run, and D's constants m.

    The protocol sets β (0 at first) and W, so the data must place D's scores. For each pair
    a ∈ S, b ∉ S there are k rows t·(e_a ∓ e_b), t² beyond the clip bound: each per-sample gradient
    of the pair is clipped to ±C_a, so the pair's two coordinates start at g = ±(k ∓ 1)C_a/n
    (with the canary's −C_a/n), and those of the "up" pairs, a matching of S onto its complement
    (one in |S^c|, the share 0.2 at d = 10), are positive. Every other coordinate's gradient is
    the canary's −C_a/n, below λ₁: score 0. With k ≥ 34m the competing scores sit more than 15λ_G
    above 0, so only cross coordinates compete, in every round: the rows' clipped gradients do not
    respond to B, an update lowers the selected coordinate's score by the share ρ₂/M_a of its
    gradient only, and W's support is B's (the server's ℓ1 and acyclicity terms vanish off it).
    Returns (X of D, X of D′, m), read-only; n = k·|S|·|S^c| + 1 rows, the canary last.
    """
    S = np.arange(d) < d // 2
    ins, outs = np.flatnonzero(S), np.flatnonzero(~S)
    k = math.ceil(34.0 * multiplier + 1.0)
    n = k * ins.size * outs.size + 1
    # t² (the canary's s² too) beyond EXCESS·C_a = EXCESS·C·√M_a, with M_a = m_a + ρ₂ and m_a, the
    # rows' mean square, depending on t: a few fixed-point steps, then a margin
    t2 = EXCESS * clip * 2.0
    for _ in range(50):
        m_a = (k * max(ins.size, outs.size) * t2 + t2) / n
        t2 = EXCESS * clip * math.sqrt(m_a + rho2)
    t = math.sqrt(1.5 * t2)
    rows = []
    for i, a in enumerate(ins):
        for j, b in enumerate(outs):
            sign = -1.0 if j == i % outs.size else 1.0  # up pairs: t(e_a − e_b), g = +(k − 1)C_a/n
            row = np.zeros(d)
            row[a], row[b] = t, sign * t
            rows.append(np.tile(row, (k, 1)))
    base = np.vstack(rows)
    x0, x1, _ = _canary(d, t)
    X0, X1 = np.vstack([base, x0]), np.vstack([base, x1])
    m = (X0 * X0).mean(axis=0)
    if lambda1 >= k * clip * math.sqrt(float(m.min()) + rho2) / n:  # pragma: no cover - k is chosen for it
        raise RuntimeError("the design's gradients do not clear the l1 threshold")
    for arr in (X0, X1, m):
        arr.setflags(write=False)
    return X0, X1, m
