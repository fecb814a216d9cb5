"""``ToolLoop``: the multi-step loop (stream, run the tools, feed back, repeat) done once.

Each step calls ``step(messages)`` for the provider's stream, runs it with
:func:`~toolcall_tracker.runner.run_turn` (eager tools start while the model still streams:
the head start), and, when the loop goes on, appends the step's calls and their results to
the messages with the provider's feedback builder (``provider_messages(provider, calls)``).

After each step the loop stops at the first of these that holds, in this order:

1. ``cut_off``: the step's turn did not end normally (``End.ok`` false: the length limit,
   a refusal, an error, a stream that stopped). Its gated tools never ran (the runner's
   rule); nothing is appended.
2. ``pending_approvals``: calls await a human's decision. ``LoopState.pending`` is the
   signed state for :meth:`ToolRunner.resume`; pass the decisions to the next
   :meth:`ToolLoop.steps` with the state, and the loop resumes those calls, feeds the whole
   step back and goes on.
3. ``max_steps``: this many steps ran in this call (the results are appended: the state
   is ready to continue).
4. ``condition``: the user's ``stop_when(step)`` returned true (results appended).
5. ``no_tool_calls``: the step asked for no tool; the model answered.

:class:`LoopState` is a pydantic model (``model_dump_json()`` / ``model_validate_json()``):
a later request resumes from it.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, field_serializer

from .._jsonout import _jsonable
from .._registry import get as _provider
from .._sources import close_source
from ..calls import Status, ToolCall
from ..events import End
from ..feedback import provider_messages
from ..tracker import ToolCallTracker
from ._control import RunControl
from ._pending import ApprovalDecision, PendingApprovals, merge_calls
from ._run_turn import run_turn

if TYPE_CHECKING:
    from . import ToolRunner

__all__ = ["LoopState", "LoopStep", "StopReason", "ToolLoop"]

StopReason: TypeAlias = Literal[
    "cut_off", "pending_approvals", "max_steps", "condition", "no_tool_calls"
]
"""Why a loop stopped, in order of precedence (see :class:`ToolLoop`)."""

TextCallback: TypeAlias = Callable[[int, str], Any]
"""``on_text(step_index, text)``: one text delta of the model (may return an awaitable)."""

StepFunction: TypeAlias = Callable[[list[Any]], Any]
"""``step(messages)``: the provider's stream for these messages (an async iterable, or an
awaitable of one: ``lambda m: client.chat.completions.create(messages=m, ..., stream=True)``)."""


class LoopState(BaseModel):
    """Where a loop stopped; serialisable, to resume in a later request.

    Attributes:
        messages: the conversation in the provider's format, with every fed-back step.
        steps: how many steps ran, over every resumption.
        stopped: why it stopped (``None`` for a state not run yet).
        calls: the last step's calls (finished, except those awaiting approval).
        pending: the signed pending approvals when ``stopped == "pending_approvals"``.
        end: how the last step's turn ended.
    """

    model_config = ConfigDict(frozen=True)

    messages: list[Any] = Field(default_factory=list)
    steps: int = 0
    stopped: StopReason | None = None
    calls: list[ToolCall] = Field(default_factory=list)
    pending: PendingApprovals | None = None
    end: End | None = None

    @field_serializer("messages", "calls", when_used="json")
    def _as_json(self, value: list[Any]) -> Any:
        """As plain JSON by the library's output rules: a tool's result JSON cannot hold
        (an object, NaN, a lone surrogate) never makes the state unserialisable."""
        return _jsonable(value)


@dataclass(frozen=True)
class LoopStep:
    """One step, as :meth:`ToolLoop.steps` yields it.

    Attributes:
        index: 0 for the first step of the state, then 1, 2... (over resumptions).
        calls: the step's calls (finished, except those awaiting approval).
        end: how the step's turn ended.
        stopped: why the loop stops after this step, or ``None`` if it goes on.
    """

    index: int
    calls: list[ToolCall]
    end: End | None
    stopped: StopReason | None


class ToolLoop:
    """Run model steps and their tools until the model is done (see the module docs).

    Args:
        step: ``step(messages)`` returns the provider's stream for ``messages`` (or an
            awaitable of it). The loop hands every item to the adapter unchanged.
        provider: the provider's format name in the registry (``"openai-chat"``,
            ``"anthropic"``, ``"gemini"``...): its adapter reads the streams and its
            feedback builder writes the next messages.
        runner: runs the tools (approvals are deferred: a call that needs one stops the
            loop with the signed state).
        max_steps: at most this many steps per :meth:`steps` / :meth:`run` call (>= 1).
        stop_when: stop after a step when this returns true (checked after ``max_steps``).
        deps: passed to the tools' ``ToolContext`` (see ``ToolRunner.run``).
        on_text: ``on_text(step_index, text)`` (sync, or async and awaited) is called with
            each text delta of the model as its item arrives, before the item reaches
            the adapter; nothing is buffered. Keep it quick (hand the text to a bounded
            memory stream, a websocket...): the stream waits for it, and so does the
            head start of the calls behind it. What exception it raises ends the step as
            the stream's own would (see ``run_turn``). The text is not fed back: the
            feedback builders write the calls' assistant message without it.

    Raises:
        ValueError: unknown provider, one without an adapter or feedback builder,
            ``max_steps`` below 1, or ``on_text`` for a format without text.
    """

    def __init__(
        self,
        step: StepFunction,
        provider: str,
        runner: ToolRunner[Any],
        *,
        max_steps: int = 10,
        stop_when: Callable[[LoopStep], bool] | None = None,
        deps: Any = None,
        on_text: TextCallback | None = None,
    ) -> None:
        found = _provider(provider)
        if found.adapter is None or found.messages is None:
            raise ValueError(
                f"the {provider} format has no adapter or no result messages: the loop "
                "needs both (use the provider's own format name)"
            )
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be an int >= 1, not {max_steps!r}")
        if on_text is not None and found.text_of is None:
            raise ValueError(f"the {provider} format has no text: on_text cannot be used")
        self._text_of = found.text_of if on_text is not None else None
        self._on_text = on_text
        self._step = step
        self._provider = provider
        self._adapter_class = found.load("adapter")
        self._runner = runner
        self._max_steps = max_steps
        self._stop_when = stop_when
        self._deps = deps
        self.state: LoopState = LoopState()
        """The loop's state after the last step (updated after every step)."""

    async def run(
        self,
        start: list[Any] | LoopState,
        decisions: Iterable[ApprovalDecision] = (),
    ) -> LoopState:
        """Run :meth:`steps` to its end; return the final state."""
        async for _ in self.steps(start, decisions):
            pass
        return self.state

    async def steps(
        self,
        start: list[Any] | LoopState,
        decisions: Iterable[ApprovalDecision] = (),
    ) -> AsyncIterator[LoopStep]:
        """Run steps from ``start`` (the first messages, or a :class:`LoopState` to
        resume), yielding each; :attr:`state` is up to date after each.

        Args:
            start: the messages to begin with, or a state a loop returned.
            decisions: for a state stopped at ``pending_approvals``: the decisions; the
                loop resumes those calls first (``ToolRunner.resume``), then feeds the
                whole step back and goes on. Calls left undecided keep it stopped there.

        Raises:
            ApprovalRefused: the state's pending approvals or a decision do not verify.
            Exception: what ``step`` or the stream raised (see ``run_turn``).
        """
        state = start if isinstance(start, LoopState) else LoopState(messages=list(start))
        self.state = state
        if state.stopped == "pending_approvals" and state.pending is not None:
            control = RunControl(defer_approvals=True)
            resumed = await self._runner.resume(
                state.pending, decisions, control=control, deps=self._deps
            )
            calls = merge_calls(state.calls, resumed)
            if control.pending is not None:
                self.state = state.model_copy(update={"calls": calls, "pending": control.pending})
                return
            state = self._fed_back(state, calls).model_copy(update={"stopped": None})
            self.state = state
        for taken in range(1, self._max_steps + 1):
            index = state.steps
            calls, end, pending = await self._one_step(index, state.messages)
            stopped: StopReason | None = None
            if end is None or not end.ok:
                stopped = "cut_off"  # its gated tools never ran; nothing is fed back
            elif pending is not None and pending.calls:
                stopped = "pending_approvals"
            elif calls:
                state = self._fed_back(state, calls)
            if stopped is None:
                if taken == self._max_steps:
                    stopped = "max_steps"
                elif self._stop_when is not None and self._stop_when(
                    LoopStep(index, calls, end, None)
                ):
                    stopped = "condition"
                elif not calls:
                    stopped = "no_tool_calls"
            state = state.model_copy(
                update={
                    "steps": index + 1,
                    "stopped": stopped,
                    "calls": calls,
                    "pending": pending,
                    "end": end,
                }
            )
            self.state = state
            yield LoopStep(index, calls, end, stopped)
            if stopped is not None:
                return

    # -- one step -------------------------------------------------------------------------

    async def _one_step(
        self, index: int, messages: list[Any]
    ) -> tuple[list[ToolCall], End | None, PendingApprovals | None]:
        stream = self._step(list(messages))
        if inspect.isawaitable(stream):
            stream = await stream
        iterable = hasattr(stream, "__aiter__") or hasattr(stream, "__iter__")
        if self._text_of is not None and iterable:  # else adapt names the fix
            stream = self._passing_text(index, stream)
        control = RunControl(defer_approvals=True)
        from ..adapters import adapt

        source: AsyncIterable[Any] = adapt(stream, self._adapter_class())
        async with ToolCallTracker() as tracker:
            calls = await run_turn(tracker, source, self._runner, control=control, deps=self._deps)
            end = tracker.end
        return calls, end, control.pending

    async def _passing_text(self, index: int, stream: Any) -> AsyncIterator[Any]:
        """``stream``'s items, unchanged, each text delta handed to ``on_text`` first.

        A synchronous stream is read in its worker thread (as ``adapt`` would); the stream
        is closed when this generator is, however it stops (``close_source``)."""
        text_of, on_text = self._text_of, self._on_text
        assert text_of is not None  # only wrapped with both
        assert on_text is not None
        if not hasattr(stream, "__aiter__"):
            from .._syncstream import SyncStream

            stream = SyncStream(stream)
        try:
            async for item in stream:
                text = text_of(item)
                if text is not None:
                    sent = on_text(index, text)
                    if inspect.isawaitable(sent):
                        await sent
                yield item
        finally:
            await close_source(stream)

    def _fed_back(self, state: LoopState, calls: list[ToolCall]) -> LoopState:
        """``state`` with the step's calls and results appended to its messages."""
        finished = [call for call in calls if call.status in (Status.DONE, Status.ERROR)]
        messages = [*state.messages, *provider_messages(self._provider, finished)]
        return state.model_copy(update={"messages": messages, "calls": calls, "pending": None})
