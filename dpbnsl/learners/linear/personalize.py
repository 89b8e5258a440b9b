"""Personalisation: refit a learned DAG's weights per participant (Fed-Sparse-BNSL §6.1 and
Fig. 2; docs/decisions.md, 'Personalisation').

After the federation has agreed on a structure ``supp(W)``, participant k keeps that support and
refits the weights of each node j on its parents pa(j) = {i : W[i, j] ≠ 0} by ordinary least squares
on its own data, ``B̂_k[pa, j] = argmin_b ‖X_k[:, j] − X_k[:, pa] b‖²``. The refit is local: nothing
is sent, so it is neither a message nor a privacy event (a participant who publishes B̂_k publishes a
non-private function of its data).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._validation import (
    ArrayLike,
    as_participants,
    as_square_matrix,
    check_bool,
    check_data_scale,
    readonly_copy,
)
from ...blas import one_blas_thread
from ...metrics import nmse
from ...scores import centre as centre_data
from ..result import LearnResult

__all__ = ["Personalized", "personalize", "personalized_nmse"]


@dataclass(frozen=True)
class Personalized:
    """Per-participant weights on a shared support.

    Attributes
    ----------
    B : tuple of read-only arrays of shape (d, d)
        ``B[k]`` is participant k's refitted weight matrix (``B[k][i, j]`` weight of edge i → j).
    support : read-only bool array of shape (d, d)
        The shared structure ``W != 0`` the refit used.
    columns : tuple of str or None
        Variable names, when the input carried them.
    """

    B: tuple
    support: np.ndarray
    columns: tuple[str, ...] | None = None


@one_blas_thread
def personalize(participants: Any, W: ArrayLike | LearnResult, *, centre: bool = True) -> Personalized:
    """Refit the weights of the structure ``supp(W)`` on each participant's own data by OLS.

    Parameters
    ----------
    participants : sequence of arrays or DataFrames of shape (n_k, d)
    W : array or DataFrame of shape (d, d), or a LearnResult (its thresholded ``W``)
        The shared structure: edge i → j wherever ``W[i, j] != 0``; its values are not used. It need
        not be acyclic, but its diagonal must be zero.
    centre : bool, default True
        Each participant subtracts its own column means first (an intercept-free SEM).

    Returns
    -------
    Personalized
        Column j of ``B[k]`` holds the least-squares coefficients of node j on its parents (via
        ``numpy.linalg.lstsq``: the minimum-norm solution when ``X_k[:, pa]`` is rank deficient,
        e.g. ``n_k < |pa(j)|``); entries outside the support, and columns of parentless nodes, are 0.

    Examples
    --------
    >>> from dpbnsl.simulation import simulate_dag, simulate_heterogeneous, simulate_weights
    >>> W = simulate_weights(simulate_dag(5, s0=5, rng=0), rng=0)
    >>> data = simulate_heterogeneous(W, [2000, 2000], tau=0.3, rng=0)
    >>> fit = personalize(data.participants, W)
    >>> own = personalized_nmse(data.weights, fit.B)
    >>> consensus = personalized_nmse(data.weights, [W, W])
    >>> bool(np.all(own < consensus))
    True
    """
    centre = check_bool(centre, "centre")
    arrays, columns = as_participants(participants, min_rows=1)
    for k, X in enumerate(arrays):
        check_data_scale(X, "participants", where=f" (participant {k})")
    support = as_square_matrix(W.W if isinstance(W, LearnResult) else W, "W") != 0
    d = arrays[0].shape[1]
    if support.shape[0] != d:
        raise ValueError(f"`W` has shape {support.shape} but the participants have {d} columns")
    if np.diag(support).any():
        j = int(np.flatnonzero(np.diag(support))[0])
        raise ValueError(f"`W` must have a zero diagonal (no self-loops); W[{j}, {j}] != 0")
    fits = []
    for X in arrays:
        X = centre_data(X) if centre else X
        B = np.zeros((d, d))
        for j in range(d):
            pa = np.flatnonzero(support[:, j])
            if pa.size:
                B[pa, j] = np.linalg.lstsq(X[:, pa], X[:, j], rcond=None)[0]
        fits.append(readonly_copy(B, dtype=None))
    return Personalized(tuple(fits), readonly_copy(support, dtype=None), columns)


def personalized_nmse(B_true: Sequence, B_est: Sequence | np.ndarray | Personalized) -> np.ndarray:
    """Per-participant ``NMSE_k = ‖B̂_k − B*_k‖²_F / ‖B*_k‖²_F`` (:func:`dpbnsl.metrics.nmse`).

    Argument order is (truth, estimate), as for every metric in :mod:`dpbnsl.metrics`.

    Parameters
    ----------
    B_true : sequence of P arrays of shape (d, d)
        Each participant's true weights B*_k (e.g. ``HeterogeneousData.weights``); none all zero.
    B_est : sequence of P arrays of shape (d, d), or a Personalized
        The estimates B̂_k; pass ``[W] * P`` to score a consensus W "without personalisation".

    Returns
    -------
    array of shape (P,)

    Examples
    --------
    >>> personalized_nmse([[[0, 2.0], [0, 0]]], [[[0, 1.5], [0, 0]]])
    array([0.0625])
    """
    true, est = _per_participant(B_true, "B_true"), _per_participant(B_est, "B_est")
    if len(true) != len(est):
        raise ValueError(f"`B_true` has {len(true)} participants but `B_est` has {len(est)}")
    out = np.empty(len(true))
    for k, (t, e) in enumerate(zip(true, est)):
        try:
            out[k] = nmse(t, e)
        except (TypeError, ValueError) as exc:  # name this function's parameters and participant
            msg = str(exc).replace("`W_true`", "`B_true`").replace("`W_est`", "`B_est`")
            raise type(exc)(f"participant {k}: {msg}") from None
    return out


def _per_participant(seq: Any, name: str) -> list:
    if isinstance(seq, Personalized):
        return list(seq.B)
    if (
        isinstance(seq, np.ndarray)
        and seq.ndim == 3
        or (isinstance(seq, Sequence) and not isinstance(seq, str))
    ):
        return list(seq)
    raise TypeError(
        f"`{name}` must be a sequence of (d, d) arrays, one per participant; got "
        f"{type(seq).__name__}" + (f" of shape {seq.shape}" if hasattr(seq, "shape") else "")
    )
