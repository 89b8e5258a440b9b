"""Simulated data: every generator the package's experiments and tests use.

- :mod:`~dpbnsl.simulation.linear`: random DAGs (Erdős–Rényi, scale-free), edge weights, linear
  SEMs (homogeneous and heterogeneous), splitting rows over participants, and the public clipping
  bounds at the simulator's scale (:func:`~dpbnsl.simulation.linear.simulated_bounds`);
- :mod:`~dpbnsl.simulation.nonlinear`: nonlinear SEMs and DS-FCD's non-IID generator;
- :mod:`~dpbnsl.simulation.discrete`: discrete Bayesian networks;
- :mod:`~dpbnsl.simulation.temporal`: structural VAR time series (FedDBN).

``W[i, j] != 0`` is the edge ``i -> j``. Every generator takes ``rng=`` (a seed or a numpy
Generator) and is reproducible for a fixed seed.
"""

from .discrete import random_discrete_bn, simulate_discrete
from .linear import (
    HeterogeneousData,
    SimulatedData,
    population_scale,
    sem_covariance,
    simulate,
    simulate_dag,
    simulate_heterogeneous,
    simulate_linear_sem,
    simulate_weights,
    simulated_bounds,
    split,
)
from .nonlinear import simulate_noniid, simulate_nonlinear, simulate_nonlinear_sem, uneven_sizes
from .temporal import simulate_temporal

__all__ = [
    "HeterogeneousData",
    "SimulatedData",
    "random_discrete_bn",
    "population_scale",
    "sem_covariance",
    "simulate",
    "simulate_dag",
    "simulate_discrete",
    "simulate_heterogeneous",
    "simulate_linear_sem",
    "simulate_noniid",
    "simulate_nonlinear",
    "simulate_nonlinear_sem",
    "simulate_temporal",
    "simulate_weights",
    "simulated_bounds",
    "split",
    "uneven_sizes",
]
