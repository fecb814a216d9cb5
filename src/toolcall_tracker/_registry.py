"""The provider registry: every stream format this library reads, in one place (private).

Theory of operation. A provider lives in one package under ``toolcall_tracker.adapters``
(its home): ``adapters/anthropic/`` holds Anthropic's stream adapter, its failure values,
its tool definitions and its result messages. The package's ``__init__`` holds only the
provider's declaration, ``PROVIDERS``, a tuple of :class:`Provider` (one per stream format
it reads: its format name, how one of its items is recognised, and references to its
adapter, tool renderer and message builder); everything heavy sits in the package's
private modules and loads on first use (:func:`lazy_names`). The registry finds the
declarations by listing the ``adapters`` package, so adding a provider is adding one
folder there; nothing else keeps a list of providers:

- the command line's ``--format`` choices, its format recognition and its replay;
- :func:`toolcall_tracker.tools.provider_tools` and
  :func:`toolcall_tracker.feedback.provider_messages`, and the provider-named renderers and
  builders those modules export (``anthropic_tools``, ``anthropic_messages``...);
- the wrong-adapter check of :func:`~toolcall_tracker.adapters.adapt` and the hint of
  :meth:`ToolCallTracker.consume` (both through ``_recognise``);
- the benchmarks and the tests' format tables.

Declarations name the adapter, the renderers and the builders by reference
(``"module:attribute"``, relative to ``toolcall_tracker``), resolved on first use (a test
resolves every one), so reading the registry imports no adapter, no pydantic model and no
SDK: only this module and the packages' ``__init__`` files (``tests/test_registry.py``
holds that to a budget of modules). The tracker's own event format (:data:`EVENTS`) is
declared here, since no provider owns it. :func:`register` adds a provider at run time
(the tests' toy provider); it returns a function that removes it.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

_PACKAGE: Final = __name__.rpartition(".")[0]  # toolcall_tracker
_HOMES: Final = f"{_PACKAGE}.adapters"  # each provider's package lives here


def item_field(item: Any, key: str) -> Any:
    """``item[key]`` of a mapping, else the attribute ``key`` of an SDK object, else ``None``."""
    if type(item) is dict or isinstance(item, Mapping):  # (a dict: no ABC check)
        return item.get(key)
    return getattr(item, key, None)


def has_field(item: Any, key: str) -> bool:
    """Whether a mapping has the key, or an SDK object the attribute (even ``None``)."""
    if type(item) is dict or isinstance(item, Mapping):
        return key in item
    return not isinstance(item, str | bytes) and hasattr(item, key)


def first(items: Any) -> Any:
    """The first element of a list (of a chunk's ``choices``, a response's
    ``candidates``), else ``None``."""
    return items[0] if isinstance(items, list) and items else None


def text_field(value: Any) -> str | None:
    """``value`` if it is a non-empty string, else ``None`` (what a ``text_of`` returns)."""
    return value if isinstance(value, str) and value else None


def type_in(names: frozenset[str]) -> Callable[[Any], bool]:
    """A recognition: the item's ``type`` is one of ``names``."""

    def recognise(item: Any) -> bool:
        kind = item_field(item, "type")
        return isinstance(kind, str) and kind in names

    return recognise


def any_field(keys: tuple[str, ...]) -> Callable[[Any], bool]:
    """A recognition: the item has one of the fields ``keys``."""
    return lambda item: any(has_field(item, key) for key in keys)


def or_type(recognise: Callable[[Any], bool], *names: str) -> Callable[[Any], bool]:
    """``recognise``, widened to items whose ``type`` is one of ``names`` (items an adapter
    reads that say nothing of the format, such as an ``error`` event)."""
    return lambda item: recognise(item) or item_field(item, "type") in names


@dataclass(frozen=True)
class Provider:
    """One stream format and everything this library knows of it.

    Attributes:
        format: its name on the command line (``--format``), e.g. ``"anthropic"``.
        title: what its items are called in messages ("Anthropic events").
        one: what one item is called ("an Anthropic event").
        recognise: whether one item's shape is distinctive of the format (a mapping from
            the provider's JSON, an SDK object, or, for a line protocol, a text line). It
            must never raise and should say ``False`` when unsure.
        understands: whether the adapter reads an item (default: ``recognise``); wider
            for items that are not distinctive of the format (an ``error`` event).
        adapter: the adapter class, ``"module:Class"`` (``None``: events applied as read).
        accepts: other formats whose items the adapter reads as well as its own (Mistral's
            adapter reads Chat Completions chunks).
        tools: the tool-definition renderer, ``"module:function"``, or ``None``.
        messages: the result-message builder, ``"module:function"``, or ``None``.
        extra: the pip extra that installs its SDK, or ``None``.
        lines: its items are text lines (a line protocol), not JSON objects.
        rank: where it is listed (lower first): ``--format``, recognition order.
        text_of: the model's text in one item (a text delta), or ``None`` when the item
            carries none; ``None`` for a format without text. It must never raise.
    """

    format: str
    title: str
    one: str
    recognise: Callable[[Any], bool]
    understands: Callable[[Any], bool] | None = None
    adapter: str | None = None
    accepts: tuple[str, ...] = ()
    tools: str | None = None
    messages: str | None = None
    extra: str | None = None
    lines: bool = False
    rank: int = 50
    text_of: Callable[[Any], str | None] | None = None
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def adapter_name(self) -> str | None:
        """The adapter class's name (``"AnthropicAdapter"``), without importing it."""
        return None if self.adapter is None else self.adapter.rpartition(":")[2]

    def load(self, what: str) -> Any:
        """The object ``adapter``, ``tools`` or ``messages`` refers to (imported once).

        Raises:
            LookupError: the provider declares none.
        """
        ref = getattr(self, what)
        if ref is None:
            raise LookupError(f"the {self.format} format has no {what}")
        found = self._cache.get(what)
        if found is None:
            module, _, name = ref.partition(":")
            base = _PACKAGE if module.startswith(".") else None
            found = getattr(importlib.import_module(module, base), name)
            self._cache[what] = found
        return found


_EVENT_TYPES: Final = frozenset({"start", "delta", "ready", "result", "error", "end"})


def _is_event(item: Any) -> bool:
    """A mapping of a protocol event ``type`` with that event's fields.

    Other formats reuse some of these type names (``start`` and ``error`` in the AI SDK,
    ``error`` in the Anthropic and Responses streams) with other fields.
    """
    if not isinstance(item, Mapping):
        return False
    kind = item.get("type")
    if not isinstance(kind, str) or kind not in _EVENT_TYPES:
        return False
    if kind == "end":
        return set(item) <= {"type", "ok", "reason"}
    if not isinstance(item.get("id"), str):
        return False
    if kind == "start":
        return isinstance(item.get("name"), str)
    if kind == "delta":
        return "argsTextDelta" in item or "args_text_delta" in item
    if kind == "ready":
        return set(item) <= {"type", "id"}
    return kind in item  # result / error


EVENTS: Final = Provider(
    format="events", title="tracker events", one="a tracker event", recognise=_is_event, rank=0
)
"""The tracker's own protocol events, applied as they are read: not a provider, but the
format of recorded event streams (``--format events``) and what
:meth:`ToolCallTracker.consume` reads without an adapter."""

OLD_NAMES: Final = {"seed": "events"}
"""Format names that were renamed, and what they are now: :func:`get` and the command
line's ``--format`` still take them (``seed`` was the events format's first name)."""


def lazy_names(
    home: dict[str, Any], names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__``: each public name is imported from its
    private module (``names``: name -> module, relative to the package) on first use, then
    kept, so importing the package reads its declaration and nothing more.

    Args:
        home: the package's ``globals()``.
        names: where each public name is defined.
    """
    package = home["__name__"]

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        home[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*home, *names})

    return __getattr__, __dir__


_declared: list[Provider] | None = None  # EVENTS and the homes' declarations, found once
_added: list[Provider] = []  # registered at run time
_sorted: list[Provider] | None = None  # both, in rank order (rebuilt after a change)
_by_type: dict[type, Provider | None] = {}  # for_adapter's answers (cleared with _sorted)


def providers() -> list[Provider]:
    """Every registered provider, in rank order (a shared list: do not change it)."""
    global _declared, _sorted
    if _sorted is None:
        if _declared is None:
            homes = importlib.import_module(_HOMES)
            found = sorted(pkgutil.iter_modules(homes.__path__), key=lambda m: m.name)
            _declared = [EVENTS]
            for info in found:
                if info.ispkg and not info.name.startswith("_"):
                    home = importlib.import_module(f"{_HOMES}.{info.name}")
                    _declared.extend(home.PROVIDERS)
        _sorted = sorted([*_declared, *_added], key=lambda provider: provider.rank)
        _by_type.clear()
    return _sorted


def formats() -> list[str]:
    """The format names, in recognition order (``--format`` lists them so)."""
    return [provider.format for provider in providers()]


def get(fmt: str) -> Provider:
    """The provider of format ``fmt``.

    Raises:
        ValueError: no provider has that format (the message lists those that exist).
    """
    name = OLD_NAMES.get(fmt, fmt)
    for provider in providers():
        if provider.format == name:
            return provider
    raise ValueError(f"unknown format {fmt!r}; the formats are: {', '.join(formats())}")


def for_adapter(adapter: object) -> Provider | None:
    """The provider whose adapter ``adapter`` is an instance of, if any."""
    cls = type(adapter)
    if _sorted is not None and cls in _by_type:  # (every adapt() asks: once per class)
        return _by_type[cls]
    found = None
    for provider in providers():
        if provider.adapter_name == cls.__name__ and isinstance(adapter, provider.load("adapter")):
            found = provider
            break
    _by_type[cls] = found
    return found


def load_homes() -> None:
    """Import every public name of every provider's home (its adapter, its failure values).

    For look-ups that must see every class of a kind, such as reviving a stored failure
    by its ``kind`` (the runner's outcome store): the homes load lazily otherwise.
    """
    homes = importlib.import_module(_HOMES)
    for info in pkgutil.iter_modules(homes.__path__):
        if info.ispkg and not info.name.startswith("_"):
            home = importlib.import_module(f"{_HOMES}.{info.name}")
            for name in home.__all__:
                getattr(home, name)


def named(what: str, name: str) -> Any:
    """The renderer or builder (``what``: ``"tools"`` or ``"messages"``) a provider's
    declaration names ``name`` (``"anthropic_tools"``), loaded; how :mod:`toolcall_tracker.tools`
    and :mod:`toolcall_tracker.feedback` export them without importing any provider.

    Raises:
        AttributeError: no declaration names it.
    """
    for provider in providers():
        ref = getattr(provider, what)
        if ref is not None and ref.rpartition(":")[2] == name:
            return provider.load(what)
    raise AttributeError(name)


def register(provider: Provider) -> Callable[[], None]:
    """Add ``provider`` at run time; returns the function that removes it again.

    Raises:
        ValueError: its format name is taken.
    """
    if provider.format in formats():
        raise ValueError(f"a provider of format {provider.format!r} is registered already")
    global _sorted
    _added.append(provider)
    _sorted = None

    def remove() -> None:
        global _sorted
        _added.remove(provider)
        _sorted = None

    return remove
