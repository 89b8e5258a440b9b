"""One-run audits of the covariance releases with canary participants: every reading against the
claim for the canaries and against the release's whole claim.

Claimed ε = 4 (δ = 10⁻⁵), d = 60, 40 participants a run; the canary records have random
directions (``dpbnsl.audits.canary_participants``). Settings, each correct and with a 20 % noise
deficit (the negative control):

- ``one``: DP-Fed-BNSL, one canary per participant (the canaries are independent), 900 runs
  (36,000 canaries; ``--one-runs 300`` for 12,000), seed 0;
- ``many``: DP-Fed-BNSL, 30 canaries per participant, 20 runs (24,000 canaries), seeds 0–2;
- ``secure``: the jointly noised release under secure aggregation, 5 canaries per participant
  (200 in each run's one sum), 60 runs (12,000 canaries), seeds 0–2; no deficit control (the
  secure learner's plan has no deficit hook).

Prints one line per audit: what the stated mechanism allows the canaries (μ_c, ε_c) and the
release's claim (ε), the one-run bounds (Steinke–Nasr–Jagielski ε, Gaussian-curve μ), the
canaries read as trials (μ lower bound and its ε(δ); counted in a flag only when the canaries are
independent, one a participant), Andrew et al.'s estimate (two normals, and the shift model's
ε), the flags (``flagged``: the privacy claim refuted; ``mechanism_flagged``: the stated
mechanism refuted), and the CPU seconds; then a summary per setting.

``--one-runs N`` sets the runs of ``one`` (default 900, about 13 CPU-minutes each).

    python experiments/canary_participants.py [--quick] [--only one,many,secure] [--one-runs N]
"""

from __future__ import annotations

import sys

import _runner  # noqa: F401  (one BLAS thread, before numpy)
import pandas as pd

from dpbnsl.audits import canary_participant_audit

QUICK = "--quick" in sys.argv
PARTS = {"one", "many", "secure"}
if "--only" in sys.argv:
    PARTS = set(sys.argv[sys.argv.index("--only") + 1].split(","))
ONE_RUNS = int(sys.argv[sys.argv.index("--one-runs") + 1]) if "--one-runs" in sys.argv else 900


def row(name: str, seed: int, **kwargs) -> dict:
    r = canary_participant_audit(epsilon=4.0, rng=seed, **kwargs)
    est = r.estimate
    out = dict(
        setting=name,
        seed=seed,
        canaries=r.scores.size,
        claim=round(r.claimed_epsilon, 3),
        mu_c=round(r.canary_mu, 3),
        eps_c=round(r.canary_epsilon, 3),
        snj_lb=round(r.snj.epsilon_lb, 3),
        gdp_mu=round(r.gdp.mu_lb, 3),
        trials_mu=None if r.trials is None else round(r.trials.mu_lb, 3),
        trials_lb=None if r.trials is None else round(r.trials.epsilon_lb, 3),
        estimate=None if est is None else round(est.epsilon, 3),
        estimate_shift=None if est is None else round(est.epsilon_shift, 3),
        flagged=r.flagged,
        independent=r.independent,
        mechanism_flagged=r.mechanism_flagged,
        projected=r.projected,
        cpu_s=round(r.cpu_seconds, 1),
    )
    print(out, flush=True)
    return out


def main() -> None:
    seeds = range(1) if QUICK else range(3)
    rows = []
    for deficit in (0.0, 0.2):
        tag = ", 20 % deficit" if deficit else ""
        if "one" in PARTS:
            runs = 10 if QUICK else ONE_RUNS
            rows.append(row("one canary a participant" + tag, 0, runs=runs, noise_deficit=deficit))
        if "many" in PARTS:
            for seed in seeds:
                runs = 2 if QUICK else 20
                name = "30 a participant" + tag
                rows.append(row(name, seed, canaries=30, runs=runs, noise_deficit=deficit))
    if "secure" in PARTS:
        for seed in seeds:
            runs = 4 if QUICK else 60
            kw = dict(learner="dp-fed-bnsl-secure", canaries=5, runs=runs)
            rows.append(row("secure, 5 a participant", seed, **kw))
    df = pd.DataFrame(rows)
    summary = df.groupby("setting", sort=False).agg(
        canaries=("canaries", "first"),
        mu_c=("mu_c", "first"),
        eps_c=("eps_c", "first"),
        trials_mu=("trials_mu", "median"),
        trials_lb=("trials_lb", "median"),
        mechanism_flagged=("mechanism_flagged", "sum"),
        gdp_mu=("gdp_mu", "median"),
        snj_lb=("snj_lb", "median"),
        flagged=("flagged", "sum"),
        estimate=("estimate", "median"),
        shift=("estimate_shift", "median"),
        audits=("seed", "count"),
        cpu_per_audit=("cpu_s", "median"),
    )
    print(summary.to_string())


if __name__ == "__main__":
    main()
