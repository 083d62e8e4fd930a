"""``agentstate mcp`` as MCP clients start it: a stdio subprocess, or an HTTP process on a port of
29700-29799 (this suite's range)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from mcp.client.stdio import StdioServerParameters

COMMAND = str(Path(sys.executable).parent / "agentstate")  # the installed console script
PORTS = range(29700, 29800)


def stdio_params(url: str, key: str, *args: str) -> StdioServerParameters:
    """How a desktop client (or ADK, or the Agents SDK) starts the stdio server."""
    return StdioServerParameters(
        command=COMMAND,
        args=["mcp", "--url", url, *args],
        env={"PATH": os.environ["PATH"], "AGENTSTATE_API_KEY": key},
    )


def free_port() -> int:
    for port in PORTS:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 29700-29799")


@contextlib.contextmanager
def http_server(url: str, *args: str) -> Iterator[str]:
    """``agentstate mcp --http`` in its own process; yields its MCP endpoint's URL."""
    port = free_port()
    env = {"PATH": os.environ["PATH"]}
    process = subprocess.Popen(
        [COMMAND, "mcp", "--http", "--port", str(port), "--url", url, *args], env=env, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"agentstate mcp --http did not start: {process.stderr.read().decode()}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)
