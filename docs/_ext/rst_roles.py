"""Griffe extension for the API reference: Sphinx roles in docstrings become cross-references.

The package's docstrings name other objects with Sphinx roles (``:func:`run_rounds```,
``:class:`~dpbnsl.federation.Transcript```), which Markdown would print as they are. This
extension, loaded by mkdocstrings (``mkdocs.yml``), rewrites each role into an *optional*
cross-reference: a link when the target is documented on some page of the site, plain code
otherwise (a built-in, a private helper), never a warning. Relative names are resolved the way
Python would read them in the docstring's scope (the object, then its parents, then the module's
imports). The source files are not changed.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|exc|obj|const):`(?P<target>[^`]+)`")


def _scopes(obj: griffe.Object):
    """The object (when it has members), then its parents up to the package."""
    scope = obj if obj.is_module or obj.is_class else obj.parent
    while scope is not None:
        yield scope
        scope = scope.parent


def _identifier(obj: griffe.Object, target: str) -> str:
    """The full path ``target`` names when read inside ``obj``'s docstring (best effort)."""
    target = target.lstrip(".")
    head, _, rest = target.partition(".")
    for scope in _scopes(obj):
        member = scope.members.get(head)
        if member is None:
            continue
        try:
            base = member.target_path if member.is_alias else member.path
        except griffe.AliasResolutionError:  # pragma: no cover - unresolvable import
            base = member.path
        return f"{base}.{rest}" if rest else base
    return target


def _rewrite(obj: griffe.Object, text: str) -> str:
    def link(match: re.Match) -> str:
        raw = match["target"].strip()
        shown = raw.lstrip("~").rsplit(".", 1)[-1] if raw.startswith("~") else raw
        identifier = _identifier(obj, raw.lstrip("~"))
        return (
            f'<autoref identifier="{html.escape(identifier, quote=True)}" optional hover>`{shown}`</autoref>'
        )

    return ROLE.sub(link, text)


class SphinxRoles(griffe.Extension):
    """Rewrite the Sphinx roles of every docstring of a loaded package (see the module docstring)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        self._visit(pkg, set())

    def _visit(self, obj: griffe.Object, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.docstring is not None:
            obj.docstring.value = _rewrite(obj, obj.docstring.value)
        for member in obj.members.values():
            if not member.is_alias:
                self._visit(member, seen)
