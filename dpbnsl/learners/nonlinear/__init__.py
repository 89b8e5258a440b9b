"""Nonlinear learners: NOTEARS-MLP, its federated version (Fed-BNSL-MLP) and DS-FCD / AS-FCD.

The learners are re-exported by :mod:`dpbnsl.learners`; the modules here hold them and
their helpers."""
