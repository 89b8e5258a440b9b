"""Splitting the rows of one sample over participants (equal, given or uneven random sizes)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .._validation import ArrayLike, as_generator, check_bool, check_int

__all__ = ["split", "check_sizes"]


def check_sizes(sizes: Sequence[int] | np.ndarray, name: str) -> list[int]:
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, (Sequence, np.ndarray)):
        raise TypeError(f"`{name}` must be a sequence of ints; got {type(sizes).__name__}")
    if len(sizes) == 0:
        raise ValueError(f"`{name}` must hold at least one size; got an empty sequence")
    return [check_int(v, f"{name}[{k}]", low=1) for k, v in enumerate(sizes)]


def split(
    X: ArrayLike,
    participants: int | None = None,
    *,
    sizes: Sequence[int] | np.ndarray | None = None,
    uneven: bool = False,
    min_size: int = 2,
    shuffle: bool = False,
    rng: np.random.Generator | int | None = None,
) -> list:
    """Split the rows of ``X`` into consecutive parts, one per participant.

    Sizes: ``sizes`` when given (must sum to ``n``); else with ``uneven=True`` each part gets
    ``min_size`` rows plus a share of the other ``n - P·min_size`` rows drawn as
    ``Multinomial(n - P·min_size, p)`` with ``p ~ Dirichlet(1, ..., 1)``; else equal shards, the
    ``n mod P`` remainder rows going one each to the first shards. Every part must have at least
    ``min_size`` rows. ``shuffle=True`` permutes the rows before cutting.

    Parameters
    ----------
    X : array of shape (n, d) or DataFrame
    participants : int >= 1, the number of parts ``P`` (required unless ``sizes`` is given)
    sizes, uneven, min_size, shuffle : see above
    rng : None, int or numpy Generator, used only when ``uneven`` or ``shuffle``

    Returns
    -------
    parts : list of P new arrays of shape (n_k, d), or DataFrames (same columns and index labels)

    Examples
    --------
    >>> [p.shape[0] for p in split(np.zeros((10, 3)), 3)]
    [4, 3, 3]
    """
    is_frame = isinstance(X, pd.DataFrame)
    if not is_frame:
        X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"`X` must be 2-dimensional with shape (n, d); got shape {X.shape}")
    n = X.shape[0]
    min_size = check_int(min_size, "min_size", low=1)
    uneven, shuffle = check_bool(uneven, "uneven"), check_bool(shuffle, "shuffle")
    rng = as_generator(rng)
    if sizes is not None:
        if uneven:
            raise ValueError("`sizes` and `uneven=True` are mutually exclusive; pass one of them")
        sizes = check_sizes(sizes, "sizes")
        if participants is not None and check_int(participants, "participants") != len(sizes):
            raise ValueError(f"`participants` = {participants!r} disagrees with len(`sizes`) = {len(sizes)}")
        if sum(sizes) != n:
            total = sum(sizes)
            raise ValueError(f"`sizes` must sum to the number of rows n = {n}; they sum to {total}")
        small = [(k, s) for k, s in enumerate(sizes) if s < min_size]
        if small:
            k, s = small[0]
            raise ValueError(f"`sizes[{k}]` = {s} is below `min_size` = {min_size}")
    else:
        if participants is None:
            raise ValueError("`participants` (number of parts) is required unless `sizes` is given")
        P = check_int(participants, "participants", low=1)
        if P * min_size > n:
            raise ValueError(
                f"cannot split n = {n} rows into `participants` = {P} parts of at least "
                f"`min_size` = {min_size} rows ({P * min_size} rows needed)"
            )
        if uneven:
            extra = rng.multinomial(n - P * min_size, rng.dirichlet(np.ones(P)))
            sizes = [min_size + int(e) for e in extra]
        else:
            base, rest = divmod(n, P)
            sizes = [base + (k < rest) for k in range(P)]
    rows = rng.permutation(n) if shuffle else np.arange(n)
    bounds = np.cumsum([0, *sizes])
    if is_frame:
        return [X.iloc[rows[a:b]].copy() for a, b in zip(bounds[:-1], bounds[1:])]
    return [X[rows[a:b]] for a, b in zip(bounds[:-1], bounds[1:])]  # fancy indexing copies
