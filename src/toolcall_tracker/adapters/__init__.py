"""Sans-IO adapters from real provider streams to tracker events.

Each adapter has ``feed(item) -> list[Event]`` and ``end() -> list[Event]``; :func:`adapt`
drives one over an async stream: ``await tracker.consume(adapt(stream, OpenAIChatAdapter()))``.
"""

from ._base import AdaptedStream, Adapter, AdapterEvent, adapt

__all__ = ["Adapter", "AdaptedStream", "AdapterEvent", "adapt"]
