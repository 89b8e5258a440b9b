"""dpbnsl: privacy analysis of federated Bayesian-network structure learning."""

__version__ = "0.1.0"
