"""Bad input through the Python API: every case raises ValueError or TypeError (or dp-accounting's
UnsupportedEventError for an event type the ledger does not know) whose message names the
parameter, leaves its inputs unchanged, and answers at once (a hang guard aborts after 60 s).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from dp_accounting import (
    ComposedDpEvent,
    GaussianDpEvent,
    LaplaceDpEvent,
    PoissonSampledDpEvent,
    SelfComposedDpEvent,
    UnsupportedEventError,
)
from dp_accounting.dp_event import DiscreteLaplaceDpEvent

import dpbnsl
from dpbnsl.accounting import (
    BoundedRangeDpEvent,
    PrivacyLedger,
    calibrate_dp_pgcd,
    calibrate_gaussian,
    calibrate_smoothness,
    epsilon_to_rho,
    rho_to_epsilon,
)
from dpbnsl.audits.tradeoff import sweep
from dpbnsl.audits.verdict import audit
from dpbnsl.learners import dp_fed_bnsl, dp_fed_sparse_bnsl, fed_bnsl, fed_sparse_bnsl, notears, personalize
from dpbnsl.learners.linear.dp_fed_sparse_bnsl import default_schedule
from dpbnsl.learners.linear.dp_fed_sparse_bnsl import plan as plan_sparse
from dpbnsl.learners.linear.pgcd import PGCDNoise
from dpbnsl.mechanisms import clip_rows, gaussian_mechanism

_RNG = np.random.default_rng(0)
X = _RNG.normal(size=(60, 4))
Y = _RNG.normal(size=(60, 4))
DUP = pd.DataFrame(X, columns=["a", "a", "b", "c"])
W0 = np.zeros((4, 4))
INPUTS = {"X": X, "Y": Y, "W0": W0}
SNAPSHOT = {k: v.copy() for k, v in INPUTS.items()}
DP = dict(epsilon=1.0, delta=1e-5)


@pytest.fixture(autouse=True)
def _no_hang(hang_guard):
    """Every case answers at once (see ``hang_guard`` in conftest)."""


def _pld(delta):
    ledger = PrivacyLedger(accountant="pld")
    ledger.record("g", GaussianDpEvent(3.0))
    ledger.record("l", LaplaceDpEvent(3.0))  # not Gaussian-only: dp-accounting's PLD, whose tails end
    return ledger.epsilon(delta)


def _ledger_record(event, **kw):
    PrivacyLedger().record("x", event, **kw)


CASES = {
    # --- privacy targets: refused outside [1e-6, 100], never a hang or an overflow -----------
    "calibrate_gaussian eps 1e6": (lambda: calibrate_gaussian(1e6, 1e-5), ValueError, "`epsilon`"),
    "calibrate_gaussian eps 1e-300": (lambda: calibrate_gaussian(1e-300, 1e-5), ValueError, "`epsilon`"),
    "calibrate_gaussian eps nan": (lambda: calibrate_gaussian(math.nan, 1e-5), ValueError, "`epsilon`"),
    "calibrate_gaussian delta 0": (lambda: calibrate_gaussian(1.0, 0.0), ValueError, "`delta`"),
    "calibrate_gaussian eps str": (lambda: calibrate_gaussian("1", 1e-5), TypeError, "`epsilon`"),
    "calibrate_dp_pgcd eps 1e308": (
        lambda: calibrate_dp_pgcd(1e308, 1e-5, rounds=10, local_iters=10),
        ValueError,
        "`epsilon`",
    ),
    "calibrate_dp_pgcd eps 1e-10": (
        lambda: calibrate_dp_pgcd(1e-10, 1e-5, rounds=100, local_iters=10),
        ValueError,
        "`epsilon`",
    ),
    "calibrate_dp_pgcd prior ints": (
        lambda: calibrate_dp_pgcd(1.0, 1e-5, rounds=10, local_iters=10, prior=[1, 2]),
        TypeError,
        "`prior`",
    ),
    "calibrate_dp_pgcd prior str": (
        lambda: calibrate_dp_pgcd(1.0, 1e-5, rounds=10, local_iters=10, prior="ab"),
        TypeError,
        "`prior`",
    ),
    "calibrate_dp_pgcd rounds 0": (
        lambda: calibrate_dp_pgcd(1.0, 1e-5, rounds=0, local_iters=1),
        ValueError,
        "`rounds`",
    ),
    "calibrate_dp_pgcd rounds float": (
        lambda: calibrate_dp_pgcd(1.0, 1e-5, rounds=1.5, local_iters=1),
        TypeError,
        "`rounds`",
    ),
    "calibrate_smoothness eps 1e308": (
        lambda: calibrate_smoothness(1e308, 1e-5, d=10),
        ValueError,
        "`epsilon`",
    ),
    "calibrate_smoothness d 0": (lambda: calibrate_smoothness(1.0, 1e-5, d=0), ValueError, "`d`"),
    "rho_to_epsilon rho -1": (lambda: rho_to_epsilon(-1.0, 1e-5), ValueError, "`rho`"),
    "epsilon_to_rho delta 2": (lambda: epsilon_to_rho(1.0, 2.0), ValueError, "`delta`"),
    # --- the ledger ----------------------------------------------------------------------------
    "from_json not json": (lambda: PrivacyLedger.from_json("{"), ValueError, "`text`"),
    "from_json empty object": (lambda: PrivacyLedger.from_json("{}"), ValueError, "`text`"),
    "from_json list": (lambda: PrivacyLedger.from_json("[]"), ValueError, "`text`"),
    "from_json bad entry": (
        lambda: PrivacyLedger.from_json('{"accountant": "rdp", "budget": null, "entries": [{"label": "x"}]}'),
        ValueError,
        "`text`: entry 0",
    ),
    "from_json bad fields": (
        lambda: PrivacyLedger.from_json(
            '{"accountant": "rdp", "budget": null, "entries": [{"label": "x", "count": 1, '
            '"event": {"type": "GaussianDpEvent", "sigma": 1}}]}'
        ),
        ValueError,
        "`text`: entry 0",
    ),
    "from_json number": (lambda: PrivacyLedger.from_json(42), TypeError, "`text`"),
    "from_json bad accountant": (
        lambda: PrivacyLedger.from_json('{"accountant": "xyz", "budget": null, "entries": []}'),
        ValueError,
        "`accountant`",
    ),
    "ledger discrete Laplace": (
        lambda: _ledger_record(DiscreteLaplaceDpEvent(1.0, 1)),
        ValueError,
        "`event` of type DiscreteLaplaceDpEvent",
    ),
    "ledger composed discrete Laplace": (
        lambda: _ledger_record(ComposedDpEvent([GaussianDpEvent(1.0), DiscreteLaplaceDpEvent(1.0, 1)])),
        UnsupportedEventError,
        "`event` of type DiscreteLaplaceDpEvent",
    ),
    "ledger sampled selection": (
        lambda: _ledger_record(PoissonSampledDpEvent(0.1, BoundedRangeDpEvent(1.0))),
        UnsupportedEventError,
        "must sample Gaussian or Laplace releases",
    ),
    "ledger array multiplier": (
        lambda: _ledger_record(GaussianDpEvent(np.array([1.0, 2.0]))),
        TypeError,
        "`noise_multiplier`",
    ),
    "ledger count 0": (lambda: _ledger_record(GaussianDpEvent(1.0), count=0), ValueError, "`count`"),
    "ledger empty label": (lambda: PrivacyLedger().record("", GaussianDpEvent(1.0)), TypeError, "`label`"),
    "ledger budget pair": (lambda: PrivacyLedger(budget=(1.0,)), TypeError, "`budget`"),
    # --- learners ------------------------------------------------------------------------------
    "duplicate DataFrame columns": (
        lambda: fed_bnsl([DUP, DUP]),
        ValueError,
        "`participants` (participant 0) has duplicate column names",
    ),
    "duplicate columns fed_pc": (
        lambda: dpbnsl.learners.fed_pc([DUP, DUP]),
        ValueError,
        "`participants` (participant 0) has duplicate column names",
    ),
    "pld accountant delta 1e-20": (lambda: _pld(1e-20), ValueError, "`delta` = 1e-20"),
    "duplicate columns notears": (lambda: notears(DUP), ValueError, "`X` has duplicate column"),
    "(10, 0) notears": (lambda: notears(np.zeros((10, 0))), ValueError, "`X` must have at least"),
    "(10, 0) fed_bnsl": (lambda: fed_bnsl([np.zeros((10, 0))]), ValueError, "`participants`"),
    "participants a string": (lambda: fed_bnsl("abc"), TypeError, "`participants`"),
    "participants empty": (lambda: fed_bnsl([]), ValueError, "`participants`"),
    "centre yes": (lambda: fed_sparse_bnsl([X, Y], centre="yes", rounds=2), TypeError, "`centre`"),
    "centre 1 personalize": (lambda: personalize([X], W0, centre=1), TypeError, "`centre`"),
    "centre no notears": (lambda: notears(X, centre="no"), TypeError, "`centre`"),
    "max_rounds 1e7": (lambda: fed_bnsl([X, Y], max_rounds=10**7), ValueError, "`max_rounds`"),
    "dp_fed_bnsl centre_share 5": (
        lambda: dp_fed_bnsl([X, Y], **DP, centre_share=5),
        ValueError,
        "`centre_share`",
    ),
    "dp_fed_bnsl eps 0": (lambda: dp_fed_bnsl([X, Y], epsilon=0.0, delta=1e-5), ValueError, "`epsilon`"),
    "dp_fed_bnsl eps 1e308": (
        lambda: dp_fed_bnsl([X, Y], epsilon=1e308, delta=1e-5),
        ValueError,
        "`epsilon`",
    ),
    "dp_fed_bnsl delta 1": (lambda: dp_fed_bnsl([X, Y], epsilon=1.0, delta=1.0), ValueError, "`delta`"),
    "dp_fed_bnsl clip_norm nan": (
        lambda: dp_fed_bnsl([X, Y], **DP, clip_norm=math.nan),
        ValueError,
        "`clip_norm`",
    ),
    "dp_fed_bnsl rng str": (lambda: dp_fed_bnsl([X, Y], **DP, rng="abc"), TypeError, "`rng`"),
    "dp_fed_bnsl rng negative": (lambda: dp_fed_bnsl([X, Y], **DP, rng=-1), ValueError, "`rng`"),
    "dp_fed_sparse eps 1e-300": (
        lambda: dp_fed_sparse_bnsl([X, Y], epsilon=1e-300, delta=1e-5, feature_bound=10.0),
        ValueError,
        "`epsilon`",
    ),
    "dp_fed_sparse eps 1e308": (
        lambda: dp_fed_sparse_bnsl([X, Y], epsilon=1e308, delta=1e-5, feature_bound=10.0),
        ValueError,
        "`epsilon`",
    ),
    "dp_fed_sparse rounds 1e12": (
        lambda: dp_fed_sparse_bnsl([X, Y], **DP, feature_bound=10.0, rounds=10**12),
        ValueError,
        "`rounds`",
    ),
    "dp_fed_sparse clip_scheme": (
        lambda: dp_fed_sparse_bnsl([X, Y], **DP, feature_bound=10.0, clip_scheme="global"),
        ValueError,
        "`clip_scheme`",
    ),
    "dp_fed_sparse warm_start": (
        lambda: dp_fed_sparse_bnsl([X, Y], **DP, feature_bound=10.0, warm_start="yes"),
        ValueError,
        "`warm_start`",
    ),
    "dp_fed_sparse warm_share 1": (
        lambda: dp_fed_sparse_bnsl([X, Y], **DP, feature_bound=10.0, warm_share=1.0),
        ValueError,
        "`warm_share`",
    ),
    "dp_fed_sparse warm_share nan": (
        lambda: dp_fed_sparse_bnsl([X, Y], **DP, feature_bound=10.0, warm_share=float("nan")),
        ValueError,
        "`warm_share`",
    ),
    "dp_fed_sparse warm_clip_norm inf": (
        lambda: dp_fed_sparse_bnsl([X, Y], **DP, feature_bound=10.0, warm_clip_norm=float("inf")),
        ValueError,
        "`warm_clip_norm`",
    ),
    "dp_fed_sparse warm_clip_norm 1e308": (
        lambda: dp_fed_sparse_bnsl([X, Y], **DP, feature_bound=10.0, warm_clip_norm=1e308),
        ValueError,
        "`warm_clip_norm` must be <= 1e+100",
    ),
    "sparse plan without n_k": (lambda: plan_sparse(4, **DP, feature_bound=10.0), ValueError, "`n_k`"),
    "default_schedule rho 0": (lambda: default_schedule(d=4, n_k=100, rho=0.0), ValueError, "`rho`"),
    "PGCDNoise scheme": (lambda: PGCDNoise(1.0, 2.0, "global"), ValueError, "`scheme`"),
    "dp_fed_sparse clip nan": (
        lambda: dp_fed_sparse_bnsl([X, Y], **DP, feature_bound=10.0, clip=math.nan),
        ValueError,
        "`clip`",
    ),
    "dp_fed_sparse feature_bound 0": (
        lambda: dp_fed_sparse_bnsl([X, Y], **DP, feature_bound=0.0),
        ValueError,
        "`feature_bound`",
    ),
    "dp_fed_sparse smoothness array nan": (
        lambda: dp_fed_sparse_bnsl([X, Y], **DP, smoothness=np.array([1.0, np.nan, 1.0, 1.0])),
        ValueError,
        "`smoothness`",
    ),
    # the error names only what is missing: smoothness='private' needs the bound ...
    "feature_bound for smoothness only": (
        lambda: dp_fed_sparse_bnsl([X, Y], **DP),
        ValueError,
        "required by smoothness='private' (or pass public constants as smoothness=<array>)",
    ),
    # ... and with public constants only private centring does
    "feature_bound for centre only": (
        lambda: dp_fed_sparse_bnsl([X, Y], **DP, smoothness=np.ones(4), centre="private"),
        ValueError,
        "`feature_bound` (a public bound on x_ia²) is required by centre='private'",
    ),
    # bounds so small that their sensitivity would underflow to 0 (a release without noise)
    "clip_norm 3e-161": (
        lambda: dp_fed_bnsl([X, Y], **DP, clip_norm=3e-161),
        ValueError,
        "`clip_norm` must be >= 1e-100",
    ),
    "clip 1e-322": (
        lambda: dp_fed_sparse_bnsl([X, Y], **DP, feature_bound=10.0, clip=1e-322),
        ValueError,
        "`clip` must be >= 1e-100",
    ),
    "feature_bound 1e-322": (
        lambda: dp_fed_sparse_bnsl([X, Y], **DP, feature_bound=1e-322),
        ValueError,
        "`feature_bound` must lie in [1e-100, 1e+100]",
    ),
    "centre_share 1e-250": (
        lambda: dp_fed_bnsl([X, Y], **DP, centre="private", centre_share=1e-250),
        ValueError,
        "`centre_share` must be >= 1e-06",
    ),
    "underflowed sensitivity": (
        lambda: gaussian_mechanism(1.0, sensitivity=0.0, multiplier=3.0, rng=0),
        ValueError,
        "`sensitivity` is 0",
    ),
    # --- mechanisms, audits, sweeps, simulation ----------------------------------------------
    "gaussian_mechanism nan value": (
        lambda: gaussian_mechanism(math.nan, sensitivity=1.0, sigma=1.0, rng=0),
        ValueError,
        "`value`",
    ),
    "clip_rows norm 0": (lambda: clip_rows(X, norm=0.0), ValueError, "`norm`"),
    "audit trials 1e12": (lambda: audit("gaussian-step", trials=10**12), ValueError, "`trials`"),
    "audit trials 0": (lambda: audit("gaussian-step", trials=0), ValueError, "`trials`"),
    "audit eps 1e308": (lambda: audit("gaussian-step", epsilon=1e308, trials=100), ValueError, "`epsilon`"),
    "audit mechanism": (lambda: audit("laplace"), ValueError, "`mechanism`"),
    "sweep eps 1e308": (
        lambda: sweep(methods="dp-fed-sparse-bnsl", epsilons=[1e308], seeds=[0], progress=False),
        ValueError,
        "`epsilons`",
    ),
    "simulate d -1": (lambda: dpbnsl.simulate(-1, 100), ValueError, "`d`"),
    "count_accuracy shapes": (
        lambda: dpbnsl.count_accuracy(np.zeros((3, 3)), np.zeros((4, 4))),
        ValueError,
        "shape",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_refused_naming_the_parameter(case):
    call, kind, text = CASES[case]
    with pytest.raises(kind) as info:
        call()
    assert text in str(info.value)
    assert "\n" not in str(info.value).strip()
    for name, value in INPUTS.items():
        np.testing.assert_array_equal(value, SNAPSHOT[name], err_msg=f"{name} was modified")


def test_composed_events_are_flattened_into_the_ledger():
    """A ComposedDpEvent (and SelfComposedDpEvent) records its parts: the same ε as recording
    them one by one, under every accountant; a refused part records nothing."""
    g, h = GaussianDpEvent(3.0), GaussianDpEvent(5.0)
    composed = PrivacyLedger()
    composed.record("run", ComposedDpEvent([g, SelfComposedDpEvent(h, 4), ComposedDpEvent([g])]))
    parts = PrivacyLedger()
    parts.record("run", g, 2)
    parts.record("run", h, 4)
    for acc in ("zcdp", "rdp", "pld"):
        assert composed.epsilon(1e-5, accountant=acc) == parts.epsilon(1e-5, accountant=acc)
    assert composed.rho() == pytest.approx(2 / 18 + 4 / 50, rel=1e-15)
    ledger = PrivacyLedger()
    with pytest.raises(UnsupportedEventError):
        ledger.record("run", ComposedDpEvent([g, DiscreteLaplaceDpEvent(1.0, 1)]))
    assert len(ledger) == 0
    # with a budget: all parts or none
    filtered = PrivacyLedger(budget=(1.0, 1e-5))
    from dpbnsl.accounting import BudgetExceededError

    with pytest.raises(BudgetExceededError):
        filtered.record("run", ComposedDpEvent([GaussianDpEvent(100.0), GaussianDpEvent(0.1)]))
    assert len(filtered) == 0
    # round trip through JSON keeps the flattened entries
    assert PrivacyLedger.from_json(composed.to_json()).entries == composed.entries


@pytest.mark.parametrize(
    "name", ["notears", "fed-bnsl", "fed-sparse-bnsl", "pc", "fed-pc", "notears-voting", "fed-bnsl-mlp"]
)
def test_non_private_learners_refuse_data_their_statistics_overflow_on(name):
    """Entries near 1e308 are finite, but their squares are not: a covariance-based learner used
    to return an empty graph without a word (notears) or a LinAlgError (fed-bnsl); now it refuses,
    naming the entry. The private learners clip and accept them (their own tests)."""
    from dpbnsl.learners.registry import LEARNERS

    X = np.random.default_rng(0).uniform(-1, 1, (60, 3))
    X[7, 2] = -1e307
    entry = LEARNERS[name]
    with pytest.raises(
        ValueError, match=r"an entry of magnitude 1e\+307 \(row 7, column 2\): beyond 1e\+150"
    ):
        entry.run([X[:30], X[30:]], **entry.quick)
