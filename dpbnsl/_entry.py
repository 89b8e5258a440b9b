"""The ``dpbnsl`` console script: one BLAS thread (unless the user chose a count in the
environment), then the CLI. See :mod:`dpbnsl.blas` for why; the library itself never changes the
thread settings on import."""

from __future__ import annotations

import sys


def main() -> int:
    from .blas import single_thread
    from .cli import main as cli_main

    single_thread()
    return cli_main()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
