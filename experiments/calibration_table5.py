"""Noise of DP-PGCD on Fed-Sparse-BNSL's Table 5 configurations: the paper's Theorem 5.1 against
the tight RDP calibration, at δ = 1e-5. Prints a Markdown table (the one in the README).

    python experiments/calibration_table5.py [--delta 1e-5]
"""

from __future__ import annotations

import argparse

# _runner limits BLAS to one thread (dpbnsl.blas.single_thread), here and in the workers
import _runner  # noqa: F401

from dpbnsl.accounting import calibrate_dp_pgcd

#: (ε, C, T, K) of Fed-Sparse-BNSL's Table 5 (the clipping bound C does not enter the calibration).
TABLE5 = [
    (0.5, 10, 10, 10),
    (1, 10, 10, 10),
    (2, 5, 100, 10),
    (5, 5, 100, 20),
    (25, 7, 100, 30),
    (50, 5, 100, 50),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delta", type=float, default=1e-5)
    args = parser.parse_args()
    print(
        "| ε | T | K | paper multiplier | tight multiplier | noise saving | ε_zcdp (paper) | ε_rdp (tight) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for eps, _, T, K in TABLE5:
        paper = calibrate_dp_pgcd(eps, args.delta, rounds=T, local_iters=K, method="paper")
        tight = calibrate_dp_pgcd(eps, args.delta, rounds=T, local_iters=K, method="tight")
        saving = 1 - tight.gumbel_multiplier / paper.gumbel_multiplier
        print(
            f"| {eps:g} | {T} | {K} | {paper.gumbel_multiplier:.2f} | "
            f"{tight.gumbel_multiplier:.2f} | {saving:.1%} | {paper.epsilon_zcdp:.6f} | "
            f"{tight.epsilon_rdp:.6f} |"
        )


if __name__ == "__main__":
    main()
