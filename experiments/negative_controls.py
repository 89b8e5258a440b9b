"""The audits' negative-control table: which broken mechanisms each bound flags, and at how many runs.

Two games, each correct and with 10%, 20% and 50% less noise than its claim assumes
(``noise_deficit``), plus two controls on the correct mechanism's scores: "null" (both worlds are
world 0: two independent samples of the same scores) and "reversed" (the scores negated, so that
low means world 1). For each, three seeds at 10⁵ and 10⁶ runs per world, each bound at α = 0.05; a
row is flagged when a bound exceeds the claim it tests.

- The Gaussian-step game (one DP-PGCD gradient release, calibrated to ε = 1 at δ = 10⁻⁵; the score
  is the released value): the μ-GDP trade-off bound (:func:`dpbnsl.audits.gdp_lower_bound`, which
  assumes a Gaussian trade-off curve) and the assumption-free Clopper–Pearson bound
  (:func:`dpbnsl.audits.clopper_pearson_bound`, both directions), against ε = 1.
- The selection game (one DP-PGCD selection, ε₀ = 1 bounded-range; the score is the selected
  coordinate's log-likelihood ratio): the bound on the bounded-range parameter
  (:func:`dpbnsl.audits.bounded_range_lower_bound`, assumption-free) against ε₀ = 1, and
  Clopper–Pearson against the selection's ε(δ) = 0.995, both with the split rule ``audit()`` uses
  for scores with few distinct values.

    python experiments/negative_controls.py            # about 15 s; writes the tables below
    python experiments/negative_controls.py --seeds 5

Writes ``docs/results/negative_controls.md`` (the tables are also printed).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import datetime
import statistics
from pathlib import Path
from typing import Any

import numpy as np

from dpbnsl.audits import bounded_range_lower_bound, clopper_pearson_bound, gdp_lower_bound
from dpbnsl.audits.games import gaussian_step_game, run_game

OUT = Path(__file__).resolve().parent.parent / "docs" / "results" / "negative_controls.md"
EPS, DELTA = 1.0, 1e-5
ROWS = (
    ("correct", 0.0, "plain"),
    ("10% less noise", 0.1, "plain"),
    ("20% less noise", 0.2, "plain"),
    ("50% less noise", 0.5, "plain"),
    ("null (world 0 twice)", 0.0, "null"),
    ("reversed scores", 0.0, "reversed"),
)


def _game(game: str, deficit: float, trials: int, seed: int) -> Any:
    if game == "gaussian-step":
        return gaussian_step_game(epsilon=EPS, delta=DELTA, trials=trials, noise_deficit=deficit, rng=seed)
    return run_game("selection", epsilon=EPS, delta=DELTA, trials=trials, noise_deficit=deficit, rng=seed)


def scores(
    game: str, deficit: float, kind: str, trials: int, seed: int
) -> tuple[np.ndarray, np.ndarray, float]:
    """World-0 and world-1 scores, and the game's claimed ε(δ)."""
    g = _game(game, deficit, trials, seed)
    if kind == "null":
        return g.scores0, _game(game, 0.0, trials, 10_000 + seed).scores0, g.claimed_epsilon
    if kind == "reversed":
        return -g.scores0, -g.scores1, g.claimed_epsilon
    return g.scores0, g.scores1, g.claimed_epsilon


def bounds(
    game: str, s0: np.ndarray, s1: np.ndarray, claimed: float, seed: int
) -> tuple[float, float, float]:
    """The shape-aware bound and Clopper–Pearson, each as (value, claim it is compared with)."""
    if game == "gaussian-step":
        shaped = gdp_lower_bound(s0, s1, delta=DELTA).epsilon_lb
        cp = clopper_pearson_bound(s0, s1, delta=DELTA, direction="both").epsilon_lb
        return shaped, cp, claimed
    shaped = bounded_range_lower_bound(s0, s1, rule="split", rng=seed).epsilon0_lb
    cp = clopper_pearson_bound(s0, s1, delta=DELTA, rule="split", direction="both", rng=seed).epsilon_lb
    return shaped, cp, claimed


def cell(values: list[float], claim: float) -> str:
    flagged = sum(v > claim for v in values)
    return f"{statistics.median(values):.3f} ({min(values):.3f}–{max(values):.3f}); {flagged}/{len(values)}"


GAMES = {
    # game: (the shape-aware bound's column name, the claims in the table's heading)
    "gaussian-step": ("μ-GDP bound", "claim ε = 1"),
    "selection": ("bounded-range bound (vs ε₀ = 1)", "claim ε₀ = 1, ε(δ) = 0.995"),
}


def table(game: str, seeds: int, sizes: list[int]) -> tuple[list[str], str, int]:
    shaped_name, claim_label = GAMES[game]
    lines = [
        f"| mechanism ({claim_label}) | runs per world | {shaped_name}: median ε_lb (range); flagged "
        "| Clopper–Pearson: median ε_lb (range); flagged |",
        "|---|---|---|---|",
    ]
    smallest: dict[tuple[str, int], float] = {}  # (bound, runs) -> smallest deficit flagged on every seed
    false_alarms = 0  # flags of a correct mechanism (its scores, null or reversed)
    for name, deficit, kind in ROWS:
        for n in sizes:
            shaped, cp = [], []
            claimed = EPS
            for seed in range(seeds):
                s0, s1, claimed = scores(game, deficit, kind, n, seed)
                a, b, claimed = bounds(game, s0, s1, claimed, seed)
                shaped.append(a)
                cp.append(b)
            claims = (EPS, claimed)  # the shape-aware bound tests ε (GDP) or ε₀ (BR) = 1
            if deficit == 0:
                false_alarms += sum(v > claims[0] for v in shaped) + sum(v > claims[1] for v in cp)
            for bound, values, claim in (
                (shaped_name, shaped, claims[0]),
                ("Clopper–Pearson", cp, claims[1]),
            ):
                if kind == "plain" and deficit > 0 and min(values) > claim:
                    smallest[bound, n] = min(deficit, smallest.get((bound, n), 1.0))
            lines.append(f"| {name} | {n:,} | {cell(shaped, claims[0])} | {cell(cp, claims[1])} |")
            print(lines[-1], flush=True)
    reading = "; ".join(
        f"{bound} at {n:,} runs: "
        + (f"{smallest[bound, n]:.0%} less noise and more" if (bound, n) in smallest else "none of them")
        for bound in (shaped_name, "Clopper–Pearson")
        for n in sizes
    )
    return lines, reading, false_alarms


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--trials", default="100000,1000000")
    a = p.parse_args()
    sizes = [int(v) for v in a.trials.split(",")]
    gauss, gauss_reading, gauss_alarms = table("gaussian-step", a.seeds, sizes)
    sel, sel_reading, sel_alarms = table("selection", a.seeds, sizes)
    text = f"""# Negative controls of the audits

Which broken mechanisms the audit bounds flag, and at how many runs. Regenerate with

```bash
python experiments/negative_controls.py --seeds {a.seeds}
```

Each game correct and with 10%, 20% and 50% less noise than its claim assumes; "null" compares
two independent samples of world 0's scores; "reversed" negates the correct mechanism's scores.
{a.seeds} seeds per cell, α = 0.05. Flagged = ε_lb above the claim the bound tests.

## A Gaussian release

The Gaussian-step game (`gaussian_step_game`: one DP-PGCD gradient release calibrated to ε = 1 at
δ = 10⁻⁵; the score is the released value). The μ-GDP bound (`gdp_lower_bound`, its default rule:
the area under the scores' ROC curve) assumes the mechanism's trade-off curve is Gaussian, which
holds for this game; Clopper–Pearson (`clopper_pearson_bound`, both directions) assumes nothing.

{chr(10).join(gauss)}

Noise deficits flagged on every seed: {gauss_reading}. Flags of the correct mechanism (its own,
null and reversed rows, both bounds): {gauss_alarms} (each bound's failure rate is α = 5%).

## A selection

The selection game (one DP-PGCD selection by the exponential mechanism, ε₀ = 1 bounded-range, whose
ε(δ) at δ = 10⁻⁵ is 0.995; the score is the log-likelihood ratio of the selected coordinate, six
distinct values). The bounded-range bound (`bounded_range_lower_bound`) tests ε₀ and assumes
nothing; Clopper–Pearson tests ε(δ). Both use the split rule, as `audit()` does for scores with few
distinct values. A deficit p widens the selection's privacy loss to ε₀/(1 − p): 1.11, 1.25 and 2.

{chr(10).join(sel)}

Noise deficits flagged on every seed: {sel_reading}. Flags of the correct mechanism (its own, null
and reversed rows, both bounds): {sel_alarms}. Generated {datetime.date.today().isoformat()}.
"""
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.name}")


if __name__ == "__main__":
    main()
