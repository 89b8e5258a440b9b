"""The ``dpbnsl`` console script: pin BLAS to one thread (unless the user chose otherwise) before
numpy is imported, then run the CLI.

The learners make thousands of BLAS calls on small matrices; multithreaded OpenBLAS gains nothing
on them and, when another process holds a core, becomes orders of magnitude slower. The library
itself never changes the environment; only this command-line entry point does.
"""

from __future__ import annotations

import os
import sys


def main() -> int:
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    from .cli import main as cli_main

    return cli_main()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
