"""Time-series learners: DYNOTEARS, FedDBN and the DYNOTEARS baselines.

The learners are re-exported by :mod:`dpbnsl.learners`; the modules here hold them and
their helpers."""
