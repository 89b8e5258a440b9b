"""Fed-Sparse-BNSL Fig. 4 analogue: DP-Fed-Sparse-BNSL against DP-Fed-BNSL as the dimension grows.

One ε (default 5, δ = 1e-5), d ∈ {20, 50, 100} by default (200 with ``--dims``; DP-Fed-BNSL's server
step then costs about a minute of CPU per run), ER graphs with d edges, 10 participants × 1000 rows.
DP-Fed-Sparse-BNSL: T = K = 100, private smoothness (bound 30), data declared centred, and a
global clip bound C that is either fixed (``--clip``, default 30, the Fig. 3 value) or grows with
the dimension (``--clip-per-d c``: C = c·d). Per-coordinate gradients are clipped at C·√(M_ab/ΣM),
and ΣM grows like d², so a fixed C clips every gradient to ~C/d and starves the learner at large d.
DP-Fed-BNSL: rows clipped to R = 10, one analytic-Gaussian covariance release, Fed-BNSL defaults.
The paper reports SHD ≈ 70 vs ≈ 140 and TPR > 0.8 vs ≈ 0.5 at its largest d; its n, ε and C for
this figure are not stated. Rows and plot go to ``docs/results/`` (resumable): ``fig4_dimension``
for the fixed C (both methods), ``fig4_dimension_cd`` for C = c·d (DP-Fed-Sparse-BNSL only; its
plot takes the DP-Fed-BNSL rows from the fixed-C file, which does not depend on C).

    python experiments/fig4_dimension.py [--dims 20,50,100] [--seeds 3] [--epsilon 5] [--jobs 2]
    python experiments/fig4_dimension.py --clip-per-d 1 --dims 20,50,100,200
"""

from __future__ import annotations

import argparse
from pathlib import Path

# _runner limits BLAS to one thread (dpbnsl.blas.single_thread), here and in the workers
import _runner  # noqa: F401
import pandas as pd

from dpbnsl.audits import summarize, sweep
from dpbnsl.audits.plots import plot_tradeoff

OUT = Path(__file__).resolve().parent.parent / "docs" / "results"


def _sparse(clip: float) -> dict:  # the settings of the runs before the clipping study
    return dict(clip=clip, clip_scheme="coordinates", rounds=100, local_iters=100, feature_bound=30.0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", default="20,50,100")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--epsilon", type=float, default=5.0)
    p.add_argument("--clip", type=float, default=30.0, help="fixed global clip bound C")
    p.add_argument(
        "--clip-per-d",
        type=float,
        default=None,
        help="C = this × d instead of a fixed C (DP-Fed-Sparse-BNSL only)",
    )
    p.add_argument(
        "--public",
        action="store_true",
        help="DP-Fed-Sparse-BNSL with its public defaults (relative clipping, (T, K) "
        "from d, n_k, ε, δ; feature bound 100); DP-Fed-BNSL rows are taken from "
        "fig4_dimension.csv",
    )
    p.add_argument("--jobs", type=int, default=1)
    a = p.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    dims = [int(v) for v in a.dims.split(",")]
    common = dict(
        epsilons=(a.epsilon,),
        seeds=list(range(a.seeds)),
        participants=10,
        n_per_participant=1000,
        jobs=a.jobs,
    )
    if a.public:
        csv, stem = OUT / "fig4_public.csv", "fig4_public"
        sweep(
            methods=("dp-fed-sparse-bnsl",),
            d=dims,
            csv=csv,
            method_options={"dp-fed-sparse-bnsl": dict(feature_bound=100.0)},
            **common,
        )
        frame = pd.read_csv(csv)
        fixed = OUT / "fig4_dimension.csv"
        if fixed.is_file():
            other = pd.read_csv(fixed)
            frame = pd.concat([frame, other[other.method == "dp-fed-bnsl"]], ignore_index=True)
        label = "public defaults"
    elif a.clip_per_d is None:
        csv, stem = OUT / "fig4_dimension.csv", "fig4_dimension"
        sweep(
            methods=("dp-fed-sparse-bnsl", "dp-fed-bnsl"),
            d=dims,
            csv=csv,
            method_options={"dp-fed-sparse-bnsl": _sparse(a.clip), "dp-fed-bnsl": dict(clip_norm=10.0)},
            **common,
        )
        frame = pd.read_csv(csv)
        label = f"C = {a.clip:g}"
    else:
        csv, stem = OUT / "fig4_dimension_cd.csv", "fig4_dimension_cd"
        for d in dims:  # C depends on d, so one sweep per d (all appending to one CSV)
            sweep(
                methods=("dp-fed-sparse-bnsl",),
                d=[d],
                csv=csv,
                method_options={"dp-fed-sparse-bnsl": _sparse(a.clip_per_d * d)},
                **common,
            )
        frame = pd.read_csv(csv)
        fixed = OUT / "fig4_dimension.csv"
        if fixed.is_file():
            other = pd.read_csv(fixed)
            frame = pd.concat([frame, other[other.method == "dp-fed-bnsl"]], ignore_index=True)
        label = f"C = {a.clip_per_d:g}·d"
    print(summarize(frame, by=("method", "d")).round(2).to_string(index=False))
    plot_tradeoff(
        frame,
        path=OUT / f"{stem}.png",
        x="d",
        log_x=False,
        title=f"ε = {a.epsilon:g}, δ = 1e-5, 10 × 1000 rows, {label}",
    )


if __name__ == "__main__":
    main()
