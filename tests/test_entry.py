"""The console entry point pins BLAS threads only when the user has not chosen."""

from __future__ import annotations

import os
import subprocess
import sys


def _run(env_value):
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if env_value is not None:
        env["OPENBLAS_NUM_THREADS"] = env_value
    code = ("import os, sys; sys.argv = ['dpbnsl', '--help']\n"
            "import dpbnsl._entry as e\n"
            "try:\n    e.main()\nexcept SystemExit:\n    pass\n"
            "print('BLAS=' + os.environ['OPENBLAS_NUM_THREADS'])")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    return out.strip().splitlines()[-1]


def test_entry_sets_one_thread_by_default_and_respects_the_user():
    assert _run(None) == "BLAS=1"
    assert _run("2") == "BLAS=2"
