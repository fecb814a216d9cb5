"""A private ``redis-server`` for the tests (not a test module).

:class:`RedisServer` runs Debian's ``redis-server`` on a free loopback port with its own
data directory, AOF on and ``appendfsync always`` (every write is on disk before the
server answers), so a test can ``kill()`` it with SIGKILL mid-turn and ``restart()`` it
on the same port and data: whatever it acknowledged is still there. Nothing is shared
with other servers on the machine (no fixed port, no shared directory).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["RedisServer", "free_port", "redis_server_binary"]

_START_TIMEOUT = 20.0  # seconds for a starting server to accept connections


def redis_server_binary() -> str | None:
    """The ``redis-server`` executable, or ``None`` if there is none."""
    return shutil.which("redis-server")


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RedisServer:
    """One private ``redis-server`` process: :meth:`start`, :meth:`kill` (SIGKILL),
    :meth:`restart` (same port and data directory), :meth:`stop`.

    Args:
        directory: its data directory (default: a new temporary one, removed by
            :meth:`stop`).
        port: its port (default: a free loopback port).
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None, port: int = 0) -> None:
        self._own_dir = directory is None
        self.dir = Path(directory or tempfile.mkdtemp(prefix="toolcall-redis-"))
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:<port>/0``."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        """Start the server and wait until it answers ``PING``."""
        if self.process is not None:
            raise RuntimeError("this Redis server is already running: stop() or kill() it first")
        binary = redis_server_binary()
        if binary is None:
            raise RuntimeError("no redis-server on PATH: apt-get install redis-server")
        args = [
            binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.dir),
            "--save", "",
            "--appendonly", "yes",
            "--appendfsync", "always",
            "--daemonize", "no",
            "--logfile", str(self.dir / "redis.log"),
        ]  # fmt: skip
        self.process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        self._wait_ready()
        return self

    def kill(self) -> None:
        """SIGKILL the server (no shutdown, no final save) and reap it."""
        process = self.process
        if process is None:
            return
        self.process = None
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
        process.wait()
        if process.stderr is not None:
            process.stderr.close()

    def restart(self) -> RedisServer:
        """Start the server again on the same port and data (after :meth:`kill`)."""
        self.kill()
        return self.start()

    def stop(self) -> None:
        """Stop the server and remove its data directory if it made it."""
        self.kill()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _wait_ready(self) -> None:
        process = self.process
        assert process is not None
        deadline = time.monotonic() + _START_TIMEOUT
        while True:
            if process.poll() is not None:
                err = process.stderr.read().decode(errors="replace") if process.stderr else ""
                log = self.dir / "redis.log"
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                self.process = None
                raise RuntimeError(f"redis-server exited ({process.returncode}): {err}{tail}")
            if _pings(self.port):
                return
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"redis-server did not answer on port {self.port}")
            time.sleep(0.02)  # polling a starting process: nothing to wait on instead


def _pings(port: int) -> bool:
    """Whether a server on ``port`` answers ``PING`` (and has loaded its data)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False
