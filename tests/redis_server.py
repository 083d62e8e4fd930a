"""A redis-server of a test's own, on a free port of 127.0.0.1, for the tests that freeze, stop or
refuse it (tests/test_redis_waits.py, tests/userdata_app/test_erasure_after_commit.py)."""

import shutil
import subprocess
import time

import pytest
import redis

from tools.pgcluster import free_port


def redis_server_started() -> tuple[subprocess.Popen, int, redis.Redis]:
    """The server's process, its port and a client, once it answers; skips without redis-server."""
    program = shutil.which("redis-server")
    if program is None:
        pytest.skip("needs redis-server")
    port = free_port()
    server = subprocess.Popen(
        [program, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            return server, port, client
        except redis.exceptions.ConnectionError:
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
