"""The ``dpbnsl`` command line: one module per command (:mod:`~dpbnsl.cli.app` holds the parser
and the dispatch, and imports a command's module only when that command runs), sharing
:mod:`~dpbnsl.cli.common` (the table of commands, errors, tables, option checks) and
:mod:`~dpbnsl.cli.files` (input and output files)."""

from .app import build_parser, main

__all__ = ["build_parser", "main"]
