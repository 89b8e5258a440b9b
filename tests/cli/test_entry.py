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


def _threads_after(code):
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}
    probe = (
        f"{code}\n"
        "import numpy, scipy.linalg\n"
        "from threadpoolctl import threadpool_info\n"
        "print(sorted({i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas'}))"
    )
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def test_single_thread_reaches_blas_libraries_loaded_after_it():
    """``import dpbnsl`` loads no numpy, so a limit set first must also reach the BLAS libraries
    numpy and scipy load later (through the environment, read when each loads)."""
    assert _threads_after("from dpbnsl.blas import single_thread; single_thread()") == "[1]"
