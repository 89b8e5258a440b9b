"""Run the Priv-PC authors' code (Wang, Pang & Song 2020) on saved data sets; a child of
``bench_priv_pc_peer.py``, run with an interpreter that has their requirements (numpy, scipy,
networkx, gsq).

    python _priv_pc_peer.py SRC JOBS.json OUT.json

``SRC`` is the ``src/`` directory of a checkout of their repository; ``JOBS.json`` lists jobs
``{"data": path of an .npy int matrix, "epsilon": ..., "delta": ..., "alpha": ..., "seed": ...}``.
Each job runs their ``estimate_skeleton_probe_examine`` with their ``discondKendall`` test and the
``max_reach`` rule of their ``eval.py`` (min(⌊log₂ n⌋ − 5, d − 2)), seeding numpy's global generator
(their code draws from it). Writes per job the skeleton's edges, the ε they report after the run,
their test count and the CPU seconds of the skeleton search alone (imports and loading excluded).
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import json
import logging
import sys
import time

import numpy as np


def main() -> None:
    src, jobs_path, out = sys.argv[1:4]
    sys.path.insert(0, src)
    logging.disable(logging.CRITICAL)
    from indep_test import discondKendall
    from pc import estimate_skeleton_probe_examine

    with open(jobs_path) as f:
        jobs = json.load(f)
    data: dict = {}
    results = []
    for job in jobs:
        if job["data"] not in data:
            data[job["data"]] = np.load(job["data"]).astype(int)
        dm = data[job["data"]]
        max_reach = max(min(int(np.log2(dm.shape[0])) - 5, dm.shape[1] - 2), 0)
        np.random.seed(job["seed"])
        start, wall = time.process_time(), time.perf_counter()
        g, _sep, eps, _delta, tests = estimate_skeleton_probe_examine(
            indep_test_func=discondKendall,
            data_matrix=dm,
            alpha=job["alpha"],
            eps=job["epsilon"],
            delta=job["delta"],
            max_reach=max_reach,
        )
        cpu, wall = time.process_time() - start, time.perf_counter() - wall
        results.append(
            dict(
                job,
                edges=[[int(i), int(j)] for i, j in g.edges()],
                reported_epsilon=float(eps),
                tests=int(tests),
                cpu=cpu,
                wall=wall,
            )
        )
        with open(out, "w") as f:  # after every job: a long run can be read while it goes
            json.dump(results, f)


if __name__ == "__main__":
    main()
