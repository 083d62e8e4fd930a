"""The shipped server configuration keeps client connections alive, and the documented proxies
(docs/SCALING.md's HAProxy recipe, which CI runs, and its nginx example) keep theirs to gunicorn
alive too, closing an idle one before gunicorn does."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tools.recipe import SCALING, recipe_steps

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def shipped() -> dict:
    """gunicorn.conf.py's values with no GUNICORN_* variable set, as a fresh process reads them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUNICORN_")}
    code = (
        "import json, runpy; c = runpy.run_path('gunicorn.conf.py'); "
        "print(json.dumps({k: c[k] for k in ('worker_class', 'workers', 'threads', 'keepalive')}))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_the_shipped_workers_keep_connections_alive_with_threads_per_core(shipped):
    # gunicorn's sync worker closes every connection after its answer, whatever GUNICORN_KEEPALIVE says.
    assert shipped["worker_class"] == "gthread"
    assert shipped["threads"] > 1 and shipped["keepalive"] > 0
    assert shipped["workers"] == (os.cpu_count() or 1) + 1


def test_the_documented_proxies_keep_connections_alive_and_close_idle_ones_before_gunicorn(shipped):
    text = SCALING.read_text()
    haproxy = recipe_steps(text)["proxy"]
    assert "option http-keep-alive" in haproxy and "http-reuse safe" in haproxy
    assert "http-server-close" not in haproxy and "httpclose" not in haproxy
    block = re.search(r"^```nginx\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    assert block, "docs/SCALING.md shows no nginx setup"
    nginx = block[1]
    assert re.search(r"^\s+keepalive \d+;", nginx, re.MULTILINE)
    assert "proxy_http_version 1.1;" in nginx and 'proxy_set_header Connection "";' in nginx
    idle = [int(s) for s in re.findall(r"timeout http-keep-alive (\d+)s", haproxy)]
    idle += [int(s) for s in re.findall(r"keepalive_timeout (\d+)s;", nginx)]
    assert len(idle) >= 3 and max(idle) < shipped["keepalive"], (idle, shipped["keepalive"])
