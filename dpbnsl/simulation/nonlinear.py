"""Nonlinear additive-noise SEMs (MLP, GP, additive GP, MIM), IID and non-IID participants.

Every node ``j`` of the DAG ``B`` (``B[i, j] != 0`` is the edge ``i -> j``) is sampled in
topological order as ``x_j = f_j(x_pa(j)) + z_j`` with ``z_j ~ N(0, s_j²)``; root nodes are noise
only. The function classes follow the NOTEARS / gCastle simulators used by Fed-BNSL (MLP) and
the DS-FCD paper (all four); see :func:`simulate_nonlinear_sem` for the formulas.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
from scipy.special import expit

from .._validation import ArrayLike, as_generator, as_square_matrix, check_choice, check_int, check_real
from ..graphs import topological_order
from .linear import check_noise_scale, simulate_dag, simulate_linear_sem, simulate_weights
from .partition import check_sizes, split

__all__ = [
    "NONLINEAR_KINDS",
    "NonlinearData",
    "NonIIDData",
    "simulate_nonlinear",
    "simulate_nonlinear_sem",
    "simulate_noniid",
    "uneven_sizes",
]

NONLINEAR_KINDS = ("mlp", "gp", "gp-add", "mim")
_GP_METHODS = ("auto", "exact", "rff")
_HIDDEN = 100  # hidden sigmoid units of the MLP mechanism (NOTEARS utils)
_GP_EXACT_MAX = 2000  # "auto": exact joint draw up to this many rows, random features above
_GP_FEATURES = 2048  # random Fourier features of the "rff" draw
_JITTERS = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)


def _signed_uniform(rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
    """Uniform on ``[-2, -0.5] ∪ [0.5, 2]``: magnitude U(0.5, 2) with a fair random sign."""
    mag = rng.uniform(0.5, 2.0, size)
    return np.where(rng.random(size) < 0.5, -mag, mag)


def _gp_exact(Z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One joint draw of a GP(0, k) at the rows of ``Z``, k(a, b) = exp(−‖a − b‖²/2).

    Cholesky of ``K + εI``; the jitter ε starts at 1e-6 and grows ×10 (to 1e-2 at most) until the
    factorisation succeeds (RBF Gram matrices are numerically rank-deficient). The jitter adds an
    independent N(0, ε) to each value, negligible against unit-scale noise.
    """
    n = Z.shape[0]
    sq = np.einsum("ij,ij->i", Z, Z)
    K = Z @ Z.T
    K *= 2.0
    K -= sq[:, None]
    K -= sq[None, :]
    np.minimum(K, 0.0, out=K)  # −‖a − b‖², clipped against round-off
    np.exp(0.5 * K, out=K)
    z = rng.standard_normal(n)
    diag = np.diag_indices(n)
    base = K[diag].copy()
    for eps in _JITTERS:
        K[diag] = base + eps
        try:
            return np.linalg.cholesky(K) @ z
        except np.linalg.LinAlgError:
            continue
    raise np.linalg.LinAlgError(  # pragma: no cover - K + 1e-2 I is always positive definite
        "GP kernel matrix not positive definite even with jitter 1e-2"
    )


def _gp_rff(Z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A draw from the random-Fourier-feature approximation of the same GP (Rahimi & Recht 2007).

    ``f(x) = √(2/M) Σ_m a_m cos(ω_mᵀx + b_m)`` with ``ω_m ~ N(0, I)``, ``b_m ~ U(0, 2π)``,
    ``a_m ~ N(0, 1)``; its covariance is a Monte-Carlo estimate of the RBF kernel with M features
    (error ~ 1/√M), and the cost is O(n·M·p) instead of O(n³).
    """
    M = _GP_FEATURES
    omega = rng.standard_normal((Z.shape[1], M))
    b = rng.uniform(0.0, 2.0 * np.pi, M)
    a = rng.standard_normal(M)
    return np.sqrt(2.0 / M) * (np.cos(Z @ omega + b) @ a)


def _gp(Z: np.ndarray, rng: np.random.Generator, method: str) -> np.ndarray:
    exact = method == "exact" or (method == "auto" and Z.shape[0] <= _GP_EXACT_MAX)
    return _gp_exact(Z, rng) if exact else _gp_rff(Z, rng)


def _mechanism(kind: str, Z: np.ndarray, rng: np.random.Generator, gp_method: str) -> np.ndarray:
    """f_j evaluated at the parent rows ``Z`` (n, p), drawing the function's parameters from rng."""
    p = Z.shape[1]
    if kind == "mlp":
        W1 = _signed_uniform(rng, (p, _HIDDEN))
        W2 = _signed_uniform(rng, _HIDDEN)
        return expit(Z @ W1) @ W2
    if kind == "mim":
        w1, w2, w3 = (_signed_uniform(rng, p) for _ in range(3))
        return np.tanh(Z @ w1) + np.cos(Z @ w2) + np.sin(Z @ w3)
    if kind == "gp":
        return _gp(Z, rng, gp_method)
    # gp-add; p >= 1 (called for nodes with parents only), so the sum is an array, never 0
    return cast(np.ndarray, sum(_gp(Z[:, [i]], rng, gp_method) for i in range(p)))


def simulate_nonlinear_sem(
    B: ArrayLike,
    n: int,
    *,
    kind: str = "mlp",
    noise_scale: float | np.ndarray = 1.0,
    gp_method: str = "auto",
    rng: np.random.Generator | int | None = None,
) -> np.ndarray:
    """Sample ``n`` rows of the nonlinear SEM ``x_j = f_j(x_pa(j)) + z_j`` in topological order.

    Mechanisms (``X_pa`` is the n × p matrix of the parents' values; fresh parameters per node):

    - ``"mlp"``: ``sigmoid(X_pa W1) W2`` with 100 hidden units, every entry of ``W1`` (p × 100) and
      ``W2`` (100) uniform on ``[-2, -0.5] ∪ [0.5, 2]`` (NOTEARS ``simulate_nonlinear_sem``);
    - ``"gp"``: one draw of a Gaussian process with RBF kernel ``exp(−‖a − b‖²/2)`` (variance 1,
      length-scale 1) jointly at the n parent rows;
    - ``"gp-add"``: the sum over parents of independent 1-D draws of that GP;
    - ``"mim"``: ``tanh(X_pa w1) + cos(X_pa w2) + sin(X_pa w3)``, ``w`` uniform as for the MLP.

    Root nodes are pure noise ``z_j ~ N(0, s_j²)``.

    Parameters
    ----------
    B : array of shape (d, d)
        The DAG; only its support is used (``ValueError`` if cyclic).
    n : int >= 1, number of samples
    kind : {"mlp", "gp", "gp-add", "mim"}
    noise_scale : float >= 0 or array of shape (d,)
        Standard deviation ``s`` of the Gaussian noise, for all nodes or per node.
    gp_method : {"auto", "exact", "rff"}
        GP draws: ``"exact"`` factorises the n × n kernel matrix (Cholesky with adaptive jitter
        1e-6…1e-2; O(n³), about 2 s per draw at n = 5000); ``"rff"`` draws from a 2048-feature
        random-Fourier approximation (O(n)); ``"auto"`` is exact up to n = 2000 rows, rff above.
    rng : None, int or numpy Generator
        Mechanism parameters and noise use two spawned streams, so for a fixed seed the MLP and MIM
        functions do not depend on ``n``.

    Returns
    -------
    X : float array of shape (n, d)

    Examples
    --------
    >>> B = simulate_dag(5, s0=5, rng=0)
    >>> simulate_nonlinear_sem(B, 100, kind="gp", rng=0).shape
    (100, 5)
    """
    B = as_square_matrix(B, "B")
    n = check_int(n, "n", low=1)
    kind = check_choice(kind, "kind", NONLINEAR_KINDS)
    gp_method = check_choice(gp_method, "gp_method", _GP_METHODS)
    scale = check_noise_scale(noise_scale, B.shape[0])
    order = topological_order(B)
    func_rng, noise_rng = as_generator(rng).spawn(2)
    X = noise_rng.standard_normal((n, B.shape[0])) * scale
    for j in order:  # parents of j are final when j is reached
        parents = np.flatnonzero(B[:, j])
        if parents.size:
            X[:, j] += _mechanism(kind, X[:, parents], func_rng, gp_method)
    return X


@dataclass(frozen=True)
class NonlinearData:
    """Output of :func:`simulate_nonlinear` (same fields as :class:`dpbnsl.simulation.SimulatedData`).

    Attributes
    ----------
    B_true : int array of shape (d, d), the 0/1 adjacency of the true DAG
    W_true : float array of shape (d, d), ``B_true`` as floats (a nonlinear SEM has no edge weights)
    X : float array of shape (n, d), the pooled sample
    participants : list of float arrays of shape (n_k, d), consecutive shards of ``X``
    kind : str, the mechanism class
    """

    B_true: np.ndarray
    W_true: np.ndarray
    X: np.ndarray
    participants: list
    kind: str


def _default_s0(d: int, per_node: int) -> int:
    return min(per_node * d, d * (d - 1) // 2)


def simulate_nonlinear(
    d: int,
    n: int,
    *,
    participants: int = 1,
    kind: str = "mlp",
    s0: int | None = None,
    graph_type: str = "ER",
    gp_method: str = "auto",
    rng: np.random.Generator | int | None = None,
    sizes: Sequence[int] | None = None,
) -> NonlinearData:
    """Fed-BNSL's nonlinear benchmark: a random DAG, one IID nonlinear-SEM sample, split in shards.

    Parameters
    ----------
    d : int >= 1, number of nodes
    n : int, total number of samples
    participants : int >= 1
        Equal consecutive shards (the first ``n mod P`` get one extra row); ignored when ``sizes``
        is given.
    kind : {"mlp", "gp", "gp-add", "mim"}, see :func:`simulate_nonlinear_sem` (unit noise)
    s0 : int, optional
        Edges (see :func:`dpbnsl.simulation.simulate_dag`); default ``d`` (capped at d(d−1)/2).
    graph_type : {"ER", "SF"}
    gp_method : {"auto", "exact", "rff"}
    rng : None, int or numpy Generator
        Graph and data use two spawned streams, so the graph does not depend on ``n``.
    sizes : sequence of ints, optional
        Rows per participant (must sum to ``n``).

    Examples
    --------
    >>> sim = simulate_nonlinear(10, 200, participants=4, rng=0)
    >>> sim.X.shape, [p.shape[0] for p in sim.participants], int(sim.B_true.sum())
    ((200, 10), [50, 50, 50, 50], 10)
    """
    d = check_int(d, "d", low=1)
    s0 = _default_s0(d, 1) if s0 is None else s0
    graph_rng, data_rng = as_generator(rng).spawn(2)
    B = simulate_dag(d, s0=s0, graph_type=graph_type, rng=graph_rng)
    X = simulate_nonlinear_sem(B, n, kind=kind, gp_method=gp_method, rng=data_rng)
    parts = split(X, sizes=sizes) if sizes is not None else split(X, participants)
    return NonlinearData(B_true=B, W_true=B.astype(float), X=X, participants=parts, kind=kind)


def uneven_sizes(
    n_max: int,
    participants: int,
    *,
    fractions: Sequence[float] = (0.2, 0.4, 0.6, 0.8),
    rng: np.random.Generator | int | None = None,
) -> list[int]:
    """DS-FCD's uneven sample sizes (App. E.1): ``n_k = round(f_k · n_max)``, f_k uniform on
    ``fractions``, independently per participant.

    Parameters
    ----------
    n_max : int >= 1, the maximal number of observations
    participants : int >= 1
    fractions : sequence of reals in (0, 1]
    rng : None, int or numpy Generator

    Returns
    -------
    sizes : list of ints >= 1 (``ValueError`` if a fraction would give fewer than 1 row)

    Examples
    --------
    >>> sizes = uneven_sizes(600, 5, rng=0)
    >>> set(sizes) <= {120, 240, 360, 480}
    True
    """
    n_max = check_int(n_max, "n_max", low=1)
    P = check_int(participants, "participants", low=1)
    if isinstance(fractions, (str, bytes)) or np.ndim(fractions) != 1 or len(fractions) == 0:
        raise ValueError(f"`fractions` must be a non-empty sequence of reals; got {fractions!r}")
    fr = [check_real(f, f"fractions[{i}]", low=0.0, high=1.0, low_open=True) for i, f in enumerate(fractions)]
    sizes = [int(round(f * n_max)) for f in fr]
    if min(sizes) < 1:
        raise ValueError(f"`fractions` = {fractions!r} of `n_max` = {n_max} gives an empty dataset")
    rng = as_generator(rng)
    return [sizes[i] for i in rng.integers(len(sizes), size=P)]


@dataclass(frozen=True)
class NonIIDData:
    """Output of :func:`simulate_noniid`: participants sharing a DAG but not their mechanisms.

    Attributes
    ----------
    B_true : int array of shape (d, d), the shared DAG
    participants : list of float arrays of shape (n_k, d)
    kinds : tuple of str, ``"linear"`` or the nonlinear class of each participant
    linear : tuple of bool
    noise_scales : tuple of float, each participant's noise standard deviation
    weights : tuple, participant k's weight matrix (d, d) if linear, else None
    """

    B_true: np.ndarray
    participants: list
    kinds: tuple
    linear: tuple
    noise_scales: tuple
    weights: tuple

    @property
    def X(self) -> np.ndarray:
        """All participants' rows stacked (the "All" setting)."""
        return np.vstack(self.participants)


def simulate_noniid(
    d: int,
    n: int | None,
    *,
    participants: int,
    s0: int | None = None,
    graph_type: str = "ER",
    noise_scales: Sequence[float] = (0.8, 1.0),
    p_linear: float = 0.5,
    linear_noise_scale: float | None = None,
    gp_method: str = "auto",
    rng: np.random.Generator | int | None = None,
    sizes: Sequence[int] | None = None,
) -> NonIIDData:
    """DS-FCD's non-IID generator (§5.1.2): one DAG, each participant with its own mechanisms.

    1. One DAG (``s0`` edges) shared by all participants.
    2. Participant k is linear with probability ``p_linear`` (authors' code: ½), else nonlinear.
       Linear: its own weights, uniform on ``[-2, -0.5] ∪ [0.5, 2]``. Nonlinear: one class drawn
       uniformly from {mlp, gp, mim, gp-add} for *all* its nodes (the authors' code; the paper's
       wording could be read per node), with fresh functions (:func:`simulate_nonlinear_sem`).
    3. Noise N(0, s_k²), s_k drawn uniformly from ``noise_scales``, the same for all of k's nodes.
       The paper calls the value a *variance*; the code (and this function) uses it as the standard
       deviation. The code gives linear participants s = 1 whatever was drawn; here they keep their
       draw unless ``linear_noise_scale`` is set (``linear_noise_scale=1.0`` reproduces the code).

    Participant k uses spawned stream k + 1 (stream 0 draws the graph), so its data depend only on
    the seed and k (unlike the authors' code, which reseeds every participant identically).

    Parameters
    ----------
    d : int >= 1, number of nodes
    n : int >= 1 or None, rows *per participant* (DS-FCD: 600); ignored when ``sizes`` is given
    participants : int >= 1
    s0 : int, optional
        Edges; default ``2d`` (DS-FCD's ER2), capped at d(d−1)/2. Exact edge count (DS-FCD's
        graphs have a random count with this mean).
    graph_type : {"ER", "SF"}
    noise_scales : sequence of reals >= 0
    p_linear : float in [0, 1]
    linear_noise_scale : float >= 0, optional
    gp_method : {"auto", "exact", "rff"}, see :func:`simulate_nonlinear_sem`
    rng : None, int or numpy Generator
    sizes : sequence of ints, optional
        Rows of each participant (e.g. from :func:`uneven_sizes`); its length must equal
        ``participants``.

    Examples
    --------
    >>> data = simulate_noniid(5, 50, participants=3, rng=0)
    >>> [X.shape for X in data.participants], len(data.kinds)
    ([(50, 5), (50, 5), (50, 5)], 3)
    """
    d = check_int(d, "d", low=1)
    P = check_int(participants, "participants", low=1)
    if sizes is None:
        if n is None:
            raise ValueError("`n` (rows per participant) is required unless `sizes` is given")
        sizes = [check_int(n, "n", low=1)] * P
    else:
        sizes = check_sizes(sizes, "sizes")
        if len(sizes) != P:
            raise ValueError(f"`participants` = {P} disagrees with len(`sizes`) = {len(sizes)}")
    if isinstance(noise_scales, (str, bytes)) or np.ndim(noise_scales) != 1 or not len(noise_scales):
        raise ValueError(f"`noise_scales` must be a non-empty sequence of reals; got {noise_scales!r}")
    scales = [check_real(s, f"noise_scales[{i}]", low=0.0) for i, s in enumerate(noise_scales)]
    p_linear = check_real(p_linear, "p_linear", low=0.0, high=1.0)
    if linear_noise_scale is not None:
        linear_noise_scale = check_real(linear_noise_scale, "linear_noise_scale", low=0.0)
    gp_method = check_choice(gp_method, "gp_method", _GP_METHODS)
    s0 = _default_s0(d, 2) if s0 is None else s0
    graph_rng, *streams = as_generator(rng).spawn(P + 1)
    B = simulate_dag(d, s0=s0, graph_type=graph_type, rng=graph_rng)
    parts, kinds, linear, noise, weights = [], [], [], [], []
    for n_k, stream in zip(sizes, streams):
        is_linear = bool(stream.random() < p_linear)
        kind = NONLINEAR_KINDS[stream.integers(len(NONLINEAR_KINDS))]
        s = scales[stream.integers(len(scales))]
        if is_linear:
            s = s if linear_noise_scale is None else linear_noise_scale
            W = simulate_weights(B, rng=stream)
            parts.append(simulate_linear_sem(W, n_k, noise_scale=s, rng=stream))
        else:
            W = None
            parts.append(
                simulate_nonlinear_sem(B, n_k, kind=kind, noise_scale=s, gp_method=gp_method, rng=stream)
            )
        kinds.append("linear" if is_linear else kind)
        linear.append(is_linear)
        noise.append(float(s))
        weights.append(W)
    return NonIIDData(
        B_true=B,
        participants=parts,
        kinds=tuple(kinds),
        linear=tuple(linear),
        noise_scales=tuple(noise),
        weights=tuple(weights),
    )
