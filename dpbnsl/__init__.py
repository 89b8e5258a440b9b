"""dpbnsl: privacy analysis of federated Bayesian-network structure learning.

Convention: ``W[i, j] != 0`` means the edge i → j; participants are a sequence of (n_k, d) arrays or
DataFrames; the privacy unit is one row of one participant's dataset.
"""

from .datasets import load_sachs
from .federation import Dense, Message, Sparse, Transcript
from .graphs import acyclicity, dag_to_cpdag, is_dag, threshold, threshold_to_dag, topological_order
from .learners import (
    LearnResult,
    dp_fed_bnsl,
    dp_fed_sparse_bnsl,
    fed_bnsl,
    fed_sparse_bnsl,
    notears,
    notears_average,
    notears_best,
    notears_local,
    notears_voting,
)
from .metrics import (
    auroc_aupr,
    count_accuracy,
    nmse,
    shd_cpdag,
    skeleton_scores,
    v_structure_recall,
)
from .simulation import (
    simulate,
    simulate_dag,
    simulate_heterogeneous,
    simulate_linear_sem,
    simulate_weights,
    split,
)

__version__ = "0.1.0"

__all__ = [
    "LearnResult",
    "Transcript",
    "Message",
    "Dense",
    "Sparse",
    "acyclicity",
    "auroc_aupr",
    "count_accuracy",
    "dag_to_cpdag",
    "fed_bnsl",
    "fed_sparse_bnsl",
    "dp_fed_sparse_bnsl",
    "dp_fed_bnsl",
    "is_dag",
    "load_sachs",
    "nmse",
    "notears",
    "notears_average",
    "notears_best",
    "notears_local",
    "notears_voting",
    "shd_cpdag",
    "simulate",
    "simulate_dag",
    "simulate_heterogeneous",
    "simulate_linear_sem",
    "simulate_weights",
    "skeleton_scores",
    "split",
    "threshold",
    "threshold_to_dag",
    "topological_order",
    "v_structure_recall",
]
