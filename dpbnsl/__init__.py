"""dpbnsl: privacy analysis of federated Bayesian-network structure learning.

Convention: ``W[i, j] != 0`` means the edge i → j; participants are a sequence of (n_k, d) arrays or
DataFrames; the privacy unit is one row of one participant's dataset.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: where each name this package exports lives; a name is imported on first use (PEP 562), so
#: ``import dpbnsl`` is fast and a command pays only for the modules it uses
_EXPORTS = {
    "load_sachs": "io.datasets",
    **dict.fromkeys(("Dense", "Message", "Sparse", "Transcript"), "federation"),
    **dict.fromkeys(
        ("acyclicity", "dag_to_cpdag", "is_dag", "threshold", "threshold_to_dag", "topological_order"),
        "graphs",
    ),
    **dict.fromkeys(
        (
            "LearnResult",
            "dp_fed_bnsl",
            "dp_fed_sparse_bnsl",
            "fed_bnsl",
            "fed_sparse_bnsl",
            "notears",
            "notears_average",
            "notears_best",
            "notears_local",
            "notears_voting",
        ),
        "learners",
    ),
    **dict.fromkeys(
        ("auroc_aupr", "count_accuracy", "nmse", "shd_cpdag", "skeleton_scores", "v_structure_recall"),
        "metrics",
    ),
    **dict.fromkeys(
        (
            "simulate",
            "simulate_dag",
            "simulate_heterogeneous",
            "simulate_linear_sem",
            "simulate_weights",
            "split",
        ),
        "simulation",
    ),
}


#: the submodules ``dpbnsl.<name>`` reaches without an import of its own (not the optional
#: ``flower`` extra, whose import fails without Flower, nor ``__main__``, which runs the CLI)
_SUBMODULES = frozenset(
    (
        "accounting",
        "attacks",
        "audits",
        "blas",
        "cli",
        "federation",
        "graphs",
        "io",
        "learners",
        "mechanisms",
        "metrics",
        "scores",
        "simulation",
        "tasks",
        "timeseries",
    )
)


def __getattr__(name: str) -> Any:
    """The exported names, and the subpackages (``dpbnsl.accounting`` …), imported on first use."""
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:  # the same names, for type checkers and editors
    from .federation import Dense, Message, Sparse, Transcript
    from .graphs import acyclicity, dag_to_cpdag, is_dag, threshold, threshold_to_dag, topological_order
    from .io.datasets import load_sachs
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
