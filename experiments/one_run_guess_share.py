"""Which share of the canaries to guess in a one-run audit of a Gaussian release: simulated
1/z-GDP canary scores (no learner), the Gaussian-curve bound for the top 0.5, 1 and 2 % guessed
"in", m = 10⁴ and 2·10⁴ canaries, claimed ε = 4 at δ = 10⁻⁵ (μ = 0.925), seven seeds (100–106).
Prints the median bound per setting, and, for the 20 % noise-deficit control (true μ = 1.156), the
median μ_lb / μ at 2·10⁴ to 4·10⁵ canaries (three seeds).

    python experiments/one_run_guess_share.py
"""

from __future__ import annotations

import _runner  # noqa: F401  (one BLAS thread, before numpy)
import numpy as np
from scipy import optimize

from dpbnsl.accounting.gaussian import gaussian_epsilon
from dpbnsl.audits import one_run_gdp_bound

DELTA = 1e-5


def bound(mu: float, m: int, share: float, seed: int):
    rng = np.random.default_rng(seed)
    truths = np.where(rng.random(m) < 0.5, 1, -1)
    scores = mu * (truths > 0) + rng.standard_normal(m)
    guesses = np.zeros(m, dtype=int)
    guesses[np.argsort(scores)[m - int(share * m) :]] = 1
    return one_run_gdp_bound(guesses, truths, delta=DELTA, one_sided=True)


def main() -> None:
    mu = optimize.brentq(lambda x: gaussian_epsilon(x, DELTA) - 4.0, 0.1, 5.0)
    for m in (10_000, 20_000):
        for share in (0.005, 0.01, 0.02):
            eps = [bound(mu, m, share, 100 + s).epsilon_lb for s in range(7)]
            print(f"m={m} top {share:.1%}: median ε_lb {np.median(eps):.2f} (claim 4.00)", flush=True)
    true = mu / 0.8  # 20 % less noise
    for m in (20_000, 100_000, 400_000):
        for share in (0.005, 0.02):
            ratio = [bound(true, m, share, 100 + s).mu_lb / true for s in range(3)]
            print(f"deficit: m={m} top {share:.1%}: median μ_lb/μ {np.median(ratio):.3f} (flags above 0.8)")


if __name__ == "__main__":
    main()
