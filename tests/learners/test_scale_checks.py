"""Local scale warnings: declared bounds that clip most rows, or data declared centred that are
not, are reported to the data owner, and nothing of the check is released."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpbnsl.learners import DataScaleWarning, dp_fed_bnsl, dp_fed_sparse_bnsl
from dpbnsl.learners.scale_checks import (
    CLIP_WARNING_SHARE,
    check_declared_centre,
    check_feature_bound,
    check_row_norm,
)
from dpbnsl.simulation import simulate


def _scale_warnings(record) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, DataScaleWarning)]


def test_raw_measurements_against_the_default_clip_norm_warn_each_participant():
    """Sachs-like raw values in the thousands against clip_norm = 1: every row is clipped; each
    participant is warned with that share, and nothing of the check enters the result."""
    data = simulate(5, 900, participants=3, rng=4)
    raw = [1000.0 + 300.0 * X for X in data.participants]
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        r = dp_fed_bnsl(raw, epsilon=1.0, delta=1e-5, max_rounds=3, rng=0)
    msgs = _scale_warnings(rec)
    for k in range(3):
        assert any(
            m.startswith(
                f"participant {k} (local check, not released): 100% of its rows have norm above clip_norm = 1"
            )
            for m in msgs
        )
        assert any(
            m.startswith(f"participant {k} (local check, not released): the data are declared centred")
            for m in msgs
        )
    # nothing of the check is released or spent: the ledgers hold the covariance release only,
    # and the messages are the protocol's own
    assert all([e.label for e in lg.entries] == ["covariance"] for lg in r.ledger)
    assert not any("local check" in repr(v) for v in (r.params, r.info, r.privacy))


def test_well_scaled_data_raise_no_warning():
    data = simulate(5, 900, participants=3, rng=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataScaleWarning)
        dp_fed_bnsl(data.participants, epsilon=1.0, delta=1e-5, clip_norm=30.0, max_rounds=3)
        dp_fed_sparse_bnsl(
            data.participants, epsilon=1.0, delta=1e-5, feature_bound=100.0, rounds=2, local_iters=3
        )


def test_feature_bound_below_the_data_scale_names_the_column():
    data = simulate(4, 600, participants=2, rng=1)
    parts = [X.copy() for X in data.participants]
    for X in parts:
        X[:, 2] *= 50.0  # column 2 on another scale than the declared bound
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        dp_fed_sparse_bnsl(parts, epsilon=1.0, delta=1e-5, feature_bound=4.0, rounds=2, local_iters=3)
    msgs = _scale_warnings(rec)
    assert any("in column 2, " in m and "have x² above feature_bound = 4" in m for m in msgs)


def test_private_centring_is_not_warned_about_the_centre():
    data = simulate(4, 600, participants=2, rng=1)
    shifted = [X + 5.0 for X in data.participants]
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        dp_fed_bnsl(shifted, epsilon=1.0, delta=1e-5, clip_norm=20.0, centre="private", max_rounds=3)
    assert not any("declared centred" in m for m in _scale_warnings(rec))


@pytest.mark.parametrize("outside, warned", [(50, False), (51, True)])
def test_the_stated_share_is_the_threshold(outside, warned):
    """More than half the rows (CLIP_WARNING_SHARE = 0.5) clipped warns; exactly half does not."""
    assert CLIP_WARNING_SHARE == 0.5
    X = np.zeros((100, 3))
    X[:outside, 0] = 10.0  # norm 10 > 1 for the first rows only
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        share = check_row_norm(X, clip_norm=1.0, participant=0)
        check_feature_bound(X, bound=np.ones(3), participant=0)
    assert share == outside / 100
    assert bool(_scale_warnings(rec)) == warned


def test_centre_check_tolerates_constant_zero_columns():
    X = np.zeros((10, 2))
    X[:, 0] = np.arange(10) - 4.5
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataScaleWarning)
        assert check_declared_centre(X, participant=0) == 0.0
