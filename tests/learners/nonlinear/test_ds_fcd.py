"""DS-FCD / AS-FCD: gradients, protocol, transcript, recovery, validation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpbnsl import count_accuracy, is_dag
from dpbnsl.federation import Transcript
from dpbnsl.learners.nonlinear._fcd_model import Adam, Model, Workspace, acyclicity_value
from dpbnsl.learners.nonlinear.ds_fcd import as_fcd, ds_fcd, fcd_centralized, fcd_defaults
from dpbnsl.simulation import simulate

# small and fast: tiny MLPs, short sub-problems
FAST = dict(it_in=40, it_fl=20, it_max=2, rho_max=1.0, hidden=4, layers=2)


def _nonlinear_chain(n, rng, d=4):
    """x0 → x1 → x2 → x3 with smooth nonlinear mechanisms and N(0, 0.5²) noise."""
    X = np.empty((n, d))
    X[:, 0] = rng.normal(size=n)
    funcs = [lambda z: 2.0 * np.tanh(z), lambda z: np.sin(2.0 * z) + z, lambda z: z**2 - 1.0]
    for j in range(1, d):
        X[:, j] = funcs[(j - 1) % 3](X[:, j - 1]) + 0.5 * rng.normal(size=n)
    B = np.zeros((d, d), int)
    B[np.arange(d - 1), np.arange(1, d)] = 1
    return X, B


@pytest.fixture(scope="module")
def parts():
    return simulate(5, 240, participants=3, rng=4).participants


# ------------------------------------------------------------------------------ gradients
def _numeric_grad(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        a, b = x.copy(), x.copy()
        a[i] += eps
        b[i] -= eps
        g[i] = (f(a) - f(b)) / (2 * eps)
    return g


@pytest.mark.parametrize("mechanism", ["mlp", "linear"])
@pytest.mark.parametrize("acyclicity", ["exp-sq", "exp"])
@pytest.mark.parametrize("terms", ["data", "l1", "alm", "all"])
def test_loss_gradient_matches_finite_differences(mechanism, acyclicity, terms):
    """Every hand-written gradient (data term through the MLP or the linear map, ℓ1, α h, ρ/2 h²,
    and the Gumbel-sigmoid chain rule) against central differences, the Gumbel noise fixed."""
    rng = np.random.default_rng(11)
    d = 4
    model = Model(d, mechanism, hidden=5, layers=3)
    theta = model.init(rng)
    theta[: d * d] = rng.normal(size=d * d) * (0.3 if mechanism == "linear" else 1.0)
    theta[d * d :] += 0.1 * rng.normal(size=model.n_phi)  # non-zero biases
    ws = Workspace(rng.normal(size=(30, d)), model, np.float64)
    G = model.sample_noise(rng)
    coef = {"data": (0.0, 0.0, 0.0), "l1": (0.7, 0.0, 0.0), "alm": (0.0, 0.3, 2.0), "all": (0.1, 0.3, 2.0)}[
        terms
    ]
    kw = dict(tau=0.2, lambda1=coef[0], alpha=coef[1], rho=coef[2], acyclicity=acyclicity)
    parts, grad = model.loss_grad(theta, ws, G, **kw)
    num = _numeric_grad(lambda t: model.loss_grad(t, ws, G, **kw)[0].total, theta)
    scale = np.abs(num).max()
    np.testing.assert_allclose(grad, num, atol=1e-6 * scale, rtol=0)
    if terms == "data":
        np.testing.assert_allclose(parts.total, parts.mse)


@pytest.mark.parametrize("form", ["exp-sq", "exp"])
def test_acyclicity_gradient_and_zero_on_dags(form):
    rng = np.random.default_rng(2)
    A = rng.uniform(0, 1, (5, 5))
    h, g = acyclicity_value(A, form)
    num = _numeric_grad(lambda a: acyclicity_value(a.reshape(5, 5), form)[0], A.ravel())
    np.testing.assert_allclose(g.ravel(), num, rtol=1e-6, atol=1e-8)
    assert h > 0
    assert abs(acyclicity_value(np.triu(A, 1), form)[0]) < 1e-12


def test_loss_is_normalised_by_each_participants_rows():
    """Duplicating every row leaves the loss and its gradient unchanged (1/(2 n_k) scaling)."""
    rng = np.random.default_rng(3)
    model = Model(3, "mlp", hidden=4, layers=2)
    theta = model.init(rng)
    X = rng.normal(size=(20, 3))
    G = model.sample_noise(rng)
    kw = dict(tau=0.2, lambda1=0.01, alpha=0.1, rho=1.0, acyclicity="exp-sq")
    p1, g1 = model.loss_grad(theta, Workspace(X, model, np.float64), G, **kw)
    p2, g2 = model.loss_grad(theta, Workspace(np.vstack([X, X]), model, np.float64), G, **kw)
    np.testing.assert_allclose(p1.total, p2.total, rtol=1e-12)
    np.testing.assert_allclose(g1, g2, rtol=1e-10, atol=1e-14)


def test_float32_pass_matches_float64():
    rng = np.random.default_rng(5)
    model = Model(4, "mlp", hidden=6, layers=2)
    theta = model.init(rng)
    X = rng.normal(size=(50, 4))
    G = model.sample_noise(rng)
    kw = dict(tau=0.2, lambda1=0.01, alpha=0.0, rho=0.1, acyclicity="exp-sq")
    p64, g64 = model.loss_grad(theta, Workspace(X, model, np.float64), G, **kw)
    p32, g32 = model.loss_grad(theta, Workspace(X, model, np.float32), G, **kw)
    np.testing.assert_allclose(p32.total, p64.total, rtol=1e-5)
    np.testing.assert_allclose(g32, g64, atol=1e-5 * np.abs(g64).max())


def test_adam_matches_closed_form_first_steps():
    opt = Adam(2, lr=0.1)
    theta = np.array([1.0, -2.0])
    g = np.array([0.5, -4.0])
    opt.step(theta, g)  # first step moves every coordinate by lr·sign(g) (up to ε)
    np.testing.assert_allclose(theta, [0.9, -1.9], atol=1e-7)
    opt.step(theta, g)
    np.testing.assert_allclose(theta, [0.8, -1.8], atol=1e-7)


def test_adam_matches_the_textbook_update_on_varying_gradients():
    """A constant gradient moves bias-corrected Adam by lr·sign(g) whatever β₁, β₂ are; varying
    gradients pin both moment estimates down (the reference is Kingma & Ba's Algorithm 1)."""
    rng = np.random.default_rng(0)
    grads = rng.normal(size=(30, 3)) * np.array([1e-3, 1.0, 50.0])
    theta = np.array([0.3, -1.0, 2.0])
    ref, m, v = theta.copy(), np.zeros(3), np.zeros(3)
    opt = Adam(3, lr=0.05)
    for t, g in enumerate(grads, start=1):
        opt.step(theta, g)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g**2
        ref = ref - 0.05 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    np.testing.assert_allclose(theta, ref, rtol=1e-12)
    swapped = Adam(3, lr=0.05, beta1=0.999, beta2=0.9)
    other = np.array([0.3, -1.0, 2.0])
    for g in grads:
        swapped.step(other, g)
    assert np.abs(other - ref).max() > 1e-3


def test_initialisation_is_xavier_with_zero_logits_and_biases():
    model = Model(6, "mlp", hidden=16, layers=4)
    theta = model.init(np.random.default_rng(0))
    U, phi = model.views(theta)
    assert np.all(U == 0)
    assert all(np.all(b == 0) for b in phi[1::2])
    lim = np.sqrt(6.0 / (5 + 16))
    assert 0.8 * lim < np.abs(phi[0]).max() <= lim


# ------------------------------------------------------------------------------- protocol
def test_one_participant_is_the_centralised_run(parts):
    """With one participant the averages are identities: DS-FCD, AS-FCD, the centralised function
    and a run that never communicates mid-problem all give the same estimate."""
    X = np.vstack(parts)
    central = fcd_centralized(X, rng=3, **FAST)
    ds = ds_fcd([X], rng=3, **FAST)
    as_ = as_fcd([X], rng=3, **FAST)
    rare = ds_fcd([X], rng=3, **{**FAST, "it_fl": FAST["it_in"]})
    for other in (ds, as_, rare):
        np.testing.assert_array_equal(central.W_raw, other.W_raw)
        np.testing.assert_array_equal(central.W, other.W)
    assert central.transcript is None and central.method == "fcd-centralized"
    assert len(rare.history) * 2 == len(ds.history)


def _model_messages(res):
    """The model's messages: every round's but the setup and the schedule (α, ρ, steps, selected)."""
    return Transcript([m for m in res.transcript.learning() if m.kind != "schedule"])


def test_ds_transcript_holds_only_U_and_downloads_are_means(parts):
    res = ds_fcd(parts, rng=0, **FAST)
    assert set(res.transcript.learning().to_frame()["kind"]) == {"U", "schedule"}
    t = _model_messages(res)
    assert set(t.to_frame()["kind"]) == {"U"}
    rounds = len(res.history)
    assert rounds == res.info["solves"] * 2 == t.n_rounds
    assert len(t.uploads()) == len(t.downloads()) == 3 * rounds
    for r in (0, rounds - 1):
        up = t.payloads(round=r, direction="up")
        down = t.payloads(round=r, direction="down")
        assert up.shape == (3, 5, 5)
        np.testing.assert_allclose(down, np.broadcast_to(up.mean(axis=0), down.shape))
    assert t.total_bytes == res.info["bytes_up"] + res.info["bytes_down"]
    assert res.history["bytes_up"].sum() == 8 * 25 * 3 * rounds
    np.testing.assert_array_equal(res.info["U"], t.payloads(round=rounds - 1, direction="down")[0])
    # the schedule sent with the setup reply and every reply but the last: (α, ρ, steps, selected)
    schedule = res.transcript.payloads(kind="schedule", participant=0)
    assert schedule.shape == (rounds, 4) and (schedule[:, 3] == 1).all()
    np.testing.assert_array_equal(schedule[:, 0], res.history["alpha"].to_numpy())


def test_as_fcd_differs_from_ds_only_by_phi_averaging(parts):
    ds = ds_fcd(parts, rng=1, **FAST)
    as_ = as_fcd(parts, rng=1, **FAST)
    # identical up to the first aggregation ...
    np.testing.assert_array_equal(
        ds.transcript.payloads(round=0, kind="U", direction="up"),
        as_.transcript.payloads(round=0, kind="U", direction="up"),
    )
    # ... where AS-FCD also uploads and averages Φ
    assert set(_model_messages(as_).to_frame()["kind"]) == {"U", "phi"}
    phi_up = as_.transcript.payloads(round=0, kind="phi", direction="up")
    phi_down = as_.transcript.payloads(round=0, kind="phi", direction="down")
    n_phi = Model(5, "mlp", hidden=4, layers=2).n_phi
    assert phi_up.shape == (3, n_phi)
    np.testing.assert_allclose(phi_down[0], phi_up.mean(axis=0))
    assert not np.allclose(phi_up[0], phi_up[1])  # local Φ differ before averaging
    assert as_.info["bytes_up"] > ds.info["bytes_up"]
    assert not np.array_equal(ds.W_raw, as_.W_raw)


def test_linear_variant_as_equals_ds(parts):
    opts = dict(mechanism="linear", it_in=100, it_fl=50, it_max=3)
    ds = ds_fcd(parts, rng=0, **opts)
    as_ = as_fcd(parts, rng=0, **opts)
    np.testing.assert_array_equal(ds.W_raw, as_.W_raw)
    assert set(_model_messages(ds).to_frame()["kind"]) == {"W"}


def test_partial_participation_uploads_r_and_broadcasts_to_all(parts):
    res = ds_fcd(parts, participants_per_round=2, rng=0, **FAST)
    frame = _model_messages(res).to_frame()
    up = frame[frame.direction == "up"].groupby("round")["sender"].apply(tuple)
    assert (up.map(len) == 2).all()
    assert len(set(up)) > 1  # a fresh draw each round
    down = frame[frame.direction == "down"].groupby("round").size()
    assert (down == 3).all()
    assert (res.history["uploaded"] == 2).all()


def test_history_and_result_contract(parts):
    names = [f"v{i}" for i in range(5)]
    frames = [pd.DataFrame(X, columns=names) for X in parts]
    copies = [f.copy() for f in frames]
    arrays = [np.array(X) for X in parts]
    res = ds_fcd(frames, rng=2, **FAST)
    ds_fcd(arrays, rng=2, **FAST)
    for f, c in zip(frames, copies):
        pd.testing.assert_frame_equal(f, c)
    for a, X in zip(arrays, parts):
        np.testing.assert_array_equal(a, X)
    assert res.columns == tuple(names)
    assert is_dag(res.W) and np.all(np.diag(res.W) == 0) and not res.W.flags.writeable
    assert np.all((res.W_raw >= 0) & (res.W_raw <= 1))
    assert set(res.W[res.W != 0]) <= set(res.W_raw[res.W_raw > 0.5])
    cols = {"round", "outer", "solve", "step", "loss", "mse", "h", "rho", "alpha", "edges"}
    assert cols <= set(res.history.columns)
    assert res.history["rho"].is_monotonic_increasing
    assert res.params["lambda1"] == 0.01 and res.params["tau"] == 0.2


def test_deterministic_per_seed(parts):
    a = ds_fcd(parts, rng=5, participants_per_round=2, **FAST)
    b = ds_fcd(parts, rng=5, participants_per_round=2, **FAST)
    c = ds_fcd(parts, rng=6, participants_per_round=2, **FAST)
    np.testing.assert_array_equal(a.W_raw, b.W_raw)
    pd.testing.assert_frame_equal(a.history, b.history)
    assert not np.array_equal(a.W_raw, c.W_raw)


def test_printed_schedule_grows_rho_only_between_solves(parts):
    res = ds_fcd(parts, rng=0, schedule="printed", **FAST)
    per_solve = res.history.groupby("solve")["rho"].nunique()
    assert (per_solve == 1).all()
    assert res.history["outer"].max() == res.info["solves"]


def _scripted(monkeypatch, hs, initial=np.inf):
    """Replace the sub-problem solver by a script of ``E h`` values (``initial`` is the h of the
    starting point); return the (ρ, α) at which each solve was asked for."""
    from dpbnsl.learners.nonlinear import _fcd_protocol

    script, trace, last = iter(hs), [], [initial]

    def solve(self):  # a sub-problem with no aggregation: a generator that returns at once
        trace.append((self.rho, self.alpha))
        last[0] = next(script)
        return last[0]
        yield  # pragma: no cover

    monkeypatch.setattr(_fcd_protocol.FCDServer, "solve", solve)
    monkeypatch.setattr(_fcd_protocol.FCDServer, "h_mean_graph", lambda self: last[0])
    monkeypatch.setattr(_fcd_protocol.FCDServer, "h_expected", lambda self: last[0])
    return trace


SCRIPT = dict(
    rho_init=1.0,
    beta=10.0,
    gamma=0.25,
    rho_max=1e4,
    h_tol=1e-10,
    it_max=10,
    hidden=2,
    layers=1,
    record_transcript=False,
)


def test_mcsl_schedule_follows_the_authors_loop(parts, monkeypatch):
    """Hand-traced: h = 1 (α ← 1·1); 0.5 > γ·1, so ρ → 10 and re-solve; 0.2 ≤ γ·0.5 (α ← 1 + 10·0.2
    = 3); 0.01 (α ← 3.1); 0 converges after more than init_iter = 1 outer iterations."""
    trace = _scripted(monkeypatch, [1.0, 0.5, 0.2, 0.01, 0.0])
    ds_fcd(parts, init_iter=1, rng=0, **SCRIPT)
    assert trace == [(1.0, 0.0), (1.0, 1.0), (10.0, 1.0), (10.0, 3.0), (10.0, 3.1)]
    # with init_iter = 4 the converged iterate is solved once more (α unchanged by h = 0)
    trace = _scripted(monkeypatch, [1.0, 0.5, 0.2, 0.01, 0.0, 0.0])
    ds_fcd(parts, init_iter=4, rng=0, **SCRIPT)
    assert trace[-1] == (10.0, 3.1) and len(trace) == 6


def test_mcsl_schedule_ends_when_rho_reaches_rho_max_without_solving_there(parts, monkeypatch):
    trace = _scripted(monkeypatch, [1.0] + [0.9] * 10)
    ds_fcd(parts, init_iter=1, rng=0, **{**SCRIPT, "rho_max": 1e3})
    assert [r for r, _ in trace] == [1.0, 1.0, 10.0, 100.0]


def test_printed_schedule_follows_algorithm_1(parts, monkeypatch):
    """Algorithm 1: α ← α + ρh after every solve, ρ ← βρ when h > γ·h_prev (h_prev starts at the
    initial h), stop at h < h_tol."""
    trace = _scripted(monkeypatch, [0.5, 0.1, 0.05, 0.0], initial=1.0)
    ds_fcd(parts, schedule="printed", rng=0, **SCRIPT)
    # initial h 1.0; solves give 0.5 (α 0.5, ρ → 10), 0.1 (α 1.5), 0.05 (α 2, ρ → 100), 0 (stop)
    assert trace == [(1.0, 0.0), (10.0, 0.5), (10.0, 1.5), (100.0, 2.0)]


def test_monte_carlo_h_changes_the_multiplier_and_is_deterministic(parts):
    base = ds_fcd(parts, rng=0, **{**FAST, "rho_max": 10.0})
    mc = ds_fcd(parts, rng=0, h_samples=3, **{**FAST, "rho_max": 10.0})
    again = ds_fcd(parts, rng=0, h_samples=3, **{**FAST, "rho_max": 10.0})
    pd.testing.assert_frame_equal(mc.history, again.history)
    assert np.isfinite(mc.history[["h", "alpha"]].to_numpy()).all()
    assert mc.history["alpha"].iloc[-1] != base.history["alpha"].iloc[-1]


def test_history_edges_use_the_output_threshold(parts):
    for thr in (0.3, 0.7):
        res = ds_fcd(parts, rng=0, threshold=thr, **FAST)
        assert res.history["edges"].iloc[-1] == int((res.W_raw > thr).sum())


def test_defaults_follow_tables_6_and_7():
    assert fcd_defaults(10) == dict(
        lambda1=0.01,
        h_tol=1e-10,
        rho_max=1e14,
        it_max=25,
        it_in=1000,
        it_fl=200,
        lr=3e-2,
        threshold=0.5,
        rho_init=6e-3,
        beta=10.0,
    )
    assert (fcd_defaults(20)["rho_init"], fcd_defaults(20)["beta"]) == (6e-3, 20.0)
    assert (fcd_defaults(40)["rho_init"], fcd_defaults(40)["beta"]) == (1e-11, 120.0)
    assert fcd_defaults(10, "linear")["threshold"] == 0.3


# ------------------------------------------------------------------------------- recovery
def test_recovers_a_nonlinear_chain():
    """x0 → x1 → x2 → x3 from two participants: every chain edge found and oriented (seeds 0–3
    give SHD 1, 0, 0, 0; the occasional error is the extra shortcut x0 → x2)."""
    X, B = _nonlinear_chain(600, np.random.default_rng(1))
    res = ds_fcd(
        [X[:300], X[300:]],
        hidden=8,
        layers=2,
        it_in=200,
        it_fl=100,
        it_max=4,
        init_iter=1,
        rng=1,
        record_transcript=False,
    )
    acc = count_accuracy(B, res.W)
    assert acc.tpr == 1.0 and acc.shd <= 1, (acc, res.W_raw.round(2))


def test_linear_variant_recovers_linear_sem():
    data = simulate(5, 1500, participants=3, rng=1)
    res = ds_fcd(
        data.participants,
        mechanism="linear",
        lr=2e-2,
        it_in=200,
        it_fl=100,
        it_max=5,
        rng=0,
        record_transcript=False,
    )
    assert count_accuracy(data.B_true, res.W).shd <= 1


# ----------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(mechanism="gp"), ValueError, r"`mechanism` must be one of 'mlp', 'linear'; got 'gp'"),
        (dict(schedule="adam"), ValueError, r"`schedule` must be one of 'mcsl', 'printed'"),
        (dict(acyclicity="dagma"), ValueError, r"`acyclicity` must be one of 'exp-sq', 'exp'"),
        (dict(dtype="float16"), ValueError, r"`dtype` must be one of 'float32', 'float64'"),
        (dict(participants_per_round=4), ValueError, r"`participants_per_round` must be <= 3; got 4"),
        (dict(participants_per_round=0), ValueError, r"`participants_per_round` must be >= 1"),
        (dict(threshold=1.0), ValueError, r"`threshold` must be < 1 for mechanism='mlp'"),
        (dict(lr=0.0), ValueError, r"`lr` must be > 0; got 0.0"),
        (dict(it_fl=0), ValueError, r"`it_fl` must be >= 1; got 0"),
        (dict(tau=-1.0), ValueError, r"`tau` must be > 0"),
        (dict(gamma=1.5), ValueError, r"`gamma` must be <= 1"),
        (dict(beta=0.5), ValueError, r"`beta` must be > 1; got 0.5"),
        (dict(beta=1.0), ValueError, r"`beta` must be > 1; got 1.0"),
        (
            dict(mechanism="linear", acyclicity="exp"),
            ValueError,
            r"`acyclicity` must be 'exp-sq' for mechanism='linear'",
        ),
        (dict(record_transcript="no"), TypeError, r"`record_transcript` must be a bool; got str 'no'"),
        (dict(hidden=2.5), TypeError, r"`hidden` must be an integer"),
        (dict(h_samples=-1), ValueError, r"`h_samples` must be >= 0"),
        (dict(rng="seed"), TypeError, r"`rng` must be None"),
    ],
)
def test_validation_messages(parts, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        ds_fcd(parts, **{**FAST, **kwargs})


def test_validation_of_data_and_options(parts):
    with pytest.raises(ValueError, match=r"at least 2 columns; got 1"):
        ds_fcd([np.ones((5, 1)), np.ones((5, 1))])
    with pytest.raises(TypeError, match=r"`participants` must be a sequence"):
        ds_fcd(np.vstack(parts))
    with pytest.raises(ValueError, match=r"non-finite value nan"):
        ds_fcd([np.full((4, 3), np.nan)])
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['lambda2'\]"):
        as_fcd(parts, lambda2=0.1)
    with pytest.raises(TypeError, match=r"`participants_per_round` is not an option"):
        fcd_centralized(np.vstack(parts), participants_per_round=1)
    with pytest.raises(ValueError, match=r"`X` must be 2-dimensional"):
        fcd_centralized(np.ones(5))
