"""Linear score-based learners: NOTEARS, Fed-BNSL, Fed-Sparse-BNSL and their private versions
(DP-Fed-BNSL, DP-Fed-Sparse-BNSL with DP-PGCD), with the private pre-processing they use.

The learners are re-exported by :mod:`dpbnsl.learners`; the modules here hold them and
their helpers."""
