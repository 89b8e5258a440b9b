"""Scale mistakes caught where the data live: warnings to the data owner, never to the server.

A private learner clips with bounds declared public (a row norm R, feature bounds X_a on x_ia²)
and may take the data as declared centred. When those declarations do not fit the data (raw
measurements in the thousands against R = 1, say) the run is still private but learns clipping
artefacts. Each check here runs inside one participant's step, on that participant's own data,
and raises a :class:`DataScaleWarning` naming the share of rows clipped or the column that is far
from centred. It is a local message, and not private: it describes the participant's data for the
eyes of their owner. Nothing of it enters the transcript, the ledger or the result, and no noise is
spent on it (in a deployment it prints on the participant's machine only; in a simulation that runs
every participant in one process, the one console shows every participant's warnings).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from ..mechanisms import row_norms

__all__ = [
    "DataScaleWarning",
    "CLIP_WARNING_SHARE",
    "CENTRE_WARNING_RATIO",
    "check_row_norm",
    "check_feature_bound",
    "check_declared_centre",
]

#: Warn when the declared bounds clip more than this share of a participant's rows (per column for
#: feature bounds). Clipping a few per cent is normal DP practice; clipping most rows means the
#: bound is on the wrong scale.
CLIP_WARNING_SHARE = 0.5
#: Warn, for data declared centred, when a column's mean exceeds this many standard deviations.
CENTRE_WARNING_RATIO = 1.0


class DataScaleWarning(UserWarning):
    """A participant's data do not fit the public bounds or the declared centre of a private run
    (a local warning to the data owner; nothing of it is released)."""


def _name(columns: Sequence[str] | None, a: int) -> str:
    return f"column {a}" + (f" ({columns[a]!r})" if columns is not None else "")


def _warn(participant: int, message: str, stacklevel: int) -> None:
    warnings.warn(
        f"participant {participant} (local check, not released): {message}",
        DataScaleWarning,
        stacklevel=stacklevel + 1,
    )


def check_row_norm(X: np.ndarray, *, clip_norm: float, participant: int, stacklevel: int = 3) -> float:
    """Warn when more than :data:`CLIP_WARNING_SHARE` of the rows have ‖x_i‖₂ > ``clip_norm``;
    returns that share."""
    share = float(np.mean(row_norms(X) > clip_norm)) if len(X) else 0.0
    if share > CLIP_WARNING_SHARE:
        _warn(
            participant,
            f"{share:.0%} of its rows have norm above clip_norm = {clip_norm:g} and are scaled "
            f"down, so the released covariance mostly reflects the clipping; declare a clip "
            f"norm on the data's scale (or rescale the data by a public constant: a rescaling by "
            f"the data's own statistics is outside the guarantee)",
            stacklevel,
        )
    return share


def check_feature_bound(
    X: np.ndarray,
    *,
    bound: np.ndarray,
    participant: int,
    columns: Sequence[str] | None = None,
    stacklevel: int = 3,
) -> float:
    """Warn when, in some column a, more than :data:`CLIP_WARNING_SHARE` of the rows have
    x_ia² > X_a; returns the largest such share over the columns."""
    if not len(X):
        return 0.0
    with np.errstate(over="ignore"):
        shares = np.mean(X * X > bound, axis=0)
    a = int(np.argmax(shares))
    share = float(shares[a])
    if share > CLIP_WARNING_SHARE:
        _warn(
            participant,
            f"in {_name(columns, a)}, {share:.0%} of its rows have x² above feature_bound = "
            f"{float(bound[a]):g} and are clipped; declare bounds on the data's scale (or "
            f"rescale the data by a public constant: a rescaling by the data's own statistics is "
            f"outside the guarantee)",
            stacklevel,
        )
    return share


def check_declared_centre(
    X: np.ndarray, *, participant: int, columns: Sequence[str] | None = None, stacklevel: int = 3
) -> float:
    """Warn, for data declared centred, when some column's |mean| exceeds
    :data:`CENTRE_WARNING_RATIO` standard deviations; returns the largest |mean|/std."""
    if len(X) < 2:
        return 0.0
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        ratio = np.abs(X.mean(axis=0)) / X.std(axis=0)
    ratio = np.where(np.isnan(ratio), 0.0, ratio)  # constant zero columns are centred
    a = int(np.argmax(ratio))
    worst = float(ratio[a])
    if worst > CENTRE_WARNING_RATIO:
        _warn(
            participant,
            f"the data are declared centred (centre='declared') but in {_name(columns, a)} the "
            f"mean is more than {CENTRE_WARNING_RATIO:g} standard deviation from 0; centre the "
            f"data before the run or use centre='private'",
            stacklevel,
        )
    return worst
