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
