"""Constraint-based learners: PC, FedPC and its baselines, with the conditional-independence
tests.

The learners are re-exported by :mod:`dpbnsl.learners`; the modules here hold them and
their helpers."""
