"""The provider tool definitions (private; re-exported by :mod:`toolcall_tracker.tools`).

Each renderer returns the element type the provider SDK's own ``create`` takes, so a
``mypy --strict`` program can pass the list straight to the client. Those types are the
SDKs' ``TypedDict`` params, named here for type checkers only: nothing of an SDK is imported
at run time, and a program without the SDK sees them as ``Any``. (A ``TypedDict`` of this
library's own would have to repeat every optional key of the SDK's, and would stop fitting
with the next SDK release that adds one.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._jsonout import _plain_text
from .tools import ToolsInput, tools_by_name

if TYPE_CHECKING:
    from anthropic.types import ToolParam as AnthropicToolParam
    from anthropic.types import ToolUnionParam
    from openai.types.chat import ChatCompletionToolUnionParam
    from openai.types.responses import FunctionToolParam, ToolParam
    from openai.types.shared_params import FunctionDefinition

__all__ = [
    "anthropic_tools",
    "bedrock_tools",
    "cohere_tools",
    "gemini_tools",
    "openai_chat_tools",
    "openai_responses_tools",
]


def openai_chat_tools(tools: ToolsInput) -> list[ChatCompletionToolUnionParam]:
    """OpenAI Chat Completions ``tools``: ``{"type": "function", "function": {...}}`` each.

    Typed as what ``client.chat.completions.create(tools=...)`` takes (valid
    ``openai.types.chat.ChatCompletionFunctionToolParam`` values).
    """
    out: list[ChatCompletionToolUnionParam] = []
    for spec in tools_by_name(tools).values():
        function: FunctionDefinition = {"name": spec.name}
        if spec.description:
            function["description"] = _plain_text(spec.description)
        function["parameters"] = spec.parameters
        out.append({"type": "function", "function": function})
    return out


def openai_responses_tools(tools: ToolsInput) -> list[ToolParam]:
    """OpenAI Responses ``tools``: ``{"type": "function", "name": ..., "parameters": ...}``.

    ``strict`` is ``False`` (strict mode needs every property required). Typed as what
    ``client.responses.create(tools=...)`` takes (valid
    ``openai.types.responses.FunctionToolParam`` values).
    """
    out: list[ToolParam] = []
    for spec in tools_by_name(tools).values():
        entry: FunctionToolParam
        if spec.description:
            description = _plain_text(spec.description)
            entry = {
                "type": "function",
                "name": spec.name,
                "description": description,
                "parameters": spec.parameters,
                "strict": False,
            }
        else:
            name, parameters = spec.name, spec.parameters
            entry = {"type": "function", "name": name, "parameters": parameters, "strict": False}
        out.append(entry)
    return out


def anthropic_tools(tools: ToolsInput) -> list[ToolUnionParam]:
    """Anthropic Messages ``tools``: ``{"name", "description", "input_schema"}`` each.

    Typed as what ``client.messages.create(tools=...)`` takes (valid
    ``anthropic.types.ToolParam`` values).
    """
    out: list[ToolUnionParam] = []
    for spec in tools_by_name(tools).values():
        entry: AnthropicToolParam
        if spec.description:
            description = _plain_text(spec.description)
            entry = {"name": spec.name, "description": description, "input_schema": spec.parameters}
        else:
            entry = {"name": spec.name, "input_schema": spec.parameters}
        out.append(entry)
    return out


def gemini_tools(tools: ToolsInput) -> list[dict[str, Any]]:
    """Gemini ``tools``: one tool holding a function declaration per function.

    Returns ``[{"function_declarations": [{"name", "description",
    "parameters_json_schema"}, ...]}]``, valid ``google.genai.types.Tool`` values (the
    JSON Schema goes in ``parameters_json_schema``, which accepts ``$ref``/``$defs``).
    """
    declarations: list[dict[str, Any]] = []
    for spec in tools_by_name(tools).values():
        entry: dict[str, Any] = {"name": spec.name}
        if spec.description:
            entry["description"] = _plain_text(spec.description)
        entry["parameters_json_schema"] = spec.parameters
        declarations.append(entry)
    return [{"function_declarations": declarations}]


def bedrock_tools(tools: ToolsInput) -> list[dict[str, Any]]:
    """Bedrock Converse ``toolConfig["tools"]``: ``{"toolSpec": {"name", "description",
    "inputSchema": {"json": <schema>}}}`` each.

    Pass as ``client.converse(..., toolConfig={"tools": bedrock_tools(tools)})``; valid for
    botocore's ``bedrock-runtime`` ``Converse`` request shape.
    """
    out: list[dict[str, Any]] = []
    for spec in tools_by_name(tools).values():
        entry: dict[str, Any] = {"name": spec.name}
        if spec.description:
            entry["description"] = _plain_text(spec.description)
        entry["inputSchema"] = {"json": spec.parameters}
        out.append({"toolSpec": entry})
    return out


def cohere_tools(tools: ToolsInput) -> list[dict[str, Any]]:
    """Cohere v2 ``tools``: ``{"type": "function", "function": {"name", "description",
    "parameters"}}`` each, valid ``cohere.ToolV2`` values for ``client.v2.chat(tools=...)``.
    """
    out: list[dict[str, Any]] = []
    for spec in tools_by_name(tools).values():
        function: dict[str, Any] = {"name": spec.name}
        if spec.description:
            function["description"] = _plain_text(spec.description)
        function["parameters"] = spec.parameters
        out.append({"type": "function", "function": function})
    return out
