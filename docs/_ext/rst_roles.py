"""Griffe extension for the API reference: Sphinx roles in docstrings become cross-references.

The package's docstrings name other objects with Sphinx roles (``:func:`run_rounds```,
``:class:`~dpbnsl.federation.Transcript```), which Markdown would print as they are. This
extension, loaded by mkdocstrings (``mkdocs.yml``), rewrites each role into an *optional*
cross-reference: a link when the target is documented on some page of the site, plain code
otherwise (a built-in, a private helper), never a warning. Relative names are resolved the way
Python would read them in the docstring's scope (the object, then its parents, then the module's
imports). The source files are not changed.

It also puts each docstring's first sentence on its first line: mkdocstrings' summary tables show a
docstring's first *line*, which for a sentence wrapped over two lines stopped mid-sentence. The
first paragraph's lines are joined and broken again after its first sentence (Markdown renders a
paragraph the same whatever its line breaks).
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


#: words ending in a full stop that do not end a sentence
_ABBREVIATIONS = ("e.g.", "i.e.", "et al.", "eq.", "eqs.", "cf.", "vs.", "resp.", "approx.", "Thm.", "Alg.")
#: a first paragraph holding one of these line starts is structured (a list, a table, code): left as is
_STRUCTURED = re.compile(r"^\s*(?:[-*+|>:]|\d+[.)]\s|```|\.\. )")


def _first_sentence_first(text: str) -> str:
    """``text`` with its first sentence alone on the first line (see the module docstring)."""
    para, sep, rest = text.partition("\n\n")
    lines = para.splitlines()
    if len(lines) < 2 or any(_STRUCTURED.match(line) for line in lines):
        return text
    flat = " ".join(line.strip() for line in lines)
    first, remainder = flat, ""
    for match in re.finditer(r"[.!?](?=\s|$)", flat):
        head = flat[: match.end()]
        if head.endswith(_ABBREVIATIONS):
            continue
        after = flat[match.end() :].lstrip()
        if not after or after[0].isupper() or after[0] in "(`*'\"<":
            first, remainder = head, after
            break
    return first + ("\n" + remainder if remainder else "") + sep + rest


class SphinxRoles(griffe.Extension):
    """Rewrite the Sphinx roles of every docstring of a loaded package (see the module docstring)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        self._visit(pkg, set())

    def _visit(self, obj: griffe.Object, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.docstring is not None:
            obj.docstring.value = _rewrite(obj, _first_sentence_first(obj.docstring.value))
        for member in obj.members.values():
            if not member.is_alias:
                self._visit(member, seen)
