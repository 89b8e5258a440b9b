"""Structural VAR(p) time series (the FedDBN setting): graphs, stable weights and simulation.

Model (FedDBN eq. 1, samples in rows, ``W[i, j] != 0`` ⇔ i → j)::

    x_tᵀ = x_tᵀ W + x_{t−1}ᵀ A_1 + … + x_{t−p}ᵀ A_p + u_tᵀ,     u_t ~ N(0, σ² I)

``W`` (d × d) is the intra-slice DAG; the lag matrices are stacked as ``A = [A_1; A_2; …; A_p]``
(shape ``(p·d, d)``, lag 1 in the top d rows), so that with ``Z_t = [x_{t−1}ᵀ | … | x_{t−p}ᵀ]`` the
model reads ``x_tᵀ = x_tᵀ W + Z_t A + u_tᵀ``. It is simulated faithfully (docs/decisions.md,
'FedDBN: simulating the structural VAR') as ``x_tᵀ = (Σ_i x_{t−i}ᵀ A_i + u_tᵀ)(I − W)⁻¹`` after a
burn-in, and is stationary when the companion matrix of ``Φ_i = A_i (I − W)⁻¹`` has spectral
radius < 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._validation import (
    ArrayLike,
    as_float_matrix,
    as_generator,
    as_square_matrix,
    check_choice,
    check_int,
    check_real,
)
from ..graphs import is_dag
from ..timeseries import even_sizes
from .linear import simulate_weights

__all__ = [
    "TemporalData",
    "simulate_temporal",
    "simulate_svar",
    "simulate_svar_weights",
    "companion_radius",
]

_SPLITS = ("segment", "realisation")
_ON_UNSTABLE = ("resample", "raise")


# --------------------------------------------------------------------------------------------------
# graphs, weights and stability
# --------------------------------------------------------------------------------------------------


def _er_dag(d: int, p_edge: float, rng: np.random.Generator) -> np.ndarray:
    """Each unordered pair is an edge with probability ``p_edge``; oriented along a random order
    (equivalently: a lower-triangular Bernoulli matrix whose nodes are then randomly permuted)."""
    upper = np.triu(rng.random((d, d)) < p_edge, k=1)
    rank = rng.permutation(d)
    U = upper | upper.T
    return (U & (rank[:, None] < rank[None, :])).astype(int)


def _check_ranges(ranges: Sequence[tuple[float, float]], name: str) -> np.ndarray:
    try:
        arr = np.array(ranges, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"`{name}` must be a sequence of (low, high) pairs; got {ranges!r}") from exc
    if (
        arr.ndim != 2
        or arr.shape[0] == 0
        or arr.shape[1] != 2
        or not np.isfinite(arr).all()
        or np.any(arr[:, 0] >= arr[:, 1])
    ):
        raise ValueError(
            f"`{name}` must be a non-empty sequence of finite (low, high) pairs with "
            f"low < high; got {ranges!r}"
        )
    return arr


def _as_lag_matrix(A: ArrayLike, d: int, name: str = "A") -> np.ndarray:
    A = as_float_matrix(A, name)
    if A.shape[1] != d or A.shape[0] == 0 or A.shape[0] % d:
        raise ValueError(
            f"`{name}` must have shape (p·d, d) = (p·{d}, {d}) for some lag p >= 1 "
            f"(lag blocks stacked vertically); got shape {A.shape}"
        )
    return A


def companion_radius(W: ArrayLike, A: ArrayLike) -> float:
    """Spectral radius of the SVAR's companion matrix; the process is stationary iff it is < 1.

    With ``Φ_i = A_i (I − W)⁻¹`` the reduced form is ``x_tᵀ = Σ_i x_{t−i}ᵀ Φ_i + u_tᵀ(I − W)⁻¹``; in
    the row-state form ``s_t = [x_tᵀ, …, x_{t−p+1}ᵀ] = s_{t−1} C + …`` the companion matrix C has
    ``Φ_i`` in block (i, 1) and identities on the block super-diagonal.

    Parameters
    ----------
    W : array of shape (d, d), intra-slice weights of a DAG
    A : array of shape (p·d, d), stacked lag weights

    Examples
    --------
    >>> round(companion_radius(np.zeros((2, 2)), 0.5 * np.eye(2)), 6)
    0.5
    """
    W = as_square_matrix(W, "W")
    d = W.shape[0]
    A = _as_lag_matrix(A, d)
    p = A.shape[0] // d
    M = np.linalg.inv(np.eye(d) - W)
    C = np.zeros((p * d, p * d))
    C[:, :d] = A @ M
    C[: (p - 1) * d, d:] += np.eye((p - 1) * d)
    return float(np.abs(np.linalg.eigvals(C)).max())


def simulate_svar_weights(
    d: int,
    *,
    lag: int = 1,
    degree: float = 4.0,
    lag_degree: float = 1.0,
    w_ranges: Sequence[tuple[float, float]] = ((-0.5, -0.3), (0.3, 0.5)),
    a_ranges: Sequence[tuple[float, float]] = ((-0.5, -0.3), (0.3, 0.5)),
    decay: float = 1.5,
    rng: np.random.Generator | int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw the intra-slice DAG weights ``W`` and the stacked lag weights ``A`` (FedDBN §7.2).

    - ``W``: Erdős–Rényi, each unordered pair an edge with probability ``min(1, degree/d)``
      ("mean degree 4": ≈ 2(d − 1) edges), oriented along a random node order; weights uniform on
      the union of ``w_ranges`` (paper: ±[0.3, 0.5]).
    - ``A_i`` (i = 1..p): every entry, diagonal included (self-lags), is an edge with probability
      ``min(1, lag_degree/d)`` independently per lag; weights uniform on ``c_i·a_ranges`` with the
      decay ``c_i = decay^{−(i−1)}`` (the lag-index reading of the paper's ``1/η^{p−1}``; identical
      for p = 1).

    Returns
    -------
    W : array of shape (d, d)
    A : array of shape (lag·d, d), ``[A_1; …; A_p]``
    """
    d = check_int(d, "d", low=1)
    lag = check_int(lag, "lag", low=1)
    degree = check_real(degree, "degree", low=0.0)
    lag_degree = check_real(lag_degree, "lag_degree", low=0.0)
    decay = check_real(decay, "decay", low=1.0)
    rng = as_generator(rng)
    B = _er_dag(d, min(1.0, degree / d), rng)
    W = simulate_weights(B, w_ranges=w_ranges, rng=rng)
    ranges = _check_ranges(a_ranges, "a_ranges")
    blocks = []
    for i in range(lag):
        B_i = (rng.random((d, d)) < min(1.0, lag_degree / d)).astype(int)
        blocks.append(simulate_weights(B_i, w_ranges=ranges * decay ** (-i), rng=rng))
    return W, np.vstack(blocks)


def simulate_svar(
    W: ArrayLike,
    A: ArrayLike,
    length: int,
    *,
    burn_in: int = 200,
    noise_scale: float = 1.0,
    rng: np.random.Generator | int | None = None,
) -> np.ndarray:
    """Simulate one realisation of the SVAR(p) ``x_tᵀ = x_tᵀW + Σ_i x_{t−i}ᵀA_i + u_tᵀ``.

    Starts from ``x = 0``, runs ``burn_in + length`` steps of
    ``x_tᵀ = (Σ_i x_{t−i}ᵀ A_i + u_tᵀ)(I − W)⁻¹`` with ``u_t ~ N(0, noise_scale² I)`` and returns
    the last ``length`` rows.

    Parameters
    ----------
    W : array of shape (d, d), weights of a DAG
    A : array of shape (p·d, d), stacked lag weights ``[A_1; …; A_p]``
    length : int >= 1, rows returned
    burn_in : int >= 0, steps discarded first
    noise_scale : float >= 0
    rng : None, int or numpy Generator

    Returns
    -------
    X : array of shape (length, d), rows in time order

    Raises
    ------
    ValueError
        If ``W`` is cyclic or the process is not stationary (companion spectral radius >= 1).
    """
    W = as_square_matrix(W, "W")
    if not is_dag(W):
        raise ValueError("`W` must be the weight matrix of a DAG; it has a directed cycle or self-loop")
    d = W.shape[0]
    A = _as_lag_matrix(A, d)
    length = check_int(length, "length", low=1)
    burn_in = check_int(burn_in, "burn_in", low=0)
    scale = check_real(noise_scale, "noise_scale", low=0.0)
    radius = companion_radius(W, A)
    if radius >= 1.0:
        raise ValueError(
            f"`W` and `A` give a non-stationary SVAR: the companion matrix has "
            f"spectral radius {radius:.4g} >= 1"
        )
    rng = as_generator(rng)
    p = A.shape[0] // d
    M = np.linalg.inv(np.eye(d) - W)
    Phi = A @ M  # reduced-form lag weights, (p·d, d)
    E = rng.standard_normal((burn_in + length, d)) * scale @ M
    X = np.zeros((burn_in + length + p, d))
    for t in range(p, burn_in + length + p):
        X[t] = X[t - p : t][::-1].ravel() @ Phi + E[t - p]  # [x_{t-1}, …, x_{t-p}]
    return X[p + burn_in :]


# --------------------------------------------------------------------------------------------------
# the benchmark generator
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TemporalData:
    """Output of :func:`simulate_temporal`.

    Attributes
    ----------
    W_true : array of shape (d, d), intra-slice weights (a DAG)
    A_true : array of shape (lag·d, d), stacked lag weights ``[A_1; …; A_p]``
    series : tuple over participants of tuples of arrays of shape (T_m, d)
        Participant k's realisations, rows in time order (one realisation with ``split="segment"``).
        Each realisation yields ``T_m − lag`` design rows (:func:`dpbnsl.timeseries.lagged_design`).
    lag : int
    split : {"segment", "realisation"}
    radius : float, the companion spectral radius (< 1)
    """

    W_true: np.ndarray
    A_true: np.ndarray
    series: tuple
    lag: int
    split: str
    radius: float

    @property
    def B_true(self) -> np.ndarray:
        """0/1 adjacency of the intra-slice DAG."""
        return (self.W_true != 0).astype(int)

    @property
    def A_bin(self) -> np.ndarray:
        """0/1 support of the lag weights, shape (lag·d, d)."""
        return (self.A_true != 0).astype(int)

    @property
    def pooled(self) -> tuple:
        """All realisations of all participants (the pooled "All data" input)."""
        return tuple(s for part in self.series for s in part)

    @property
    def n_samples(self) -> tuple[int, ...]:
        """Design rows per participant."""
        return tuple(sum(s.shape[0] - self.lag for s in part) for part in self.series)


def simulate_temporal(
    d: int,
    n: int,
    *,
    participants: int = 1,
    lag: int = 1,
    split: str = "segment",
    realisations: int = 1,
    degree: float = 4.0,
    lag_degree: float = 1.0,
    w_ranges: Sequence[tuple[float, float]] = ((-0.5, -0.3), (0.3, 0.5)),
    a_ranges: Sequence[tuple[float, float]] = ((-0.5, -0.3), (0.3, 0.5)),
    decay: float = 1.5,
    noise_scale: float = 1.0,
    burn_in: int = 200,
    on_unstable: str = "resample",
    max_tries: int = 100,
    rng: np.random.Generator | int | None = None,
) -> TemporalData:
    """Simulate FedDBN's benchmark: an SVAR(p) on random graphs, split over participants.

    ``n`` is the total number of design rows (the paper's n), shared evenly: participant k gets
    ``n_k`` rows (remainder to the first participants).

    - ``split="segment"``: one series of ``n + P·lag`` steps (after ``burn_in``) cut into P
      contiguous segments of ``n_k + lag`` steps (:func:`dpbnsl.timeseries.split_series`); each
      participant holds one
      realisation.
    - ``split="realisation"``: participant k holds ``realisations`` independent realisations (own
      burn-in each) whose design rows add up to ``n_k``.

    Parameters
    ----------
    d : int >= 1
    n : int, total design rows, at least ``participants × realisations``
    participants : int >= 1
    lag : int >= 1, the order p
    split : {"segment", "realisation"}
    realisations : int >= 1, realisations per participant (``split="realisation"`` only)
    degree, lag_degree, w_ranges, a_ranges, decay : see :func:`simulate_svar_weights`
    noise_scale, burn_in : see :func:`simulate_svar`
    on_unstable : {"resample", "raise"}
        When the drawn weights give a non-stationary process: draw new graphs and weights (up to
        ``max_tries`` draws, then raise) or raise at once.
    max_tries : int >= 1
    rng : None, int or numpy Generator
        Weights and series use separate spawned streams (each realisation its own).

    Returns
    -------
    TemporalData

    Examples
    --------
    >>> data = simulate_temporal(5, 100, participants=4, rng=0)
    >>> data.A_true.shape, data.n_samples, data.series[0][0].shape
    ((5, 5), (25, 25, 25, 25), (26, 5))
    """
    d = check_int(d, "d", low=1)
    n = check_int(n, "n", low=1)
    P = check_int(participants, "participants", low=1)
    lag = check_int(lag, "lag", low=1)
    split = check_choice(split, "split", _SPLITS)
    M = check_int(realisations, "realisations", low=1)
    on_unstable = check_choice(on_unstable, "on_unstable", _ON_UNSTABLE)
    max_tries = check_int(max_tries, "max_tries", low=1)
    if split == "segment" and M != 1:
        raise ValueError(
            f"`realisations` = {M} needs split='realisation'; with split='segment' "
            f"each participant holds one contiguous segment"
        )
    if n < P * M:
        raise ValueError(
            f"`n` = {n} design rows cannot give {P} participants × {M} realisations at least one row each"
        )
    rng = as_generator(rng)
    weight_rng, data_rng = rng.spawn(2)
    for _attempt in range(1 if on_unstable == "raise" else max_tries):
        W, A = simulate_svar_weights(
            d,
            lag=lag,
            degree=degree,
            lag_degree=lag_degree,
            w_ranges=w_ranges,
            a_ranges=a_ranges,
            decay=decay,
            rng=weight_rng,
        )
        radius = companion_radius(W, A)
        if radius < 1.0:
            break
    else:
        tries = "1 draw" if on_unstable == "raise" else f"{max_tries} draws"
        raise ValueError(
            f"the drawn SVAR is not stationary (companion spectral radius "
            f"{radius:.4g} >= 1 after {tries}); lower `degree`, `lag_degree` or the "
            f"weight ranges"
        )
    sizes = even_sizes(n, P)
    if split == "segment":
        X = simulate_svar(W, A, n + P * lag, burn_in=burn_in, noise_scale=noise_scale, rng=data_rng)
        bounds = np.cumsum([0] + [s + lag for s in sizes])
        series: tuple[tuple[np.ndarray, ...], ...] = tuple((X[a:b],) for a, b in zip(bounds[:-1], bounds[1:]))
    else:
        streams = iter(data_rng.spawn(P * M))
        series = tuple(
            tuple(
                simulate_svar(W, A, m + lag, burn_in=burn_in, noise_scale=noise_scale, rng=next(streams))
                for m in even_sizes(n_k, M)
            )
            for n_k in sizes
        )
    for arr in (W, A, *(s for part in series for s in part)):
        arr.setflags(write=False)
    return TemporalData(W_true=W, A_true=A, series=series, lag=lag, split=split, radius=radius)
