"""Agreement of our PC-stable (and its CI tests) with causal-learn's on the same data and α.

causal-learn is *not* a dependency of dpbnsl. Install it in a throwaway environment and run this
script there with the repository on the path, e.g.::

    python3 -m venv /tmp/cl && /tmp/cl/bin/pip install causal-learn dp-accounting
    PYTHONPATH=. /tmp/cl/bin/python experiments/pc_agreement.py [--alpha 0.01] [--seeds 5]

Without causal-learn the script prints a message and exits with status 0.

Compared, per data set: (1) ``max_p_gap``: p-values of the CI tests on 300 random (i, j, S) with
|S| ≤ 3 (largest absolute difference); (2) ``skeleton_diff``: pairs on which the PC-stable
skeletons differ; (3) ``cpdag_diff``: pairs whose status (absent, →, ←, undirected) differs between
the CPDAGs; (4) ``meek_diff``: the same after running *our* Meek R1–R3 on causal-learn's own
post-collider PDAG (isolates the Meek step). Settings: PC-stable, no depth limit; Fisher-z; G² with
causal-learn's rules (adjusted df, no reliability rule, i.e. ``min_samples_per_cell=0``; levels =
max + 1 of the data); causal-learn's ``uc_rule=0, uc_priority=2``, ours ``conflict="first"``.

The separating sets are not the same: in its stable mode causal-learn keeps testing after the
first independent set and declares a collider only if the middle node is in *none* of the sets
found at that level, while ours keeps the first set; and the two visit colliders in different
orders, which matters when colliders conflict (``conflicts``: colliders we skipped). So
``cpdag_diff`` is expected to be 0 only where there are no conflicts and the sepsets agree.

Data: Sachs (the packaged cdt copy, all conditions: 7466 × 11, log), simulated linear-Gaussian
(d = 20, 40 edges, n = 1000), the FedPC authors' 10-node data (Fisher-z, and G² after cutting each
column at its tertiles), simulated discrete networks (d = 15, 15 edges, 2–4 states, n = 2000; G²).
"""

from __future__ import annotations

import argparse
import io
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

# _runner limits BLAS to one thread (dpbnsl.blas.single_thread), here and in the workers
import _runner  # noqa: F401
import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
OUT = ROOT / "docs" / "results"


def _ours(X, test, alpha):
    from dpbnsl.learners.constraint.pc import pc

    return pc(X, alpha=alpha, test=test, variant="stable", min_samples_per_cell=0)


def _theirs(X, test, alpha):
    """causal-learn's PC-stable in its three steps (as ``pc(..., uc_rule=0, uc_priority=2)``).

    Returns the final CPDAG and the PDAG after the collider step (before Meek's rules)."""
    from causallearn.utils.cit import CIT
    from causallearn.utils.PCUtils import Meek, SkeletonDiscovery, UCSepset

    from dpbnsl.io.graph_export import from_causallearn

    cit = CIT(X, "fisherz" if test == "fisher-z" else "gsq")
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        cg1 = SkeletonDiscovery.skeleton_discovery(X, alpha, cit, stable=True, show_progress=False)
        cg2 = UCSepset.uc_sepset(cg1, 2)
        cg = Meek.meek(cg2)
    # the final CPDAG (0/1), and the collider PDAG as (directed, undirected) boolean matrices
    return from_causallearn(cg), from_causallearn(cg2, split=True)


def _pvalue_gap(X, test, seed, n_draws=300):
    from causallearn.utils.cit import CIT

    from dpbnsl.learners.constraint.citests import make_ci_test

    ours = make_ci_test(X, test=test, min_samples_per_cell=0)
    theirs = CIT(X, "fisherz" if test == "fisher-z" else "gsq")
    rng = np.random.default_rng(seed)
    d, gap = X.shape[1], 0.0
    for _ in range(n_draws):
        i, j, *S = rng.choice(d, size=2 + int(rng.integers(0, 4)), replace=False)
        S = [int(s) for s in S]
        gap = max(gap, abs(ours.test(int(i), int(j), S) - theirs(int(i), int(j), S)))
    return gap


def _datasets(seeds):
    from dpbnsl.io.datasets import load_sachs
    from dpbnsl.simulation import simulate
    from dpbnsl.simulation.discrete import simulate_discrete

    sachs, _ = load_sachs(condition="all")  # all 7466 rows, as in the recorded results
    yield "sachs (log)", "fisher-z", np.log(sachs.to_numpy())
    for s in range(seeds):
        yield f"gaussian d=20 seed {s}", "fisher-z", simulate(20, 1000, participants=1, s0=40, rng=s).X
    path = SHARED / "fedpc" / "10nodes_5000.txt"
    if path.is_file():
        X = np.loadtxt(path)
        yield "fedpc 10-node", "fisher-z", X
        cuts = np.quantile(X, [1 / 3, 2 / 3], axis=0)
        D = np.stack([np.searchsorted(cuts[:, k], X[:, k]) for k in range(X.shape[1])], axis=1)
        yield "fedpc 10-node tertiles", "g2", D
    for s in range(seeds):
        rng = np.random.default_rng(100 + s)
        sim = simulate_discrete(15, 2000, s0=15, levels=list(rng.integers(2, 5, 15)), rng=rng)
        yield f"discrete d=15 seed {s}", "g2", sim.X


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--alpha", type=float, default=0.01)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--csv", type=Path, default=OUT / "pc_agreement.csv")
    a = p.parse_args()
    try:
        import causallearn  # noqa: F401
    except ImportError:
        print(
            "causal-learn is not importable here; skipping the comparison (see the module "
            "docstring for how to run it in a throwaway environment)."
        )
        return 0
    rows = []
    for name, test, X in _datasets(a.seeds):
        X = np.asarray(X, dtype=float)
        from dpbnsl.graphs import apply_meek

        ours = _ours(X, test, a.alpha)
        cpdag, (directed, undirected) = _theirs(X, test, a.alpha)
        apply_meek(directed, undirected)  # our Meek R1-R3 on causal-learn's collider PDAG
        skel_o, skel_t = ours.info["skeleton"] != 0, (cpdag | cpdag.T) != 0
        iu = np.triu_indices(X.shape[1], 1)
        status = lambda C: (C != 0).astype(int) + 2 * (C.T != 0).astype(int)
        rows.append(
            dict(
                data=name,
                test=test,
                n=X.shape[0],
                d=X.shape[1],
                edges_ours=int(skel_o[iu].sum()),
                edges_cl=int(skel_t[iu].sum()),
                skeleton_diff=int((skel_o != skel_t)[iu].sum()),
                cpdag_diff=int((status(ours.info["cpdag"]) != status(cpdag))[iu].sum()),
                conflicts=int(ours.info["conflicts"]),
                meek_diff=int((status((directed | undirected).astype(int)) != status(cpdag))[iu].sum()),
                max_p_gap=_pvalue_gap(X, test, seed=len(rows)),
            )
        )
        print(f"# {name}: done", file=sys.stderr, flush=True)
    df = pd.DataFrame(rows)
    OUT.mkdir(parents=True, exist_ok=True)
    df.to_csv(a.csv, index=False)
    print(
        f"alpha = {a.alpha}, PC-stable, causal-learn "
        f"{__import__('importlib.metadata').metadata.version('causal-learn')}"
    )
    print("| " + " | ".join(df.columns) + " |")
    print("|" + "---|" * len(df.columns))
    for r in df.itertuples(index=False):
        print("| " + " | ".join(f"{v:.1e}" if isinstance(v, float) else str(v) for v in r) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
