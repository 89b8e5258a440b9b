"""Results and data in and out of the package.

- :mod:`~dpbnsl.io.tables`: a participant's data table (CSV or Parquet), read and checked;
- :mod:`~dpbnsl.io.datasets`: real data sets with a ground-truth graph (Sachs et al.);
- :mod:`~dpbnsl.io.bundle`: run bundles, one directory per run that reads back exactly;
- :mod:`~dpbnsl.io.report`: one self-contained HTML page per bundle;
- :mod:`~dpbnsl.io.graph_export`: learned graphs as networkx, Graphviz DOT and causal-learn objects.

The submodules are imported on use (``from dpbnsl.io.bundle import read_bundle``); this package
imports none of them, so reading a CSV does not load the HTML report.
"""
