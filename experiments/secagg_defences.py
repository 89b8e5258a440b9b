"""Four defences side by side: none, local DP, secure aggregation only, secure aggregation with
distributed DP — what the server learns, what a coalition learns, and what each costs.

The protocols: Fed-BNSL's consensus rounds (none: every B_k reaches the server), DP-Fed-BNSL with
local Gaussian releases (local DP), Fed-BNSL's pooled objective over a plain secure sum (SecAgg
only, ``fed_bnsl(aggregation="secure")``) and DP-Fed-BNSL's jointly noised release
(SecAgg + distributed DP, t = 0; and t = P − 1, each share carrying the whole noise). ε = 1,
δ = 1e-5, R = 10 for the private releases; the plain sum's R is the simulator's public row bound;
data uncentred (the simulator's SEM has mean 0), ER graphs with d edges, **seeds 0–4**.

- Reconstruction of participant 0's covariance (10 participants × 1000 rows, d = 20): relative
  Frobenius error of the server's best estimate (the Fed-BNSL inversion on the rounds; the pooled
  covariance when the server reads only a sum), of a coalition of the server and the 9 others
  (their shares subtracted), and of two sums one participant apart (a run repeated after it
  dropped out). The truth is participant 0's own statistic (its rows clipped to R for the
  private protocols and for the plain sum, as they upload it).
- The pooled covariance the server reads under SecAgg only, against the pooled rows: at the
  31-bit modulus Flower's SecAgg+ carries, and in process at 53 bits.
- Membership (10 participants × 20 rows, d = 20, as the package's attack table): each
  participant's 20 rows against 20 fresh rows of the same SEM, scored by the Gaussian likelihood
  ratio (``membership_inference``) on the attacker's view; AUC pooled over participants and seeds.
- Utility at 10 × 1000 rows, d = 20 and 100 (TPR, SHD), and the bytes of the transcript.
- The ε each participant keeps against a coalition of the server with the 9 others
  (``epsilon_with_shares``: one share's noise), next to the claim.
- A two-party study (2 × 1000 rows, d = 20): what participant 0, colluding with the server, reads
  of participant 1 (``--parts partner`` runs this table only).

    python experiments/secagg_defences.py [--seeds 5] [--dims 20,100]

Rows go to ``docs/results/secagg_defences.csv`` (the two-party table to ``secagg_partner.csv``),
the tables to stdout.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

# _runner limits BLAS to one thread (dpbnsl.blas.single_thread), here and in the workers
import _runner  # noqa: F401
import numpy as np
import pandas as pd

from dpbnsl import dp_fed_bnsl, fed_bnsl, simulate
from dpbnsl.accounting.distributed import epsilon_with_shares
from dpbnsl.attacks import membership_inference, population_covariance, reconstruct_covariance, roc_auc
from dpbnsl.attacks.secagg import (
    isolate_by_coalition,
    isolate_by_difference,
    read_sum,
    replay_shares,
    with_sum,
)
from dpbnsl.mechanisms.releases import clip_rows
from dpbnsl.metrics import count_accuracy
from dpbnsl.simulation.linear import simulate_linear_sem, simulated_bounds

OUT = Path(__file__).resolve().parent.parent / "docs" / "results"
P, EPS, DELTA, R = 10, 1.0, 1e-5, 10.0
DEFENCES = ("none", "local DP", "SecAgg only", "SecAgg + DDP (t = 0)", "SecAgg + DDP (t = P − 1)")


def learn(defence: str, data: list[np.ndarray], d: int, seed: int, bits: int = 31):
    noise = 10_000 + seed  # the noise's seed, apart from the data's
    if defence == "none":
        return fed_bnsl(data, centre=False)
    if defence == "local DP":
        return dp_fed_bnsl(data, epsilon=EPS, delta=DELTA, clip_norm=R, rng=noise)
    if defence == "SecAgg only":
        R_plain = simulated_bounds(d)["clip_norm"]
        return fed_bnsl(data, centre=False, aggregation="secure", clip_norm=R_plain, modulus_bits=bits)
    t = 0 if defence.endswith("(t = 0)") else P - 1
    return dp_fed_bnsl(
        data, epsilon=EPS, delta=DELTA, clip_norm=R, aggregation="secure", dropouts=t, rng=noise
    )


def settings_of(defence: str, data: list[np.ndarray], d: int, bits: int = 31) -> dict:
    """The public settings a secure study declares (what the server decodes with)."""
    base = dict(aggregation="secure", participants=len(data), n_total=sum(len(X) for X in data))
    if defence == "SecAgg only":
        return dict(base, clip_norm=simulated_bounds(d)["clip_norm"], modulus_bits=bits, centre=False)
    t = 0 if defence.endswith("(t = 0)") else P - 1
    return dict(base, epsilon=EPS, delta=DELTA, clip_norm=R, dropouts=t)


def shares_of(defence: str, data: list[np.ndarray], d: int, seed: int, bits: int = 31, run: int = 0):
    """Every participant's share, as it made it (a colluding participant knows its own), the setup
    transcript and the public settings; ``run=1``: a second run, with fresh noise."""
    name = "fed-bnsl" if defence == "SecAgg only" else "dp-fed-bnsl"
    settings = settings_of(defence, data, d, bits)
    shares, setup = replay_shares(name, data, settings, rng=10_000 + seed + 100_000 * run)
    return shares, setup, settings


def rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def own(defence: str, X: np.ndarray, d: int) -> np.ndarray:
    """Participant's statistic per row as its protocol uploads it."""
    if defence == "none":
        return X.T @ X / len(X)
    Rk = simulated_bounds(d)["clip_norm"] if defence == "SecAgg only" else R
    Xc = clip_rows(X, norm=Rk)
    return Xc.T @ Xc / len(X)


def views(defence: str, result, data: list[np.ndarray], d: int, seed: int, k: int = 0, bits: int = 31):
    """(server's view of participant k, its n; the coalition's of the others; two sums one
    participant apart), each as (covariance, rows behind it)."""
    n_k = len(data[k])
    if defence in ("none", "local DP"):
        p = result.params
        rec = reconstruct_covariance(
            result.transcript,
            participant=k,
            rho2=p["rho2"],
            gamma2=p["gamma2"],
            rho_max=p["rho_max"],
            n_samples=[len(X) for X in data],
        )
        return (rec.covariance, n_k), (rec.covariance, n_k), (rec.covariance, n_k)
    shares, setup, settings = shares_of(defence, data, d, seed, bits)
    everyone = tuple(range(len(data)))
    others = tuple(j for j in everyone if j != k)
    view = read_sum(with_sum(setup, shares, everyone), settings)
    assert np.array_equal(view.residues, read_sum(result.transcript, settings).residues)  # the run's own sum
    coal = isolate_by_coalition(view, {j: shares[j] for j in others})
    again, _, _ = shares_of(defence, data, d, seed, bits, run=1)  # a second run, fresh noise,
    later = read_sum(with_sum(setup, again, others), settings)  # after participant k dropped out
    diff = isolate_by_difference(view, later)
    return (view.S, view.n), (coal.covariance, n_k), (diff.covariance, n_k)


def run_seed(seed: int, dims: list[int]) -> list[dict]:
    rows = []
    for d in dims:
        data = simulate(d, P * 1000, participants=P, rng=seed)
        for defence in DEFENCES:
            r = learn(defence, data.participants, d, seed)
            acc = count_accuracy(data.W_true != 0, r.W != 0)
            row = dict(
                seed=seed, d=d, defence=defence, tpr=acc.tpr, shd=acc.shd, bytes=r.transcript.total_bytes
            )
            if d == 20:
                truth = own(defence, data.participants[0], d)
                (sv, _), (cv, _), (dv, _) = views(defence, r, data.participants, d, seed)
                row.update(
                    server_error=rel(sv, truth),
                    coalition_error=rel(cv, truth),
                    difference_error=rel(dv, truth),
                )
                if defence == "SecAgg only":  # the pooled covariance, at Flower's modulus and at 53 bits
                    rows_all = np.vstack(
                        [clip_rows(X, norm=simulated_bounds(d)["clip_norm"]) for X in data.participants]
                    )
                    pooled = rows_all.T @ rows_all / len(rows_all)
                    row["pooled_error_31"] = rel(sv, pooled)
                    scale = read_sum(r.transcript, settings_of(defence, data.participants, d)).scale
                    Q = [
                        np.rint(clip_rows(X, norm=simulated_bounds(d)["clip_norm"]) * scale)
                        for X in data.participants
                    ]
                    uploaded = sum(q.T @ q for q in Q) / (scale**2 * len(rows_all))  # what was summed
                    row["pooled_error_statistic"] = rel(sv, uploaded)
                    wide = learn(defence, data.participants, d, seed, bits=53)
                    settings = settings_of(defence, data.participants, d, bits=53)
                    row["pooled_error_53"] = rel(read_sum(wide.transcript, settings).S, pooled)
                if defence.startswith("SecAgg + DDP"):
                    plan = r.info["plan"]
                    row["epsilon_claim"] = r.privacy.epsilon
                    row["epsilon_coalition"] = epsilon_with_shares(plan, 1, delta=DELTA)
            rows.append(row)
    return rows


def membership_seed(seed: int) -> list[dict]:
    """Membership in the small-sample setting: scores of members (label 1) and fresh rows (0)."""
    d, n = 20, 20
    data = simulate(d, P * n, participants=P, rng=seed)
    pop = population_covariance(data.W_true)
    fresh = simulate_linear_sem(data.W_true, P * n, rng=50_000 + seed)
    out = []
    for defence in DEFENCES:
        r = learn(defence, data.participants, d, seed)
        for k in range(P):
            server, coalition, _ = views(defence, r, data.participants, d, seed, k=k)
            clip = R if defence != "none" and defence != "SecAgg only" else math.inf
            cand = np.vstack([data.participants[k], fresh[k * n : (k + 1) * n]])
            if math.isfinite(clip):
                cand = clip_rows(cand, norm=clip)
            labels = np.r_[np.ones(n), np.zeros(n)]
            for who, (S, m) in (("server", server), ("coalition", coalition)):
                res = membership_inference(S, cand, n_samples=m, population_cov=pop)
                out += [
                    dict(seed=seed, defence=defence, view=who, label=int(lab), score=float(s))
                    for lab, s in zip(labels, res.scores)
                ]
    return out


def partner_seed(seed: int) -> list[dict]:
    """A two-party study (2 × 1000 rows, d = 20): what participant 0, colluding with the server,
    reads of participant 1 — exactly without noise; its one noise share with distributed DP."""
    data = simulate(20, 2 * 1000, participants=2, rng=seed).participants
    rows = []
    for defence in ("SecAgg only", "SecAgg + DDP (t = 0)"):
        r = learn(defence, data, 20, seed)
        shares, _, settings = shares_of(defence, data, 20, seed)
        view = read_sum(r.transcript, settings)
        iso = isolate_by_coalition(view, {0: shares[0]})
        row = dict(seed=seed, defence=defence, partner_error=rel(iso.covariance, own(defence, data[1], 20)))
        if defence == "SecAgg only":  # against what participant 1 uploaded: its rounded rows
            R_plain = simulated_bounds(20)["clip_norm"]
            Q = np.rint(clip_rows(data[1], norm=R_plain) * view.scale)
            row["partner_error_statistic"] = rel(iso.covariance, Q.T @ Q / (view.scale**2 * len(Q)))
        else:
            row["epsilon_partner"] = epsilon_with_shares(r.info["plan"], 1, delta=DELTA)
        rows.append(row)
    return rows


def noise_spread(seed: int, draws: int) -> list[dict]:
    """DP-Fed-BNSL under SecAgg + DDP (t = 0) at d = 20 on one data seed, over ``draws`` noise
    draws: how much the utility moves with the noise alone."""
    data = simulate(20, P * 1000, participants=P, rng=seed)
    out = []
    for j in range(draws):
        r = dp_fed_bnsl(
            data.participants,
            epsilon=EPS,
            delta=DELTA,
            clip_norm=R,
            aggregation="secure",
            rng=20_000 + 100 * seed + j,
        )
        acc = count_accuracy(data.W_true != 0, r.W != 0)
        out.append(dict(seed=seed, draw=j, tpr=acc.tpr, shd=acc.shd))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--dims", default="20,100")
    p.add_argument("--noise-draws", type=int, default=10, help="DDP (t = 0) at d = 20: noise draws per seed")
    p.add_argument(
        "--parts", default="all", choices=("all", "partner"), help="partner: the two-party table only"
    )
    a = p.parse_args()
    partner = pd.DataFrame([row for seed in range(a.seeds) for row in partner_seed(seed)])
    partner.to_csv(OUT / "secagg_partner.csv", index=False)
    print("two parties, d = 20, 2 × 1000 rows: what participant 0 with the server reads of participant 1")
    print(partner.groupby("defence").mean(numeric_only=True).drop(columns="seed").to_string())
    if a.parts == "partner":
        return
    dims = [int(v) for v in a.dims.split(",")]
    rows, scores = [], []
    for seed in range(a.seeds):
        rows += run_seed(seed, dims)
        scores += membership_seed(seed)
        print(f"seed {seed} done", flush=True)
    table = pd.DataFrame(rows)
    sc = pd.DataFrame(scores)
    auc = {
        (dfn, view): roc_auc(g.score.to_numpy(), g.label.to_numpy())
        for (dfn, view), g in sc.groupby(["defence", "view"])
    }
    table.to_csv(OUT / "secagg_defences.csv", index=False)
    spread = pd.DataFrame([row for seed in range(a.seeds) for row in noise_spread(seed, a.noise_draws)])
    se = spread[["tpr", "shd"]].std() / np.sqrt(len(spread))
    print(
        f"SecAgg + DDP (t = 0), d = 20, {a.seeds} seeds × {a.noise_draws} noise draws: TPR "
        f"{spread.tpr.mean():.3f} ± {se.tpr:.3f}, SHD {spread.shd.mean():.2f} ± {se.shd:.2f} "
        f"(mean ± its standard error); per seed:"
    )
    print(spread.groupby("seed")[["tpr", "shd"]].agg(["mean", "min", "max"]).to_string())
    summary = table.groupby(["d", "defence"], sort=False).mean(numeric_only=True).drop(columns="seed")
    print(summary.to_string(float_format=lambda v: f"{v:.3g}"))
    m = len(sc) // (2 * len(DEFENCES) * 2)
    # the AUC of a score unrelated to membership has sd √((m + n + 1)/(12 m n)) for m = n labels
    print(f"membership AUC (m = n = {m} per view; null sd {math.sqrt((2 * m + 1) / (12 * m * m)):.3f}):")
    for (dfn, view), v in auc.items():
        print(f"  {dfn:28s} {view:10s} {v:.3f}")


if __name__ == "__main__":
    main()
