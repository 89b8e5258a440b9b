"""The clip-and-sum kernel of DP-PGCD's clipped data gradient: the numba and numpy backends give
the same bits on any input, the compiled one does not branch on the data, and the backend choice
fails cleanly. The numba tests are skipped where numba is not installed (the ``fast`` extra; CI
installs it in a later stage and runs this file and the pinned scores again)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dpbnsl.accounting import PrivacyLedger
from dpbnsl.learners.linear.pgcd import PGCDNoise, pgcd
from dpbnsl.mechanisms import ClippedProductSums, clip_kernel, clipped_products


def _numba_or_skip():
    pytest.importorskip("numba")
    kernel, why = clip_kernel.numba_kernel()
    if kernel is None:
        pytest.skip(why)
    return kernel


def _sums(backend, X, bounds, rs):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(clip_kernel.ENV, backend)
        sums = ClippedProductSums(X, bounds)
    assert sums.backend == backend
    return [sums(r) for r in rs]


def _bits(a):
    return [float(x).hex() for x in np.asarray(a).ravel()]


values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(-10, 10),
    st.sampled_from([0.0, -0.0, 1e-310, -1e-310, 1e300, -1e300]),
)


@settings(max_examples=150, deadline=None)
@given(
    X=hnp.arrays(np.float64, st.tuples(st.integers(0, 40), st.integers(1, 7)), elements=values),
    data=st.data(),
)
def test_the_backends_give_the_same_bits(X, data):
    """Any X and r (NaN, ±∞, subnormals, huge) and any non-negative bounds, C- or F-ordered."""
    _numba_or_skip()
    n, d = X.shape
    bounds = data.draw(
        hnp.arrays(np.float64, d, elements=st.floats(0, 1e308) | st.sampled_from([0.0, 1e-300]))
    )
    rs = [data.draw(hnp.arrays(np.float64, n, elements=values)) for _ in range(2)]
    if data.draw(st.booleans()):
        X = np.asfortranarray(X)
    with np.errstate(all="ignore"):
        fast = _sums("numba", X, bounds, rs)
        slow = _sums("numpy", X, bounds, rs)
        for r, a, b in zip(rs, fast, slow):
            reference = np.zeros(d)  # the rows added in order to 0
            for row in clipped_products(X, r, bounds):
                reference = reference + row
            assert _bits(a) == _bits(b) == _bits(reference)  # signed zeros included
            # each term is within its bound; the n − 1 roundings of the sum add ≤ (n − 1)·ulp
            assert np.all(np.abs(a) <= n * bounds * (1 + 2 * n * np.finfo(float).eps))


def test_a_dp_pgcd_run_is_the_same_on_both_backends(monkeypatch):
    """The whole solver: the same selections, B and ledger on the compiled and the numpy kernel."""
    _numba_or_skip()
    rng = np.random.default_rng(11)
    n, d = 120, 9
    X = rng.normal(size=(n, d))
    X[5] *= 40  # a record whose gradients clip
    m = (X**2).mean(axis=0)
    Z = np.zeros((d, d))
    runs = {}
    for backend in ("numba", "numpy"):
        monkeypatch.setenv(clip_kernel.ENV, backend)
        ledger = PrivacyLedger()
        r = pgcd(
            X, Z, Z, Z, iters=300, lambda1=0.05, rho2=1.0, m=m,
            noise=PGCDNoise(clip=1.0, multiplier=3.0), rng=np.random.default_rng(5), ledger=ledger,
        )  # fmt: skip
        runs[backend] = (_bits(r.B), r.selected.tolist(), ledger.epsilon(1e-5))
    assert runs["numba"] == runs["numpy"]


def test_the_compiled_kernel_does_not_branch_on_the_data():
    """Constant work: the compiled loop clips with min/max and selects (masks), never with a
    floating-point comparison that sets flags for a jump (ucomisd/comisd): its only branches are
    on the loop counters and on where the arrays lie in memory."""
    kernel = _numba_or_skip()
    asm = "\n".join(kernel.inspect_asm().values())
    assert re.search(r"\bv?(min|max)[ps]d\b", asm)  # the clipping is there...
    assert not re.search(r"\bv?u?comis[sd]\b", asm)  # ...and no float compare feeds a jump


def test_the_backend_choice(monkeypatch):
    monkeypatch.setenv(clip_kernel.ENV, "numpy")
    assert clip_kernel.backend() == "numpy"
    monkeypatch.setenv(clip_kernel.ENV, " NumPy ")
    assert clip_kernel.backend() == "numpy"
    monkeypatch.setenv(clip_kernel.ENV, "fortran")
    with pytest.raises(ValueError, match=r"DPBNSL_KERNEL must be 'auto', 'numpy' or 'numba'; got 'fortran'"):
        clip_kernel.backend()
    with pytest.raises(ValueError, match="DPBNSL_KERNEL"):  # at the start of a run, not in it
        ClippedProductSums(np.ones((3, 2)), np.ones(2))
    # numba missing (or failing): auto falls back to numpy; asking for numba is a clean error
    monkeypatch.setattr(clip_kernel, "numba_kernel", lambda: (None, "numba is not installed"))
    monkeypatch.setenv(clip_kernel.ENV, "auto")
    assert clip_kernel.backend() == "numpy"
    monkeypatch.delenv(clip_kernel.ENV)
    assert clip_kernel.backend() == "numpy"
    monkeypatch.setenv(clip_kernel.ENV, "numba")
    with pytest.raises(ValueError, match=r"numba is not installed; install the fast extra"):
        clip_kernel.backend()


def test_auto_takes_numba_when_it_is_installed(monkeypatch):
    _numba_or_skip()
    monkeypatch.delenv(clip_kernel.ENV, raising=False)
    assert clip_kernel.backend() == "numba"
    assert ClippedProductSums(np.ones((4, 3)), np.ones(3)).backend == "numba"


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_no_rows_and_read_only_inputs(monkeypatch, backend):
    if backend == "numba":
        _numba_or_skip()
    monkeypatch.setenv(clip_kernel.ENV, backend)
    assert _bits(ClippedProductSums(np.empty((0, 3)), np.ones(3))(np.empty(0))) == _bits(np.zeros(3))
    X = np.arange(12.0).reshape(4, 3)
    X.setflags(write=False)
    r = np.array([1.0, -1.0, 0.5, math.inf])
    r.setflags(write=False)
    got = ClippedProductSums(X, np.array([2.0, 3.0, 100.0]))(r)
    # rows: [0,1,2], −[3,4,5], 0.5·[6,7,8], ∞·[9,10,11]; clipped at 2, 3, 100
    np.testing.assert_array_equal(got, [0 - 2 + 2 + 2, 1 - 3 + 3 + 3, 2 - 5 + 4 + 100])


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_one_column_is_added_in_row_order(monkeypatch, backend):
    """One column is contiguous, and numpy would sum it pairwise (one ulp apart here, with numpy
    2.4: found by the property test above); both kernels add the rows in order."""
    if backend == "numba":
        _numba_or_skip()
    monkeypatch.setenv(clip_kernel.ENV, backend)
    bound = 9.18110275e-301
    got = ClippedProductSums(np.ones((8, 1)), np.array([bound]))(np.r_[0.0, np.ones(7)])
    want = 0.0
    for _ in range(7):
        want += bound
    assert got.tolist() == [want]


def test_signed_zeros_agree():
    """All terms −0.0: both kernels start from 0 and return +0.0 (numpy's reduction identity)."""
    X = np.array([[0.0, -1.0], [0.0, -2.0], [0.0, -3.0]])
    for backend in ("numpy", "numba"):
        if backend == "numba" and clip_kernel.numba_kernel()[0] is None:
            continue
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(clip_kernel.ENV, backend)
            got = ClippedProductSums(X, np.ones(2))(X[:, 1])
        assert _bits(got) == _bits([0.0, 3.0]), backend


class _Recorder:
    """numpy, recording each function called and the shapes and dtypes of its array arguments."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        real = getattr(np, name)
        if not callable(real) or isinstance(real, type):
            return real
        return _Recorded(self.calls, name, real)


class _Recorded:
    """A numpy function (or ufunc, with its methods such as ``reduce``) that records its calls."""

    def __init__(self, calls, name, real):
        self.calls, self.name, self.real = calls, name, real

    def __call__(self, *args, **kwargs):
        sig = tuple((a.shape, a.dtype.str) if isinstance(a, np.ndarray) else type(a).__name__ for a in args)
        kw = tuple(sorted((k, getattr(v, "shape", type(v).__name__)) for k, v in kwargs.items()))
        self.calls.append((self.name, sig, kw))
        return self.real(*args, **kwargs)

    def __getattr__(self, method):
        return _Recorded(self.calls, f"{self.name}.{method}", getattr(self.real, method))


def test_the_numpy_kernel_makes_the_same_calls_whatever_the_data(monkeypatch):
    """Every call clips every row and zeroes NaN on every call: the same numpy functions on the same
    shapes for ordinary residuals, outlying ones, and residuals that overflowed to ±∞ or NaN (a
    pass run only for some data would reveal, through the run time, that a record is extreme)."""
    monkeypatch.setenv(clip_kernel.ENV, "numpy")
    rng = np.random.default_rng(6)
    X = rng.normal(size=(50, 4))
    sums = ClippedProductSums(X, np.full(4, 1.0))
    residuals = [1e-6 * rng.normal(size=50), rng.normal(size=50), 1e6 * rng.normal(size=50)]
    residuals += [np.where(np.arange(50) == 3, v, 0.1) for v in (np.inf, -np.inf, np.nan, 1e308)]
    seen = []
    for r in residuals:
        recorder = _Recorder()
        monkeypatch.setattr(clip_kernel, "np", recorder)
        with np.errstate(all="ignore"):
            sums(r)
        monkeypatch.setattr(clip_kernel, "np", np)
        seen.append(recorder.calls)
    assert seen[0] and all(calls == seen[0] for calls in seen)
    assert {c[0] for c in seen[0]} >= {"multiply", "minimum", "maximum", "isnan", "copyto"}


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_shapes_and_bounds_are_checked(monkeypatch, backend):
    """Public API: bounds of the wrong length would read the wrong memory in the compiled kernel."""
    if backend == "numba":
        _numba_or_skip()
    monkeypatch.setenv(clip_kernel.ENV, backend)
    X = np.ones((4, 3))
    with pytest.raises(ValueError, match=r"`bounds` must have shape \(3,\); got \(1,\)"):
        ClippedProductSums(X, np.ones(1))
    for bad in (np.array([1.0, -1.0, 1.0]), np.array([1.0, np.nan, 1.0])):
        with pytest.raises(ValueError, match="non-negative"):
            ClippedProductSums(X, bad)
    sums = ClippedProductSums(X, np.ones(3))
    with pytest.raises(ValueError, match=r"`r` must have shape \(4,\); got \(2,\)"):
        sums(np.ones(2))


def _child(code, env):
    import os
    import subprocess
    import sys

    full = {**os.environ, **env}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)


def test_a_broken_numba_falls_back_or_fails_cleanly(tmp_path):
    """numba that raises OSError on import (llvmlite refused executable memory): auto falls back to
    numpy with one warning; DPBNSL_KERNEL=numba is a clean error that says why."""
    fake = tmp_path / "numba"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise OSError('executable memory is not allowed')\n")
    code = (
        "import warnings\n"
        "from dpbnsl.mechanisms import clip_kernel\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    print(clip_kernel.backend(), clip_kernel.backend(), len(w), str(w[0].message) if w else '')\n"
    )
    out = _child(code, {"PYTHONPATH": str(tmp_path), "DPBNSL_KERNEL": "auto"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("numpy numpy 1 numba failed to import (OSError: executable memory")
    code = "from dpbnsl.mechanisms import clip_kernel\nclip_kernel.backend()\n"
    out = _child(code, {"PYTHONPATH": str(tmp_path), "DPBNSL_KERNEL": "numba"})
    assert out.returncode == 1 and "DPBNSL_KERNEL=numba, but numba failed to import (OSError" in out.stderr


def test_numba_with_its_compiler_disabled_is_not_taken_for_compiled():
    pytest.importorskip("numba")
    code = "from dpbnsl.mechanisms import clip_kernel\nprint(clip_kernel.backend())\n"
    out = _child(code, {"NUMBA_DISABLE_JIT": "1", "DPBNSL_KERNEL": "auto"})
    assert out.returncode == 0 and out.stdout.strip() == "numpy", out.stderr


def test_a_bad_choice_stops_a_private_run_before_any_release(monkeypatch):
    """The participants read DPBNSL_KERNEL when they are built: no ledger entry, no release."""
    from dpbnsl import dp_fed_sparse_bnsl
    from dpbnsl.simulation import simulate

    monkeypatch.setenv(clip_kernel.ENV, "bogus")
    sim = simulate(4, 200, participants=2, rng=0)
    with pytest.raises(ValueError, match="DPBNSL_KERNEL must be"):
        dp_fed_sparse_bnsl(
            sim.participants, epsilon=1.0, delta=1e-5, centre="private", feature_bound=9.0, rng=0
        )
