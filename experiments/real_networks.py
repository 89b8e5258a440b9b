"""Every linear learner on real structures and on the simulator, raw and standardised, beside the
sorting baselines and the data's sortability.

Data sets: the bnlearn networks ecoli70 and magic-niab (parameters fitted to real data) and the
package's own simulator (ER graphs with d edges, weights U(±[0.5, 2]), unit Gaussian noise) at
d = 20 and 50. Each is sampled centred ("raw") and divided by its population standard deviations
("standardised": a public scale, from the published or simulated parameters). 10 participants ×
``--sizes`` rows each, held-out seeds 0 … ``--seeds``−1. Private learners run at each ε of
``--epsilons`` with δ = 1e-5 and public bounds read off the data-generating parameters only
(:meth:`~dpbnsl.io.networks.GaussianNetwork.public_bounds`; the same rule for the simulator);
nothing is tuned on these samples. Every learner runs with its registry defaults (threshold 0.3).

With ``--population`` it also fits NOTEARS's least-squares problem to each network's *population*
covariance (no sample at all) on a grid of (λ, threshold): the infinite-sample limit of Fed-BNSL.

    python experiments/real_networks.py [--sizes 1000,10000] [--seeds 5] [--epsilons 1,5] [--jobs 2]
    python experiments/real_networks.py --population

Rows go to ``docs/results/real_networks.csv`` (resumable) and, with ``--population``,
``docs/results/real_networks_population.csv``; Markdown summaries to stdout.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

# _runner limits BLAS to one thread (dpbnsl.blas.single_thread), here and in the workers
import _runner
import numpy as np
import pandas as pd

from dpbnsl.io.networks import GaussianNetwork, load_network
from dpbnsl.learners import notears_local
from dpbnsl.learners.registry import LEARNERS
from dpbnsl.metrics import count_accuracy, r2_sortability, skeleton_scores, varsortability
from dpbnsl.scores import least_squares
from dpbnsl.simulation import simulate_dag, simulate_weights, split

OUT = Path(__file__).resolve().parent.parent / "docs" / "results"
P = 10
DELTA = 1e-5
#: the linear learners of the table (the local-fit combiners notears-voting/-average/-best cost
#: about ten NOTEARS fits per run at d = 46; ``--combiners`` runs them on their own)
PUBLIC = ("notears", "fed-bnsl", "fed-sparse-bnsl", "sortnregress", "r2-sortnregress")
PRIVATE = ("dp-fed-bnsl", "dp-fed-sparse-bnsl", "dp-sortnregress", "dp-r2-sortnregress")
COMBINERS = ("notears-voting", "notears-average", "notears-best")
#: context, not linear: PC on the pooled rows and FedPC (Fisher-z tests), run with the combiners
CONSTRAINT = ("pc", "fed-pc")


def _model(name: str) -> GaussianNetwork:
    """A packaged Gaussian network, or ``sim-erD``: the simulator's design at d = D (graph and
    weights from seed 1000 + D, unit noise), as a network."""
    if name.startswith("sim-er"):
        d = int(name[6:])
        rng = np.random.default_rng(1000 + d)
        W = simulate_weights(simulate_dag(d, s0=d, rng=rng), rng=rng)
        return GaussianNetwork(name, tuple(f"X{i}" for i in range(d)), W, np.zeros(d), np.ones(d))
    net = load_network(name)
    assert isinstance(net, GaussianNetwork)
    return net


def run_one(
    network: str, data: str, n_per: int, seed: int, epsilons: str, combiners: bool, only: tuple = ()
) -> list[dict]:
    """Every learner of the table on one sample (``only``: just these methods)."""
    net = network
    model = _model(net)
    if data == "standardised":
        model = model.standardised()
    X = model.sample(P * n_per, rng=np.random.default_rng([seed, n_per]))
    parts, B = split(X, P), model.B
    bounds = model.public_bounds()
    common = dict(
        network=net,
        data=data,
        n_per=n_per,
        seed=seed,
        varsortability=varsortability(X, B),
        r2_sortability=r2_sortability(X, B),
    )
    if combiners:  # the local-fit baselines alone, into their own CSV
        runs: list[tuple[str, float, dict]] = [(m, np.inf, {}) for m in COMBINERS + CONSTRAINT]
        epsilons = ""
    else:
        runs = [(m, np.inf, {}) for m in PUBLIC]
    for eps in (float(e) for e in epsilons.split(",") if e):
        for m in PRIVATE:
            kw: dict = dict(epsilon=eps, delta=DELTA, rng=np.random.default_rng([seed, n_per, 7]))
            kw.update({k: bounds[k] for k in ("clip_norm", "feature_bound") if k in LEARNERS[m].simulation})
            runs.append((m, eps, kw))
    rows = []
    local = None
    for method, eps, kw in (r for r in runs if not only or r[0] in only):
        entry = LEARNERS[method]
        start = time.process_time()
        if method in COMBINERS:  # the registered functions, on one set of local fits for all three
            if local is None:
                local = notears_local(parts, **entry.defaults)
            r = entry.function(local=local, **({"B_true": B} if entry.oracle else {}))
        else:
            r = entry.run(parts, B_true=B if entry.oracle else None, **kw)
        cpu = time.process_time() - start
        acc, skel = count_accuracy(B, r.W != 0), skeleton_scores(B, r.W != 0)
        rows.append(
            dict(
                common,
                method=method,
                epsilon=eps,
                tpr=acc.tpr,
                fdr=acc.fdr,
                shd=acc.shd,
                nnz=acc.nnz,
                reversed=acc.reversed,
                skeleton_f1=skel.f1,
                cpu_s=round(cpu, 2),
            )
        )
    return rows


def population(nets: list[str]) -> pd.DataFrame:
    """NOTEARS's least-squares problem on the population covariance, (λ, threshold) grid."""
    from dpbnsl.learners.linear.notears import notears_from_gram

    csv = OUT / "real_networks_population.csv"
    rows = []
    for net in nets:
        for data in ("raw", "standardised"):
            model = _model(net) if data == "raw" else _model(net).standardised()
            S = model.covariance()
            truth_loss = _ls_loss(S, model.B)
            for lam in (0.01, 0.001):
                W, _ = notears_from_gram(S, lambda1=lam)
                # NOTEARS's objective at its solution and at the true weights (both acyclic): a
                # lower value at the solution means the score itself prefers a wrong graph
                objective = _objective(S, W, lam), _objective(S, model.W, lam)
                for th in (0.3, 0.1, 0.05):
                    B = (np.abs(W) > th).astype(int)
                    acc, skel = count_accuracy(model.B, B), skeleton_scores(model.B, B)
                    rows.append(
                        dict(
                            network=net,
                            data=data,
                            lambda1=lam,
                            threshold=th,
                            tpr=acc.tpr,
                            fdr=acc.fdr,
                            shd=acc.shd,
                            reversed=acc.reversed,
                            skeleton_f1=skel.f1,
                            ls_loss=_ls_loss(S, B),
                            ls_loss_truth=truth_loss,
                            objective=objective[0],
                            objective_truth=objective[1],
                        )
                    )
                    print(rows[-1], flush=True)
    out = pd.DataFrame(rows)
    out.to_csv(csv, index=False)
    return out


def _objective(S: np.ndarray, W: np.ndarray, lam: float) -> float:
    """NOTEARS's least-squares objective ½ tr((I − W)ᵀ S (I − W)) + λ‖W‖₁ at the covariance S."""
    return least_squares(W, S)[0] + lam * float(np.abs(W).sum())


def _ls_loss(S: np.ndarray, B: np.ndarray) -> float:
    """½ Σ_j the population residual variance of j regressed on its parents in B (the
    least-squares score of the graph B with its best weights)."""
    total = 0.0
    for j in range(S.shape[0]):
        pa = np.flatnonzero(B[:, j])
        total += S[j, j] - (S[j, pa] @ np.linalg.solve(S[np.ix_(pa, pa)], S[pa, j]) if pa.size else 0.0)
    return 0.5 * total


def rerun(methods: tuple, csv: Path) -> pd.DataFrame:
    """Recompute ``methods`` on every sample of ``csv`` and replace their rows (the other
    learners' rows are kept: the samples and the noise seeds are the same)."""
    df = pd.read_csv(csv)
    keep = df[~df["method"].isin(methods)]
    samples = df[["network", "data", "n_per", "seed"]].drop_duplicates().itertuples(index=False)
    eps = ",".join(f"{e:g}" for e in sorted(df.loc[np.isfinite(df["epsilon"]), "epsilon"].unique()))
    fresh = [row for s in samples for row in run_one(*s, epsilons=eps, combiners=False, only=methods)]
    out = pd.concat([keep, pd.DataFrame(fresh)], ignore_index=True)
    out.to_csv(csv, index=False)
    return out


def summary(df: pd.DataFrame) -> None:
    for (net, n_per), block in df.groupby(["network", "n_per"], sort=False):
        print(f"\n### {net}, {P} × {n_per} rows (mean over {block['seed'].nunique()} seeds)\n")
        sort = block.groupby("data")[["varsortability", "r2_sortability"]].mean()
        print(
            "sortability: "
            + "; ".join(
                f"{d}: var {r.varsortability:.2f}, R² {r.r2_sortability:.2f}" for d, r in sort.iterrows()
            )
            + "\n"
        )
        block = block.assign(eps=block["epsilon"].map(lambda e: "—" if np.isinf(e) else f"{e:g}"))
        order = {m: k for k, m in enumerate(PUBLIC + COMBINERS + CONSTRAINT + PRIVATE)}
        block = block.sort_values(
            ["method", "epsilon"], key=lambda c: c.map(order) if c.name == "method" else c
        )
        table = block.groupby(["method", "eps", "data"], sort=False).agg(
            tpr=("tpr", "mean"), fdr=("fdr", "mean"), shd=("shd", "mean"), f1=("skeleton_f1", "mean")
        )
        wide = table.unstack("data")
        cells = pd.DataFrame(index=wide.index)
        for data in ("raw", "standardised"):
            if ("tpr", data) in wide.columns:
                cells[data] = [
                    f"{t:.2f} / {f:.2f} / {s:.1f} / {k:.2f}"
                    for t, f, s, k in zip(
                        wide[("tpr", data)], wide[("fdr", data)], wide[("shd", data)], wide[("f1", data)]
                    )
                ]
        _runner.print_table(cells.reset_index())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--networks", default="ecoli70,magic-niab,sim-er20,sim-er50")
    p.add_argument("--sizes", default="1000,10000")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--epsilons", default="1,5")
    p.add_argument(
        "--combiners",
        action="store_true",
        help="only notears-voting/-average/-best (ten NOTEARS fits per run) and, for context, PC and FedPC",
    )
    p.add_argument("--population", action="store_true", help="the infinite-sample study instead")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument(
        "--rerun", default=None, help="recompute these methods (comma-separated) on every sample of the CSV"
    )
    a = p.parse_args()
    nets = a.networks.split(",")
    if a.population:
        population([n for n in nets if not n.startswith("sim-")])
        return
    if a.rerun:
        summary(rerun(tuple(a.rerun.split(",")), OUT / "real_networks.csv"))
        return
    tasks = [
        dict(network=net, data=data, n_per=int(n), seed=s, epsilons=a.epsilons, combiners=a.combiners)
        for n in a.sizes.split(",")
        for net in nets
        for data in ("raw", "standardised")
        for s in range(a.seeds)
    ]
    csv = OUT / ("real_networks_combiners.csv" if a.combiners else "real_networks.csv")
    df = _runner.run_tasks(run_one, tasks, csv, key=("network", "data", "n_per", "seed"), jobs=a.jobs)
    summary(df)


if __name__ == "__main__":
    main()
