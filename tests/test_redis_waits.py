"""Every wait on Redis is bounded (docs/SCALING.md, "Every wait is bounded" and "When Redis is
down"): a frozen Redis (its process stopped, its kernel still accepting connections) or a dead one
answers the caller within the timeouts, with what the docs say, never a hang nor a 500."""

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager

import pytest

from sessions_app import services
from tests.fresh_process import settings_process
from tests.redis_server import redis_server_started

STATE = "/api/v1/users/u1/sessions/s1/working-state/"
MESSAGES = "/api/v1/users/u1/sessions/s1/messages/"


@pytest.fixture
def own_redis(settings):
    """A Redis server of this test's own holding the cache (throttle counters on) and the working
    state; yields its process."""
    server, port, _ = redis_server_started()
    url = f"redis://127.0.0.1:{port}/0"
    settings.REDIS_URL = url
    settings.WORKING_STATE_BACKEND = "redis"
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "OPTIONS": settings.REDIS_OPTIONS,
        }
    }
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"api_key": "1000/minute"}}
    yield server
    if server.poll() is None:
        os.kill(server.pid, signal.SIGCONT)
        server.terminate()
    server.wait(timeout=10)


@contextmanager
def frozen(server: subprocess.Popen):
    os.kill(server.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(server.pid, signal.SIGCONT)


def answered_within(seconds: float, call: Callable):
    """``call()``'s answer, asserting it came within ``seconds`` (run in a thread, so a wait without
    a bound fails the test instead of hanging it: the thread ends once Redis is continued)."""
    answers: list = []
    worker = threading.Thread(target=lambda: answers.append(call()), daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(seconds)
    assert answers, f"no answer within {seconds} s"
    return answers[0], time.monotonic() - started


@pytest.mark.servers  # a Redis server of its own
@pytest.mark.django_db(transaction=True)
def test_with_redis_frozen_working_state_answers_503_with_retry_after_and_messages_are_stored(
    own_redis, tenant, api, settings
):
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    assert api.patch(STATE, {"step": 1}, format="json").status_code == 200
    # Each Redis call waits at most the socket timeout; a working-state write makes two.
    bound = 2 * settings.REDIS_SOCKET_TIMEOUT + 1
    with frozen(own_redis):
        for call in (
            lambda: api.patch(STATE, {"step": 2}, format="json"),
            lambda: api.get(STATE),
        ):
            answer, took = answered_within(bound + 5, call)
            assert answer.status_code == 503, answer.content
            assert took < bound, took
            assert answer["Retry-After"] == "2"
            assert answer.json()["error"]["code"] == "unavailable"
        # The throttle's counters are in the cache too: without them the write goes through.
        answer, took = answered_within(bound + 5, lambda: api.post(MESSAGES, {"content": "hi"}, format="json"))
        assert answer.status_code == 201, answer.content
        assert took < bound, took
    assert api.get(STATE).json() == {"step": 1}  # the refused write changed nothing
    assert api.patch(STATE, {"step": 3}, format="json").status_code == 200
    assert [m["content"] for m in api.get(MESSAGES).json()["results"]] == ["hi"]


@pytest.mark.servers  # a Redis server of its own, then stopped
@pytest.mark.django_db(transaction=True)
def test_with_redis_gone_working_state_answers_503_at_once(own_redis, tenant, api):
    services.session_create(tenant=tenant, user_id="u1", session_id="s1")
    own_redis.terminate()
    own_redis.wait(timeout=10)
    answer, took = answered_within(10, lambda: api.patch(STATE, {"step": 1}, format="json"))
    assert answer.status_code == 503, answer.content
    assert answer.json()["error"]["code"] == "unavailable" and answer["Retry-After"] == "2"
    assert took < 1, took
    assert api.post(MESSAGES, {"content": "hi"}, format="json").status_code == 201


@pytest.mark.servers  # runs in a fresh process
def test_the_cache_and_the_working_state_get_the_redis_bounds_and_each_is_overridable():
    fields = "'cache': s.CACHES['default']['OPTIONS'] and {k: s.CACHES['default']['OPTIONS'][k] for k in %s}"
    names = "('socket_timeout', 'socket_connect_timeout', 'socket_keepalive', 'health_check_interval')"
    defaults = settings_process(fields % names, REDIS_URL="redis://r:6379/0")
    assert defaults.returncode == 0, defaults.stderr
    assert json.loads(defaults.stdout)["cache"] == {
        "socket_timeout": 1.5,
        "socket_connect_timeout": 0.5,
        "socket_keepalive": True,
        "health_check_interval": 15,
    }
    changed = settings_process(
        fields % names, REDIS_URL="redis://r:6379/0", REDIS_SOCKET_TIMEOUT="4", REDIS_CONNECT_TIMEOUT="2.5"
    )
    assert json.loads(changed.stdout)["cache"]["socket_timeout"] == 4
    assert json.loads(changed.stdout)["cache"]["socket_connect_timeout"] == 2.5
