"""Structure learners: one algorithm per module, each returning a :class:`LearnResult`."""

from ._result import LearnResult
from .baselines import LocalFits, notears_average, notears_best, notears_local, notears_voting
from .dp_fed_bnsl import dp_fed_bnsl
from .dp_fed_sparse_bnsl import dp_fed_sparse_bnsl
from .fed_bnsl import fed_bnsl
from .fed_sparse_bnsl import fed_sparse_bnsl
from .personalize import Personalized, personalize, personalized_nmse
from .pgcd import PGCDNoise, pgcd
from .scale_checks import DataScaleWarning
from .private_selection import select_dp_fed_sparse_bnsl
from .notears import notears
from .notears_mlp import notears_mlp, notears_mlp_best, notears_mlp_local, notears_mlp_voting
from .fed_bnsl_mlp import fed_bnsl_mlp
from .dynotears import dynotears
from .dynotears_baselines import dynotears_all, dynotears_average, dynotears_best, dynotears_local
from .fed_dbn import fed_dbn
from .ds_fcd import as_fcd, ds_fcd, fcd_centralized, fcd_defaults
from .pc import pc
from .fed_pc import (LocalPC, fed_pc, fed_pc_simple_i, fed_pc_simple_ii, pc_all, pc_avg_scores,
                     pc_best, pc_local)

__all__ = [
    "LearnResult",
    "DataScaleWarning",
    "LocalFits",
    "notears",
    "fed_bnsl",
    "fed_sparse_bnsl",
    "dp_fed_sparse_bnsl",
    "dp_fed_bnsl",
    "select_dp_fed_sparse_bnsl",
    "personalize",
    "personalized_nmse",
    "Personalized",
    "pgcd",
    "PGCDNoise",
    "notears_local",
    "notears_voting",
    "notears_best",
    "notears_average",
    "pc",
    "fed_pc",
    "pc_local",
    "LocalPC",
    "pc_all",
    "pc_best",
    "pc_avg_scores",
    "fed_pc_simple_i",
    "fed_pc_simple_ii",
    "ds_fcd",
    "as_fcd",
    "fcd_centralized",
    "fcd_defaults",
    "notears_mlp",
    "notears_mlp_local",
    "notears_mlp_voting",
    "notears_mlp_best",
    "fed_bnsl_mlp",
    "dynotears",
    "dynotears_local",
    "dynotears_average",
    "dynotears_best",
    "dynotears_all",
    "fed_dbn",
]
