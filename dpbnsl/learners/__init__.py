"""Structure learners: one algorithm per module, each returning a :class:`LearnResult`.

The names below are imported on first use (PEP 562), so importing one learner module (or the
light registry, :mod:`~dpbnsl.learners.registry`) does not load every other learner."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

#: where each exported name lives (a submodule of this package)
_EXPORTS = {
    "LearnResult": "result",
    "DataScaleWarning": "scale_checks",
    "LocalFits": "combiners",
    "notears": "linear.notears",
    "fed_bnsl": "linear.fed_bnsl",
    "fed_sparse_bnsl": "linear.fed_sparse_bnsl",
    "dp_fed_sparse_bnsl": "linear.dp_fed_sparse_bnsl",
    "dp_fed_bnsl": "linear.dp_fed_bnsl",
    "select_dp_fed_sparse_bnsl": "linear.private_selection",
    "sortnregress": "linear.sortnregress",
    "dp_sortnregress": "linear.dp_sortnregress",
    "personalize": "linear.personalize",
    "personalized_nmse": "linear.personalize",
    "Personalized": "linear.personalize",
    "pgcd": "linear.pgcd",
    "PGCDNoise": "linear.pgcd",
    "notears_local": "combiners",
    "notears_voting": "combiners",
    "notears_best": "combiners",
    "notears_average": "combiners",
    "pc": "constraint.pc",
    "fed_pc": "constraint.fed_pc",
    "pc_local": "constraint.fed_pc",
    "LocalPC": "constraint.fed_pc",
    "pc_all": "constraint.fed_pc",
    "pc_best": "constraint.fed_pc",
    "pc_avg_scores": "constraint.fed_pc",
    "fed_pc_simple_i": "constraint.fed_pc",
    "fed_pc_simple_ii": "constraint.fed_pc",
    "dp_cov_pc": "constraint.dp_cov_pc",
    "pc_from_covariance": "constraint.dp_cov_pc",
    "priv_pc": "constraint.priv_pc",
    "dp_fed_pc": "constraint.dp_fed_pc",
    "ds_fcd": "nonlinear.ds_fcd",
    "as_fcd": "nonlinear.ds_fcd",
    "fcd_centralized": "nonlinear.ds_fcd",
    "fcd_defaults": "nonlinear.ds_fcd",
    "notears_mlp": "nonlinear.notears_mlp",
    "notears_mlp_local": "nonlinear.notears_mlp",
    "notears_mlp_voting": "nonlinear.notears_mlp",
    "notears_mlp_best": "nonlinear.notears_mlp",
    "fed_bnsl_mlp": "nonlinear.fed_bnsl_mlp",
    "dynotears": "temporal.dynotears",
    "dynotears_local": "temporal.dynotears_baselines",
    "dynotears_average": "temporal.dynotears_baselines",
    "dynotears_best": "temporal.dynotears_baselines",
    "dynotears_all": "temporal.dynotears_baselines",
    "fed_dbn": "temporal.fed_dbn",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, for type checkers and editors
    from .combiners import LocalFits, notears_average, notears_best, notears_local, notears_voting
    from .constraint.dp_cov_pc import dp_cov_pc, pc_from_covariance
    from .constraint.dp_fed_pc import dp_fed_pc
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
    from .constraint.priv_pc import priv_pc
    from .linear.dp_fed_bnsl import dp_fed_bnsl
    from .linear.dp_fed_sparse_bnsl import dp_fed_sparse_bnsl
    from .linear.dp_sortnregress import dp_sortnregress
    from .linear.fed_bnsl import fed_bnsl
    from .linear.fed_sparse_bnsl import fed_sparse_bnsl
    from .linear.notears import notears
    from .linear.personalize import Personalized, personalize, personalized_nmse
    from .linear.pgcd import PGCDNoise, pgcd
    from .linear.private_selection import select_dp_fed_sparse_bnsl
    from .linear.sortnregress import sortnregress
    from .nonlinear.ds_fcd import as_fcd, ds_fcd, fcd_centralized, fcd_defaults
    from .nonlinear.fed_bnsl_mlp import fed_bnsl_mlp
    from .nonlinear.notears_mlp import notears_mlp, notears_mlp_best, notears_mlp_local, notears_mlp_voting
    from .result import LearnResult
    from .scale_checks import DataScaleWarning
    from .temporal.dynotears import dynotears
    from .temporal.dynotears_baselines import (
        dynotears_all,
        dynotears_average,
        dynotears_best,
        dynotears_local,
    )
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
    "dp_cov_pc",
    "pc_from_covariance",
    "priv_pc",
    "dp_fed_pc",
    "sortnregress",
    "dp_sortnregress",
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
