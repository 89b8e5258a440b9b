"""Priv-PC's test without noise: how much power the public normaliser costs, and whether a floor
helps.

PC-stable (α = 0.2, two-sided) on alarm, n = 100,000 rows, seeds 0–2 (the comparison's samples),
with the stratified Kendall numerator Σ_s 9K_s/(2m_s + 5) over three normalisers:

* ``public``: √w(n), the package's (bounded sensitivity);
* ``authors``: √Σ w(m_s) over the strata where both variables vary, Priv-PC's authors' (a row
  that makes a constant stratum vary changes it by up to w(m): no bounded sensitivity);
* ``floor c``: √max(Σ_s w(m_s) over all strata, c·w(n)), c = 0.5 and 0.25.

No noise: this is the skeleton F1 each test reaches at ε = ∞, the ceiling of any private run.

    python experiments/priv_pc_normalisers.py
"""

from __future__ import annotations

import math

import _runner  # noqa: F401  (one BLAS thread, before numpy)
import numpy as np
import pandas as pd
import scipy.special

from dpbnsl.io.networks import sample_network
from dpbnsl.learners.constraint.citests import CIResult
from dpbnsl.learners.constraint.kendall import (
    _MAX_CELLS,
    StratifiedKendall,
    _concordance_sorted,
    _concordance_table,
    kendall_weight,
)
from dpbnsl.learners.constraint.pc import pc_skeleton
from dpbnsl.metrics import skeleton_scores

NORMALISERS = (("public", 1.0), ("authors", 1.0), ("floor", 0.5), ("floor", 0.25))


class Normalised(StratifiedKendall):
    """The package's stratified Kendall statistic over another normaliser (module docstring)."""

    def __init__(self, X: np.ndarray, mode: str, c: float) -> None:
        super().__init__(X)
        self.mode, self.c = mode, c

    def _compute(self, a: int, b: int, S: tuple[int, ...]) -> CIResult:
        sid, n_strata = self._strata(S)
        (xa, ra), (xb, rb) = self._rank(a), self._rank(b)
        if ra * rb <= _MAX_CELLS and n_strata * ra * rb <= 8 * self.n + (1 << 20):
            K = _concordance_table(sid, n_strata, xa, ra, xb, rb).astype(float)
        else:
            K = _concordance_sorted(sid, n_strata, xa, xb)
        m = np.bincount(sid, minlength=n_strata).astype(float)
        numerator = float((9.0 * K / (2.0 * m + 5.0)).sum())
        if self.mode == "public":
            W = kendall_weight(self.n)
        elif self.mode == "authors":
            A = np.bincount(sid * ra + xa, minlength=n_strata * ra).reshape(n_strata, ra)
            B = np.bincount(sid * rb + xb, minlength=n_strata * rb).reshape(n_strata, rb)
            vary = ((A > 0).sum(axis=1) > 1) & ((B > 0).sum(axis=1) > 1)
            W = float(kendall_weight(m[vary]).sum()) if vary.any() else 1.0
        else:
            W = max(float(kendall_weight(m).sum()), self.c * kendall_weight(self.n))
        z = numerator / math.sqrt(W)
        return CIResult(float(scipy.special.erfc(abs(z) / math.sqrt(2.0))), z, float(self.n))


def main() -> None:
    rows = []
    for seed in range(3):
        s = sample_network("alarm", 100_000, participants=1, rng=seed)
        X = np.asarray(s.X, float)
        for mode, c in NORMALISERS:
            adj, _, _ = pc_skeleton(Normalised(X, mode, c), alpha=0.2)
            f1 = skeleton_scores(s.B_true, adj.astype(int)).f1
            rows.append(dict(seed=seed, normaliser=mode if mode != "floor" else f"floor {c:g}", f1=f1))
            print(rows[-1], flush=True)
    print(pd.DataFrame(rows).groupby("normaliser")["f1"].agg(["mean", "std"]).round(3).to_string())


if __name__ == "__main__":
    main()
