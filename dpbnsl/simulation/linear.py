"""Synthetic DAGs, linear SEMs (homogeneous and heterogeneous) and splitting rows over participants.

``W[i, j] != 0`` is the edge ``i -> j``; the SEM is ``X = X W + N`` with samples in rows. The other
families (nonlinear, discrete, temporal) build on the DAGs and weights drawn here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._validation import (
    ArrayLike,
    as_generator,
    as_square_matrix,
    check_bool,
    check_choice,
    check_int,
    check_real,
)
from ..graphs import topological_order
from .partition import check_sizes, split

__all__ = [
    "HeterogeneousData",
    "SimulatedData",
    "simulate",
    "simulate_dag",
    "simulate_heterogeneous",
    "simulate_linear_sem",
    "simulate_weights",
    "split",
    "check_noise_scale",
    "simulated_bounds",
    "population_scale",
    "sem_covariance",
]

_GRAPH_TYPES = ("ER", "SF")
# Standardised draws (scale 1); the family with scale s is s times the draw.
_NOISES = {
    "gaussian": lambda rng, size: rng.standard_normal(size),
    "exponential": lambda rng, size: rng.standard_exponential(size),
    "gumbel": lambda rng, size: rng.gumbel(0.0, 1.0, size),
    "uniform": lambda rng, size: rng.uniform(-1.0, 1.0, size),
}


def _orient(U: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Orient the symmetric boolean skeleton ``U`` along a uniformly random node order."""
    rank = rng.permutation(U.shape[0])  # rank[i] = position of node i in the order
    return (U & (rank[:, None] < rank[None, :])).astype(int)


def _er_skeleton(d: int, s0: int, rng: np.random.Generator) -> np.ndarray:
    rows, cols = np.triu_indices(d, k=1)
    pick = rng.choice(rows.size, size=s0, replace=False)
    U = np.zeros((d, d), dtype=bool)
    U[rows[pick], cols[pick]] = True
    return U | U.T


def _ba_skeleton(d: int, m: int, rng: np.random.Generator) -> np.ndarray:
    U = np.zeros((d, d), dtype=bool)
    degree = np.zeros(d)
    for t in range(1, d):
        appeal = degree[:t] + 1.0  # preferential attachment with zero appeal 1
        targets = rng.choice(t, size=min(m, t), replace=False, p=appeal / appeal.sum())
        U[t, targets] = U[targets, t] = True
        degree[targets] += 1
        degree[t] += targets.size
    perm = rng.permutation(d)  # random labels, so node 0 is not always the oldest hub
    return U[np.ix_(perm, perm)]


def simulate_dag(
    d: int, *, s0: int, graph_type: str = "ER", rng: np.random.Generator | int | None = None
) -> np.ndarray:
    """Draw a random DAG as a 0/1 integer adjacency matrix of shape (d, d).

    Parameters
    ----------
    d : int >= 1, number of nodes
    s0 : int, 0 <= s0 <= d(d-1)/2
        ``"ER"``: the exact number of edges. ``"SF"``: sets ``m = max(1, round(s0 / d))`` edges per
        new node (Python ``round``, half to even).
    graph_type : {"ER", "SF"}
        ``"ER"``: ``s0`` distinct node pairs chosen uniformly among all ``d(d-1)/2``.
        ``"SF"``: Barabási–Albert growth; node ``t = 1, ..., d-1`` joins ``min(m, t)`` distinct
        earlier nodes with probability proportional to ``degree + 1``, giving exactly
        ``m(d-1) - m(m-1)/2`` edges (``d - 1`` when ``m = 1``); nodes are then relabelled at random.
    rng : None, int or numpy Generator

    Returns
    -------
    B : int array of shape (d, d)
        ``B[i, j] = 1`` for the edge ``i -> j``. The skeleton is oriented along a uniformly random
        node order, so any node can be a source; in SF graphs hubs are as often parents as children.

    Examples
    --------
    >>> B = simulate_dag(10, s0=10, rng=0)
    >>> B.shape, int(B.sum())
    ((10, 10), 10)
    """
    d = check_int(d, "d", low=1)
    s0 = check_int(s0, "s0", low=0)
    graph_type = check_choice(graph_type, "graph_type", _GRAPH_TYPES)
    max_edges = d * (d - 1) // 2
    if s0 > max_edges:
        raise ValueError(f"`s0` must be <= d(d-1)/2 = {max_edges} for d = {d}; got {s0}")
    rng = as_generator(rng)
    if graph_type == "ER":
        U = _er_skeleton(d, s0, rng)
    else:
        U = _ba_skeleton(d, max(1, round(s0 / d)), rng)
    return _orient(U, rng)


def _check_ranges(w_ranges: Sequence[tuple[float, float]] | np.ndarray) -> np.ndarray:
    try:
        arr = np.array(w_ranges, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"`w_ranges` must be a sequence of (low, high) pairs of real numbers; got {w_ranges!r}"
        ) from exc
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] != 2:
        raise ValueError(f"`w_ranges` must be a non-empty sequence of (low, high) pairs; got {w_ranges!r}")
    if not np.isfinite(arr).all() or np.any(arr[:, 0] >= arr[:, 1]):
        raise ValueError(f"`w_ranges` needs finite pairs with low < high; got {w_ranges!r}")
    srt = arr[np.argsort(arr[:, 0])]
    if np.any(srt[1:, 0] < srt[:-1, 1]):
        raise ValueError(f"`w_ranges` must be disjoint intervals; got {w_ranges!r}")
    return arr


def simulate_weights(
    B: ArrayLike,
    *,
    w_ranges: Sequence[tuple[float, float]] | np.ndarray = ((-2.0, -0.5), (0.5, 2.0)),
    rng: np.random.Generator | int | None = None,
) -> np.ndarray:
    """Draw edge weights on the support of ``B``, uniform on the union of ``w_ranges``.

    Each edge picks a range with probability proportional to its length, then a uniform value in
    it, so the weight is uniform on the union (for the default ``±[0.5, 2]`` each sign has
    probability ½).

    Parameters
    ----------
    B : array of shape (d, d), the adjacency (entries ``!= 0`` get a weight)
    w_ranges : sequence of disjoint (low, high) pairs with low < high
    rng : None, int or numpy Generator

    Returns
    -------
    W : float array of shape (d, d), zero off the support of ``B``

    Examples
    --------
    >>> W = simulate_weights(simulate_dag(5, s0=5, rng=0), rng=1)
    >>> bool(np.all((np.abs(W[W != 0]) >= 0.5) & (np.abs(W[W != 0]) <= 2)))
    True
    """
    B = as_square_matrix(B, "B")
    ranges = _check_ranges(w_ranges)
    rng = as_generator(rng)
    rows, cols = np.nonzero(B)
    lengths = ranges[:, 1] - ranges[:, 0]
    which = rng.choice(len(ranges), size=rows.size, p=lengths / lengths.sum())
    W = np.zeros_like(B)
    W[rows, cols] = rng.uniform(ranges[which, 0], ranges[which, 1])
    return W


def check_noise_scale(noise_scale: float | np.ndarray, d: int) -> float | np.ndarray:
    if isinstance(noise_scale, np.ndarray) and noise_scale.ndim == 0:
        noise_scale = noise_scale.item()
    if np.ndim(noise_scale) == 0:
        return check_real(noise_scale, "noise_scale", low=0.0)
    s = np.array(noise_scale, dtype=float)
    if s.shape != (d,):
        raise ValueError(f"`noise_scale` must be a scalar or of shape ({d},); got shape {s.shape}")
    if not np.isfinite(s).all() or np.any(s < 0):
        raise ValueError(f"`noise_scale` entries must be finite and >= 0; got {noise_scale!r}")
    return s


def simulate_linear_sem(
    W: ArrayLike,
    n: int,
    *,
    noise: str = "gaussian",
    noise_scale: float | np.ndarray = 1.0,
    rng: np.random.Generator | int | None = None,
) -> np.ndarray:
    """Sample ``n`` rows of the linear SEM ``X = X W + N``, node by node in topological order.

    Parameters
    ----------
    W : array of shape (d, d), weights of a DAG (``ValueError`` if it has a cycle)
    n : int >= 1, number of samples
    noise : {"gaussian", "exponential", "gumbel", "uniform"}
        Independent noise with scale ``s``: gaussian N(0, s²) (variance s²); exponential with scale
        ``s`` (mean s, variance s²); gumbel(0, s) (mean γs with γ ≈ 0.5772, variance π²s²/6);
        uniform on (−s, s) (variance s²/3).
    noise_scale : float >= 0 or array of shape (d,)
        ``s``, for all nodes or per node.
    rng : None, int or numpy Generator

    Returns
    -------
    X : float array of shape (n, d)

    Examples
    --------
    >>> W = simulate_weights(simulate_dag(4, s0=3, rng=0), rng=0)
    >>> simulate_linear_sem(W, 100, rng=0).shape
    (100, 4)
    """
    W = as_square_matrix(W, "W")
    n = check_int(n, "n", low=1)
    noise = check_choice(noise, "noise", tuple(_NOISES))
    scale = check_noise_scale(noise_scale, W.shape[0])
    order = topological_order(W)
    rng = as_generator(rng)
    X = _NOISES[noise](rng, (n, W.shape[0])) * scale
    for j in order:  # parents of j are final when j is reached
        parents = np.flatnonzero(W[:, j])
        X[:, j] += X[:, parents] @ W[parents, j]
    return X


@dataclass(frozen=True)
class HeterogeneousData:
    """Participants' samples from a shared DAG with participant-specific weights.

    Attributes
    ----------
    participants : tuple of float arrays of shape (n_k, d)
    weights : tuple of float arrays of shape (d, d), the weights ``B*_k`` participant k sampled from
    W : float array of shape (d, d), the global weights ``W*``
    """

    participants: tuple
    weights: tuple
    W: np.ndarray


def simulate_heterogeneous(
    W: ArrayLike,
    sizes: Sequence[int],
    *,
    tau: float = 0.3,
    noise: str = "gaussian",
    noise_scale: float | np.ndarray = 1.0,
    rng: np.random.Generator | int | None = None,
) -> HeterogeneousData:
    """Sample each participant from the shared DAG of ``W`` with its own perturbed weights.

    Participant ``k`` draws ``B*_k[i, j] ~ N(W[i, j], tau²)`` on the support of ``W`` (0 elsewhere)
    and then ``sizes[k]`` rows of ``X = X B*_k + N`` (see :func:`simulate_linear_sem`). Each
    participant uses its own stream from ``rng.spawn``, so participant ``k``'s data depend only on
    the seed and ``k``: appending a participant does not change the others.

    Parameters
    ----------
    W : array of shape (d, d), global weights ``W*`` of a DAG
    sizes : sequence of ints >= 1, ``n_k`` for each participant
    tau : float >= 0, standard deviation of the weight perturbation
    noise, noise_scale : see :func:`simulate_linear_sem`
    rng : None, int or numpy Generator

    Examples
    --------
    >>> W = simulate_weights(simulate_dag(5, s0=5, rng=0), rng=0)
    >>> data = simulate_heterogeneous(W, [50, 80], rng=0)
    >>> [X.shape for X in data.participants]
    [(50, 5), (80, 5)]
    """
    W = as_square_matrix(W, "W")
    topological_order(W)  # fail before drawing anything if W is cyclic
    sizes = check_sizes(sizes, "sizes")
    tau = check_real(tau, "tau", low=0.0)
    noise = check_choice(noise, "noise", tuple(_NOISES))
    scale = check_noise_scale(noise_scale, W.shape[0])
    rng = as_generator(rng)
    parts, weights = [], []
    for n_k, stream in zip(sizes, rng.spawn(len(sizes))):
        B_k = np.where(W != 0, W + tau * stream.standard_normal(W.shape), 0.0)
        weights.append(B_k)
        parts.append(simulate_linear_sem(B_k, n_k, noise=noise, noise_scale=scale, rng=stream))
    return HeterogeneousData(participants=tuple(parts), weights=tuple(weights), W=W)


@dataclass(frozen=True)
class SimulatedData:
    """Output of :func:`simulate`.

    Attributes
    ----------
    B_true : int array of shape (d, d), the 0/1 adjacency of the true DAG
    W_true : float array of shape (d, d), the true weights (support ``B_true``)
    X : float array of shape (n, d), the pooled sample
    participants : list of float arrays of shape (n_k, d), ``X`` in equal contiguous shards
    """

    B_true: np.ndarray
    W_true: np.ndarray
    X: np.ndarray
    participants: list


def simulate(
    d: int,
    n: int,
    *,
    participants: int = 10,
    s0: int | None = None,
    graph_type: str = "ER",
    noise: str = "gaussian",
    standardise: bool = False,
    rng: np.random.Generator | int | None = None,
) -> SimulatedData:
    """Simulate the standard benchmark: a random DAG, weights ``±[0.5, 2]``, SEM data, equal shards.

    Parameters
    ----------
    d : int >= 1, number of nodes
    n : int >= 2 * participants, total number of samples
    participants : int >= 1
    s0 : int, optional
        Edges (see :func:`simulate_dag`); default ``d``, capped at ``d(d-1)/2`` for ``d < 3``.
    graph_type : {"ER", "SF"}
    noise : {"gaussian", "exponential", "gumbel", "uniform"}
        Unit-scale noise (see :func:`simulate_linear_sem`).
    standardise : bool, default False
        Divide each column by its *population* standard deviation (a function of the weights and
        the noise family, :func:`population_scale`; not of the sample, so it leaks nothing), and
        rescale ``W_true`` to match (``W[i, j]·s_i/s_j``). The marginal variances, which grow along
        the causal order in this design (high varsortability), become all close to 1.
    rng : None, int or numpy Generator
        The graph, the weights and the samples use three spawned streams, so for a fixed seed the
        graph and weights do not depend on ``n``.

    Examples
    --------
    >>> sim = simulate(10, 1000, participants=5, rng=0)
    >>> sim.X.shape, len(sim.participants), int(sim.B_true.sum())
    ((1000, 10), 5, 10)
    """
    d = check_int(d, "d", low=1)
    if s0 is None:
        s0 = min(d, d * (d - 1) // 2)
    rng = as_generator(rng)
    graph_rng, weight_rng, data_rng = rng.spawn(3)
    B = simulate_dag(d, s0=s0, graph_type=graph_type, rng=graph_rng)
    W = simulate_weights(B, rng=weight_rng)
    X = simulate_linear_sem(W, n, noise=noise, rng=data_rng)
    if check_bool(standardise, "standardise"):
        scale = population_scale(W, noise=noise)
        X, W = X / scale, W * scale[:, None] / scale[None, :]
    return SimulatedData(B_true=B, W_true=W, X=X, participants=split(X, participants))


#: the variance of each unit-scale noise family of :func:`simulate_linear_sem`
NOISE_VARIANCE = {"gaussian": 1.0, "exponential": 1.0, "gumbel": math.pi**2 / 6.0, "uniform": 1.0 / 3.0}


def population_scale(
    W: ArrayLike, *, noise: str = "gaussian", noise_scale: float | np.ndarray = 1.0
) -> np.ndarray:
    """The population standard deviation of each variable of the linear SEM ``X = X W + N``:
    the square root of the diagonal of ``(I − W)⁻ᵀ diag(v) (I − W)⁻¹``, v the noise variances.

    Examples
    --------
    >>> population_scale([[0.0, 2.0], [0.0, 0.0]]).round(4).tolist()  # x1 = 2·x0 + e: var 5
    [1.0, 2.2361]
    """
    W = as_square_matrix(W, "W")
    noise = check_choice(noise, "noise", tuple(_NOISES))
    v = NOISE_VARIANCE[noise] * np.broadcast_to(
        np.asarray(check_noise_scale(noise_scale, W.shape[0])) ** 2, (W.shape[0],)
    )
    return np.sqrt(np.diag(sem_covariance(W, v)))


def sem_covariance(W: ArrayLike, variances: ArrayLike) -> np.ndarray:
    """The population covariance ``(I − W)⁻ᵀ diag(v) (I − W)⁻¹`` of the linear SEM
    ``X = X W + N`` (rows are samples) with independent noise of variances ``v`` (shape (d,)).

    Examples
    --------
    >>> sem_covariance([[0.0, 2.0], [0.0, 0.0]], [1.0, 1.0]).tolist()  # x1 = 2·x0 + e
    [[1.0, 2.0], [2.0, 5.0]]
    """
    W = as_square_matrix(W, "W")
    topological_order(W)  # a cycle raises
    v = np.asarray(variances, dtype=float)
    if v.shape != (W.shape[0],):
        raise ValueError(f"`variances` must have shape ({W.shape[0]},); got {v.shape}")
    M = np.linalg.inv(np.eye(W.shape[0]) - W)
    return M.T @ (v[:, None] * M)


def simulated_bounds(d: int) -> dict[str, float]:
    """Public clipping bounds at the scale of :func:`simulate`'s default design (an ER graph with
    d edges, weights U(±[0.5, 2]), unit Gaussian noise) for d variables:

    - ``feature_bound`` = max(30, 5d), a bound on x_ia² (DP-Fed-Sparse-BNSL's private
      smoothness and centring);
    - ``clip_norm`` = 4√d, a bound on a row's norm ‖x_i‖₂ (DP-Fed-BNSL's covariance release).

    They depend on the design and d only, never on a dataset: for simulated data they are public.
    The rule was read off tuning seeds 100–119 of ``simulate(d, 2000, participants=1)`` (the
    reported results use other seeds): for d ≤ 100 the share of rows with ‖x_i‖₂ > 4√d had a
    median of 2–6 % and a maximum of 24–29 % (73 % on one graph at d = 200), and the largest
    column median of x² stayed below max(30, 5d) for 10 ≤ d ≤ 200 on all but one graph (35
    against 30 at d = 5, 2942 against 1000 on one graph at d = 200) — so the package's scale
    warnings (more than half of the rows clipped) stay quiet on the simulator at the sizes the
    sweeps use.
    For your own data, take bounds from the measurement's known range, not from this rule.

    Examples
    --------
    >>> simulated_bounds(20)
    {'feature_bound': 100.0, 'clip_norm': 17.88854381999832}
    """
    d = check_int(d, "d", low=1)
    return {"feature_bound": float(max(30, 5 * d)), "clip_norm": 4.0 * math.sqrt(d)}
