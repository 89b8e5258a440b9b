"""What an honest-but-curious server learns from the messages of a federated protocol.

Every attack is a pure function of a :class:`~dpbnsl.federation.Transcript` and the protocol's
public hyperparameters (never of the participants' data):

- :mod:`~dpbnsl.attacks.covariance`: exact covariance reconstruction from Fed-BNSL (and the noisy
  release from DP-Fed-BNSL);
- :mod:`~dpbnsl.attacks.sparse`: partial Gram-matrix reconstruction from Fed-Sparse-BNSL's PGCD
  updates;
- :mod:`~dpbnsl.attacks.inference`: what a covariance enables (membership, attribute inference,
  record reconstruction);
- :mod:`~dpbnsl.attacks.report`: all of it against every participant of one run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

#: where each exported name lives; imported on first use (PEP 562), so that importing one
#: submodule (e.g. for a name table) does not load the others
_EXPORTS = {
    "CovarianceError": "covariance",
    "CovarianceReconstruction": "covariance",
    "covariance_error": "covariance",
    "reconstruct_covariance": "covariance",
    "reconstruct_covariances": "covariance",
    "attribute_inference": "inference",
    "membership_inference": "inference",
    "reconstruct_record": "inference",
    "roc_auc": "inference",
    "tpr_at_fpr": "inference",
    "AttackReport": "report",
    "attack_report": "report",
    "population_covariance": "report",
    "server_covariances": "report",
    "SparseGramReconstruction": "sparse",
    "reconstruct_gram_sparse": "sparse",
    "reconstruct_gram_sparse_from_result": "sparse",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, for type checkers and editors
    from .covariance import (
        CovarianceError,
        CovarianceReconstruction,
        covariance_error,
        reconstruct_covariance,
        reconstruct_covariances,
    )
    from .inference import attribute_inference, membership_inference, reconstruct_record, roc_auc, tpr_at_fpr
    from .report import AttackReport, attack_report, population_covariance, server_covariances
    from .sparse import SparseGramReconstruction, reconstruct_gram_sparse, reconstruct_gram_sparse_from_result

__all__ = [
    "CovarianceError",
    "CovarianceReconstruction",
    "covariance_error",
    "reconstruct_covariance",
    "reconstruct_covariances",
    "attribute_inference",
    "membership_inference",
    "reconstruct_record",
    "roc_auc",
    "tpr_at_fpr",
    "AttackReport",
    "attack_report",
    "population_covariance",
    "server_covariances",
    "SparseGramReconstruction",
    "reconstruct_gram_sparse",
    "reconstruct_gram_sparse_from_result",
]
