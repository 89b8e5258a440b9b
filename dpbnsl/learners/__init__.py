"""Structure learners: one algorithm per module, each returning a :class:`LearnResult`."""

from ._result import LearnResult
from .baselines import LocalFits, notears_average, notears_best, notears_local, notears_voting
from .fed_bnsl import fed_bnsl
from .notears import notears

__all__ = [
    "LearnResult",
    "LocalFits",
    "notears",
    "fed_bnsl",
    "notears_local",
    "notears_voting",
    "notears_best",
    "notears_average",
]
