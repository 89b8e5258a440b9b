"""The ``dpbnsl`` command line: one module per command (:mod:`~dpbnsl.cli.app` holds the parser,
``learn`` and the dispatch), sharing :mod:`~dpbnsl.cli.common` (errors, tables, option checks) and
:mod:`~dpbnsl.cli.files` (input and output files)."""

from .app import build_parser, main

__all__ = ["build_parser", "main"]
