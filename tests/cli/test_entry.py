"""The console entry point limits BLAS to one thread only when the user has not chosen."""

from __future__ import annotations

import os
import subprocess
import sys

from dpbnsl.blas import THREAD_VARIABLES


def _run(env_value):
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    if env_value is not None:
        env["OPENBLAS_NUM_THREADS"] = env_value
    code = (
        "import sys; sys.argv = ['dpbnsl', '--help']\n"
        "import numpy, dpbnsl._entry as e\n"
        "from dpbnsl.blas import blas_threads\n"
        "before = blas_threads()\n"
        "try:\n    e.main()\nexcept SystemExit:\n    pass\n"
        "print(f'BLAS={before}->{blas_threads()}')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    return out.strip().splitlines()[-1]


def test_entry_sets_one_thread_by_default_and_respects_the_user():
    assert _run(None).endswith("->1")
    assert _run("2") == "BLAS=2->2"
