"""The ε(δ) of the ideal worst-case DP-PGCD pair, which no audit of it can exceed.

K iterations of DP-PGCD on the pair of ``dpbnsl.audits._worst_pairs``: K Gaussian releases of
sensitivity 1 and noise m, and K two-point selections "up or down" of bounded range ε₀ = 2/m,
whose up group has probability p in D. Composed with dp-accounting's privacy-loss distributions
(both orders of the two-point pair, the larger kept), for the multiplier the learner calibrates to
ε = 4, δ = 10⁻⁵ (and with 80 % of it, the noise-deficit control). Prints ε(δ) per split p.

    python experiments/worst_pair_ceiling.py
"""

from __future__ import annotations

import math

import _runner  # noqa: F401  (one BLAS thread, before numpy)
from dp_accounting.pld import privacy_loss_distribution as pld

from dpbnsl.accounting import calibrate_dp_pgcd

DELTA = 1e-5


def pair_epsilon(m: float, K: int, p: float) -> float:
    e0 = 2.0 / m
    gauss = pld.from_gaussian_mechanism(
        standard_deviation=m, sensitivity=1.0, value_discretization_interval=1e-4
    ).self_compose(K)
    a, b = p * math.exp(e0 / 2), (1 - p) * math.exp(-e0 / 2)
    p1 = a / (a + b)
    best = 0.0
    for P0, P1 in (((p, 1 - p), (p1, 1 - p1)), ((p1, 1 - p1), (p, 1 - p))):
        sel = pld.from_two_probability_mass_functions(
            {0: math.log(P0[0]), 1: math.log(P0[1])},
            {0: math.log(P1[0]), 1: math.log(P1[1])},
            value_discretization_interval=1e-4,
        )
        best = max(best, gauss.compose(sel.self_compose(K)).get_epsilon_for_delta(DELTA))
    return best


def main() -> None:
    for rounds, K in ((1, 3), (5, 3)):
        noise = calibrate_dp_pgcd(4.0, DELTA, rounds=rounds, local_iters=K)
        for share in (1.0, 0.8):
            m = noise.gumbel_multiplier * share
            cells = ", ".join(
                f"p={p}: {pair_epsilon(m, rounds * K, p):.2f}" for p in (0.5, 0.3, 0.25, 0.2, 0.1)
            )
            print(
                f"T={rounds} K={K}, {share:.0%} of the noise (claim {noise.epsilon_rdp:.2f}): {cells}",
                flush=True,
            )


if __name__ == "__main__":
    main()
