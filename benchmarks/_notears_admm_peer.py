"""Run the authors' NOTEARS-ADMM (Ng & Zhang's reference code) on one saved data set; a child of
``bench_fed_bnsl_peer.py``, run with an interpreter that has PyTorch.

    python _notears_admm_peer.py REPO DATA.npz OUT.npz

``REPO`` is a checkout of the reference code (the directory holding ``notears_admm/``), ``DATA.npz``
holds ``Xs`` of shape (K, n, d). Writes the raw estimate ``W`` and the CPU seconds of the solve alone
(imports excluded) to ``OUT.npz``. One BLAS thread and one PyTorch thread.
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import sys
import time

import numpy as np


def main() -> None:
    repo, data, out = sys.argv[1:4]
    sys.path.insert(0, repo)
    import torch
    from notears_admm.linear_admm import notears_linear_admm

    torch.set_num_threads(1)
    torch.set_default_dtype(torch.double)
    torch.manual_seed(0)  # the solver draws nothing; fixed for completeness
    Xs = np.load(data)["Xs"]
    start = time.process_time()
    W = notears_linear_admm(Xs, lambda1=0.01)
    cpu = time.process_time() - start
    np.savez(out, W=W, cpu=cpu)


if __name__ == "__main__":
    main()
