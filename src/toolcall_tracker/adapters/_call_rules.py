"""Where providers differ in the adapters' call table (private): the options of one rule
each (:class:`Rules`) and every provider's row (``RULES``), like the machine's transition
table. ``_calls.AdapterCallTable`` reads them; ``docs/adapters-internals.md`` shows the table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["RULES", "Rules"]


@dataclass(frozen=True, slots=True)
class Rules:
    """Where providers differ: one named option per rule (see ``RULES``).

    Attributes:
        mint: the base of a minted id; ``{key}`` is replaced by the record's key. ``None``:
            ids are never minted (a call without a usable id is ignored).
        whitespace_is_text: whether a whitespace-only fragment counts as the call's text
            (else a call that received only whitespace still gets its ``initial`` / ``{}``
            at close, after the whitespace).
        empty_name_fails: whether an empty name fails the call (a non-string always does).
        reused_id: what a provider id the stream already used means: ``"ignore"`` the
            announcement (a retransmission), or ``"mint"`` a fresh id for a new call.
        absent_text_fails: whether a fragment event without its text field fails the
            call (else it says nothing).
        unit: what the provider calls a call's part of the stream, in error messages.
        delta_event: the event type that carries fragments, in error values.
        falsy_input_is_empty: whether an announced input that is falsy and not a string
            (``[]``, ``0``, ``False``) counts as no input, so the call gets ``{}`` (else
            it gets that input's own JSON; ``None`` is always no input).
        reads_text: the adapter reads a call's streamed text back (:meth:`AdapterCallTable.text`)
            to check what the provider says it was: the sink's ``args_text`` when it has
            one, else a copy the table keeps, within ``Limits.max_args_chars``.
        text_after_ready: (with ``reads_text``) the copy outlives ``ready``: the provider
            may still state the final text afterwards (else it is released at ``ready``).
        id_sep: what separates a taken id from its suffix (``-2``, ``_2``...).

    ``reused_id`` may also be ``"suffix"``: the provider's id with the smallest free
    ``<id_sep><n>`` appended, a new call (servers reusing ids across choices).
    """

    mint: str | None
    whitespace_is_text: bool = True
    empty_name_fails: bool = False
    absent_text_fails: bool = True
    unit: str = "block"
    delta_event: str = "delta"
    reads_text: bool = False
    falsy_input_is_empty: bool = True
    reused_id: Literal["ignore", "mint", "suffix"] = "ignore"
    text_after_ready: bool = False
    id_sep: str = "-"


RULES: Final[dict[str, Rules]] = {
    "anthropic": Rules(
        mint="anthropic-block-{key}",
        whitespace_is_text=False,
        delta_event="content_block_delta",
    ),
    "bedrock": Rules(mint="bedrock-block-{key}", delta_event="contentBlockDelta"),
    "cohere": Rules(
        mint="cohere-call-{key}",
        empty_name_fails=True,
        absent_text_fails=False,
        unit="call",
        delta_event="tool-call-delta",
    ),
    "ollama": Rules(
        mint="ollama-call-{key}",
        empty_name_fails=True,
        reused_id="mint",
        absent_text_fails=False,
        unit="call",
    ),
    "gemini": Rules(mint="gemini-call-{key[0]}-{key[1]}", unit="call", delta_event="partial_args"),
    "ai_sdk": Rules(
        mint=None,
        whitespace_is_text=False,
        unit="call",
        delta_event="tool-input-delta",
        reads_text=True,
        falsy_input_is_empty=False,  # the SDK's input is the input, whatever it is
    ),
    # The OpenAI adapters route calls themselves (by id, index, item id; a name may arrive
    # after the text, which then waits: ``_openai._Emitter``) and use the table for ids,
    # starts, text, readiness, failures and the end.
    "openai_chat": Rules(
        mint="call_{key[0]}_{key[1]}",  # the key: (choice, position among its calls)
        id_sep="_",
        reused_id="suffix",
        empty_name_fails=True,  # no name yet: the text waits; none by ready fails the call
        absent_text_fails=False,
        unit="call",
        delta_event="chunk",
        reads_text=True,  # a call made ready early: its text must be one complete value
    ),
    "openai_responses": Rules(
        mint="call_{key}",  # the key: the output index
        id_sep="_",
        reused_id="suffix",
        empty_name_fails=True,
        absent_text_fails=False,
        unit="call",
        delta_event="response.function_call_arguments.delta",
        reads_text=True,  # final arguments are checked against the streamed text
        text_after_ready=True,  # ... and may arrive after the call was made ready
    ),
}
"""Every provider's options, like the machine's transition table: one row per provider."""
