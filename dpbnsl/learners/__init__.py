"""Structure learners: one algorithm per module, each returning a :class:`LearnResult`."""

from .combiners import LocalFits, notears_average, notears_best, notears_local, notears_voting
from .constraint.fed_pc import (
    LocalPC,
    fed_pc,
    fed_pc_simple_i,
    fed_pc_simple_ii,
    pc_all,
    pc_avg_scores,
    pc_best,
    pc_local,
)
from .constraint.pc import pc
from .linear.dp_fed_bnsl import dp_fed_bnsl
from .linear.dp_fed_sparse_bnsl import dp_fed_sparse_bnsl
from .linear.fed_bnsl import fed_bnsl
from .linear.fed_sparse_bnsl import fed_sparse_bnsl
from .linear.notears import notears
from .linear.personalize import Personalized, personalize, personalized_nmse
from .linear.pgcd import PGCDNoise, pgcd
from .linear.private_selection import select_dp_fed_sparse_bnsl
from .linear.scale_checks import DataScaleWarning
from .nonlinear.ds_fcd import as_fcd, ds_fcd, fcd_centralized, fcd_defaults
from .nonlinear.fed_bnsl_mlp import fed_bnsl_mlp
from .nonlinear.notears_mlp import notears_mlp, notears_mlp_best, notears_mlp_local, notears_mlp_voting
from .result import LearnResult
from .temporal.dynotears import dynotears
from .temporal.dynotears_baselines import dynotears_all, dynotears_average, dynotears_best, dynotears_local
from .temporal.fed_dbn import fed_dbn

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
