"""A griffe extension: the docstrings' Sphinx roles, rendered as mkdocstrings cross-references.

The docstrings are written for readers of the source and use Sphinx roles
(``:class:`ToolCall```, ``:meth:`~ToolCallTracker.consume```, ``:mod:`toolcall_tracker.adapters```).
mkdocstrings renders Markdown, in which a role is plain text. This extension rewrites each
role, when the package is loaded for the API reference, into an *optional* autorefs
cross-reference to the object the name resolves to in the docstring's own scope (its module's
imports and members, then the package root): a link where that object is rendered in the
reference, the name in code style where it is not (a private helper, a third-party class).
An optional reference never fails ``mkdocs build --strict``; the reference pages render every
public module, so the public names do get their links.

``~`` shows the last component only, as in Sphinx, and reST's ``::`` before a literal
block reads as Sphinx shows it. The source stays as it is.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(class|meth|func|attr|data|exc|mod|obj|const):`(~?)([^`]+)`")
PACKAGE = "toolcall_tracker"


def _lookup(loader: griffe.GriffeLoader, path: str) -> str | None:
    """The canonical path of ``path`` if the loaded package has it, else ``None``."""
    try:
        found = loader.modules_collection.get_member(path)
    except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None
    try:
        return str(found.canonical_path)
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return path


_HOMES: dict[int, dict[str, str]] = {}


def _public_homes(loader: griffe.GriffeLoader) -> dict[str, str]:
    """Each public name of the package's modules, and the module that lists it in __all__."""
    if id(loader) in _HOMES:
        return _HOMES[id(loader)]
    homes = _HOMES[id(loader)] = {}

    def visit(module: griffe.Module) -> None:
        for name in module.exports or ():
            homes.setdefault(str(name), module.path)
        for member in module.modules.values():
            if not member.name.startswith("_"):
                visit(member)

    visit(loader.modules_collection[PACKAGE])
    return homes


def _resolve(obj: griffe.Object | griffe.Alias, target: str, loader: griffe.GriffeLoader) -> str | None:
    target = target.lstrip(".")
    if target.startswith(f"{PACKAGE}."):
        # A name written at the root that lives in a submodule now (toolcall_tracker.MOVED).
        name, _, rest = target[len(PACKAGE) + 1 :].partition(".")
        home = _public_homes(loader).get(name)
        if home is not None and _lookup(loader, target) is None:
            target = f"{home}.{name}" + (f".{rest}" if rest else "")
    head, _, rest = target.partition(".")
    candidates: list[str] = []
    try:
        candidates.append(obj.resolve(head))
    except (griffe.NameResolutionError, griffe.AliasResolutionError):
        pass
    candidates += [head, f"{PACKAGE}.{head}"]
    parent = obj.parent
    if parent is not None and parent.is_class:
        candidates.insert(0, f"{parent.path}.{head}")  # `.method` of the same class
    for base in candidates:
        path = _lookup(loader, f"{base}.{rest}" if rest else base)
        if path is not None:
            return path
    return None


def _rewrite(obj: griffe.Object | griffe.Alias, text: str, loader: griffe.GriffeLoader) -> str:
    def replace(match: re.Match[str]) -> str:
        _role, short, target = match.groups()
        explicit = re.fullmatch(r"(.+?)\s*<([^>]+)>", target)  # :meth:`title <target>`
        if explicit:
            shown, target = explicit.groups()
        else:
            shown = target.rsplit(".", 1)[-1] if short else target.lstrip(".")
        if _role in ("meth", "func") and not explicit:
            shown += "()"
        path = _resolve(obj, target, loader)
        code = f"<code>{html.escape(shown)}</code>"
        if path is None:
            return code
        return f'<autoref identifier="{html.escape(path)}" optional>{code}</autoref>'

    return _typed_raises(LITERAL.sub(_literal, ROLE.sub(replace, text)))


LITERAL = re.compile(r"(\S?)( ?)::$", re.M)


def _literal(match: re.Match[str]) -> str:
    """reST's ``::`` before an indented block: ``text::`` reads ``text:``, ``text ::`` reads
    ``text`` and a lone ``::`` nothing (the block itself renders as code)."""
    before, space = match.groups()
    return before + ("" if space or not before else ":")


def _typed_raises(text: str) -> str:
    """Give a ``Raises:`` entry written without an exception type the type ``BaseException``.

    Google style wants ``Type: description``; an entry such as "Whatever cancelled it" is
    still true of ``BaseException``, and griffe would otherwise drop it with a warning.
    """
    lines = text.split("\n")
    for i, line in enumerate(lines[:-1]):
        if line.strip() != "Raises:":
            continue
        item = lines[i + 1]
        indent = len(item) - len(item.lstrip())
        if item.strip() and indent > len(line) - len(line.lstrip()) and ":" not in item:
            lines[i + 1] = f"{item[:indent]}BaseException: {item[indent:]}"
    return "\n".join(lines)


class SphinxRoles(griffe.Extension):
    """Rewrite Sphinx roles in every docstring of the loaded package."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        seen: set[int] = set()

        def walk(obj: griffe.Object) -> None:
            if id(obj) in seen:
                return
            seen.add(id(obj))
            if obj.docstring is not None:
                obj.docstring.value = _rewrite(obj, obj.docstring.value, loader)
            for member in obj.members.values():
                if not member.is_alias:
                    walk(member)  # type: ignore[arg-type]

        walk(pkg)
