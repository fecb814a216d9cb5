"""Real MCP servers for the tests: tests/_mcp_server.py over stdio or streamable HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from anyio.abc import Process
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

SERVER = str(Path(__file__).with_name("_mcp_server.py"))
TRANSPORTS = ["stdio", "http"]


@asynccontextmanager
async def connect(name: str, transport: str) -> AsyncIterator[ClientSession]:
    """An initialized session with a fresh server process named ``name``."""
    if transport == "stdio":
        params = StdioServerParameters(command=sys.executable, args=[SERVER, name, "stdio"])
        with open(os.devnull, "w") as errlog:  # noqa: ASYNC230 (the server logs tool errors)
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                yield session
        return
    async with (
        http_server(name) as (url, _),
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def http_server(name: str) -> AsyncIterator[tuple[str, Process]]:
    """A server process named ``name`` serving streamable HTTP: its URL and the process
    (killed and reaped on the way out, if still running)."""
    # A free loopback port: the socket listens before the server starts (the process
    # inherits it), so connecting never races the server's startup.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        process = await anyio.open_process(
            [sys.executable, SERVER, name, "http", str(sock.fileno())],
            pass_fds=(sock.fileno(),),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    try:
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
            await process.wait()
            await process.aclose()
