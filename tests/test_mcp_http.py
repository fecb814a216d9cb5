"""``mcp_http_client``'s transport, alone (httpx2's MockTransport in place of a server).

The real server case (a streamable HTTP server killed, then a new call) is in test_mcp.py;
here each failure the transport converts, and what it passes through untouched.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import anyio
import pytest

pytest.importorskip("mcp.server.mcpserver", reason="the [mcp] extra needs mcp>=2")

import httpx2

from conftest import DEADLINE
from toolcall_tracker.mcp import mcp_http_client
from toolcall_tracker.mcp._http import ConnectionLost

pytestmark = pytest.mark.anyio
URL = "http://127.0.0.1:9/mcp"
REQUEST = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {}}


class _Breaks(httpx2.AsyncByteStream):
    """A body that sends its first bytes, then loses the connection."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b'{"jsonrpc": "2.0", '
        raise httpx2.ReadError("connection reset by peer")


def raising(exc: Exception) -> Callable[[object], object]:
    def handler(request: object) -> object:
        raise exc

    return handler


@pytest.mark.parametrize(
    ("exc", "code", "why"),
    [
        (httpx2.ConnectError("refused"), -32000, "could not be reached (ConnectError: refused)"),
        (httpx2.ReadError("reset"), -32000, "could not be reached (ReadError: reset)"),
        (httpx2.ReadTimeout("slow"), -32001, "did not answer in time (ReadTimeout: slow)"),
    ],
)
async def test_a_post_that_fails_answers_a_json_rpc_error(
    anyio_backend: str, exc: Exception, code: int, why: str
) -> None:
    transport = httpx2.MockTransport(raising(exc))
    with anyio.fail_after(DEADLINE):
        async with mcp_http_client(transport=transport) as client:
            response = await client.post(URL, json=REQUEST)
            body = json.loads(await response.aread())
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/json"
    assert body["id"] is None  # the client puts the request's own id on it
    assert body["error"]["code"] == code
    assert why in body["error"]["message"]


async def test_other_methods_raise_as_before(anyio_backend: str) -> None:
    """The client catches the GET stream's and the DELETE's errors itself."""
    transport = httpx2.MockTransport(raising(httpx2.ConnectError("refused")))
    with anyio.fail_after(DEADLINE):
        async with mcp_http_client(transport=transport) as client:
            for method in ("GET", "DELETE"):
                with pytest.raises(httpx2.ConnectError):
                    await client.request(method, URL)


async def test_a_body_that_breaks_off_raises_a_stream_error(anyio_backend: str) -> None:
    def handler(request: object) -> object:
        return httpx2.Response(200, stream=_Breaks())

    with anyio.fail_after(DEADLINE):
        async with (
            mcp_http_client(transport=httpx2.MockTransport(handler)) as client,
            client.stream("POST", URL, json=REQUEST) as response,
        ):
            with pytest.raises(ConnectionLost, match="lost \\(ReadError: connection reset"):
                await response.aread()
    assert issubclass(ConnectionLost, httpx2.StreamError)  # what the mcp client catches


async def test_answers_pass_through(anyio_backend: str) -> None:
    seen: list[object] = []

    def handler(request: object) -> object:
        seen.append(request)
        return httpx2.Response(200, json={"jsonrpc": "2.0", "id": 7, "result": {}})

    with anyio.fail_after(DEADLINE):
        async with mcp_http_client(
            transport=httpx2.MockTransport(handler), headers={"x-app": "1"}
        ) as client:
            response = await client.post(URL, json=REQUEST)
            body = json.loads(await response.aread())
    assert (response.status_code, body["id"]) == (200, 7)
    (request,) = seen
    assert request.headers["x-app"] == "1"  # type: ignore[attr-defined]
    assert client.timeout.read == 300.0  # the mcp package's defaults
    assert client.timeout.connect == 30.0
