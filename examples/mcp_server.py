"""A tiny MCP server for the MCP tools docs (docs/mcp.md): run over stdio.

    python examples/mcp_server.py

Two tools: ``notes.search`` (reports progress, returns structured content) and
``delete_note`` (answers ``isError`` for a note that does not exist).
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("notes", log_level="ERROR")
NOTES = {"n1": "buy milk", "n2": "call the bank", "n3": "milk the cow"}


@server.tool(name="notes.search")
async def search(query: str, ctx: Context) -> dict[str, list[str]]:
    """Find the notes that contain the query."""
    found = []
    for done, (note_id, text) in enumerate(NOTES.items(), start=1):
        await ctx.report_progress(done, len(NOTES), f"read {note_id}")
        if query in text:
            found.append(note_id)
    return {"ids": found}


@server.tool()
def delete_note(note_id: str) -> str:
    """Delete a note by its id."""
    if note_id not in NOTES:
        raise ToolError(f"no note {note_id!r}")
    del NOTES[note_id]
    return f"deleted {note_id}"


if __name__ == "__main__":
    server.run("stdio")
