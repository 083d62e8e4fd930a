"""Production settings: Django's deploy checks pass, static files are served with DEBUG off
(WhiteNoise), in process and under gunicorn; gunicorn's request limits leave the app to answer
long request lines, and neither log quotes a request."""

import os
import re
import secrets
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]
HOST = "agentstate.example.com"
STATIC_LINK = re.compile(r'(?:href|src)="(/static/[^"]+)"')


def production_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")}
    env.update(
        DJANGO_ENV="production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(64),
        DJANGO_ALLOWED_HOSTS=HOST,
        DJANGO_SETTINGS_MODULE="agentstate.settings",
    )
    env.update(extra)
    return env


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_check_deploy_passes_without_warnings():
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=production_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.mark.parametrize(
    "unset, value, needs",
    [
        ("DJANGO_SECRET_KEY", None, "DJANGO_SECRET_KEY"),
        ("DJANGO_SECRET_KEY", "django-insecure-" + "x" * 60, "DJANGO_SECRET_KEY"),
        ("DJANGO_SECRET_KEY", "short", "DJANGO_SECRET_KEY"),
        ("DJANGO_ALLOWED_HOSTS", None, "DJANGO_ALLOWED_HOSTS"),
    ],
)
def test_production_refuses_to_start_without_a_real_secret_and_hosts(unset, value, needs):
    env = production_env()
    del env[unset]
    if value is not None:
        env[unset] = value
    result = manage("check", env=env)
    assert result.returncode != 0
    assert needs in result.stderr


@pytest.fixture(scope="module")
def collected_static(tmp_path_factory) -> Path:
    """collectstatic with the production storage (hashed, compressed) into a temporary root."""
    root = tmp_path_factory.mktemp("static")
    result = manage("collectstatic", "--noinput", "-v0", env=production_env(DJANGO_STATIC_ROOT=str(root)))
    assert result.returncode == 0, result.stderr
    assert (root / "staticfiles.json").exists()
    return root


def static_links(html: str) -> list[str]:
    links = STATIC_LINK.findall(html)
    assert links, "page links no static files"
    return links


PAGES = ["/admin/login/", "/api/docs/"]


def test_admin_and_api_docs_assets_are_served_with_debug_off(collected_static, settings, db):
    settings.DEBUG = False
    settings.STATIC_ROOT = collected_static
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }
    client = Client()  # a new handler: WhiteNoise indexes the collected files when it starts
    for page in PAGES:
        response = client.get(page)
        assert response.status_code == 200, page
        for link in static_links(response.content.decode()):
            assert re.search(r"\.[0-9a-f]{12}\.", link), f"{link} is not the hashed name"
            asset = client.get(link)
            assert asset.status_code == 200, link
            assert b"".join(asset.streaming_content)
            asset.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def gunicorn(tmp_path, collected_static):
    """gunicorn with the production settings and gunicorn.conf.py; yields its base URL and a
    function returning what it has logged so far (its error log and the app's JSON lines)."""
    port = free_port()
    env = production_env(
        DJANGO_STATIC_ROOT=str(collected_static),
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        GUNICORN_BIND=f"127.0.0.1:{port}",
        GUNICORN_WORKERS="1",
    )
    env.pop("REDIS_URL", None)
    log = tmp_path / "gunicorn.log"
    with log.open("wb") as sink:
        server = subprocess.Popen(
            [str(Path(sys.executable).parent / "gunicorn"), "-c", "gunicorn.conf.py"],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(200):
                try:
                    httpx.get(base + "/static/", timeout=10)
                    break
                except httpx.TransportError:
                    assert server.poll() is None, log.read_text()
                    time.sleep(0.05)
            yield base, log.read_text
        finally:
            server.terminate()
            server.wait(timeout=30)


def test_gunicorn_serves_the_admin_and_api_docs_over_https_behind_a_proxy(collected_static, tmp_path):
    with gunicorn(tmp_path, collected_static) as (base, _):
        headers = {"Host": HOST, "X-Forwarded-Proto": "https"}
        with httpx.Client(base_url=base, headers=headers, timeout=10) as http:
            plain = http.get("/admin/login/", headers={"X-Forwarded-Proto": "http"})
            assert plain.status_code == 301
            assert plain.headers["location"] == f"https://{HOST}/admin/login/"
            for page in PAGES:
                response = http.get(page)
                assert response.status_code == 200, page
                assert response.headers["strict-transport-security"].startswith("max-age=31536000")
                assert response.headers["x-request-id"]
                for link in static_links(response.text):
                    asset = http.get(link, headers={"Accept-Encoding": "gzip"})
                    assert asset.status_code == 200, link
                    assert asset.content
                    if link.endswith(".css"):
                        assert asset.headers["content-type"].startswith("text/css")


def raw_request(base: str, request: bytes) -> tuple[int, str, bytes]:
    """Status, Content-Type and body of one request sent byte for byte (httpx would refuse some)."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    content_type = next(
        (line.split(":", 1)[1].strip() for line in lines if line.lower().startswith("content-type:")), ""
    )
    return int(lines[0].split()[1]), content_type, body


USER_ID = "uid-5ca1ab1e"
BAD_HOST = "host-f00d.example"


def test_gunicorn_lets_the_app_answer_long_request_lines_and_keeps_requests_out_of_its_log(collected_static, tmp_path):
    """The app answers (JSON) every request line up to 8190 bytes; past gunicorn's limits it
    answers by itself, in HTML, as docs/OPERATIONS.md says. Neither log quotes the request."""
    path = f"/api/v1/users/{USER_ID}/data/"

    def request(target: str = path, headers: str = "", host: str = HOST) -> bytes:
        return f"GET {target} HTTP/1.1\r\nHost: {host}\r\nX-Forwarded-Proto: https\r\n{headers}Connection: close\r\n\r\n".encode()

    with gunicorn(tmp_path, collected_static) as (base, logged):
        answers = {
            "line of 5,000 bytes": raw_request(base, request(f"{path}?q={'a' * 5000}")),
            "line of 8,100 bytes": raw_request(base, request(f"{path}?q={'a' * 8100}")),
            "disallowed host": raw_request(base, request(host=BAD_HOST)),
            "line over 8,190 bytes": raw_request(base, request(f"{path}?q={'a' * 8200}")),
            "header over 8,190 bytes": raw_request(base, request(headers=f"X-Big: {'b' * 8200}\r\n")),
            "101 headers": raw_request(base, request(headers="".join(f"X-H{i}: v\r\n" for i in range(101)))),
            "malformed header": raw_request(base, request(headers=f"X Bad {USER_ID}: v\r\n")),
        }
        output = logged()
    statuses = {name: (status, content_type.split(";")[0]) for name, (status, content_type, _) in answers.items()}
    assert statuses == {
        "line of 5,000 bytes": (401, "application/json"),  # was gunicorn's HTML 414 past 4,094 bytes
        "line of 8,100 bytes": (401, "application/json"),
        "disallowed host": (400, "application/json"),
        "line over 8,190 bytes": (414, "text/html"),
        "header over 8,190 bytes": (431, "text/html"),
        "101 headers": (431, "text/html"),
        "malformed header": (400, "text/html"),
    }
    assert b'"code":"not_authenticated"' in answers["line of 5,000 bytes"][2]
    assert "Invalid request from ip=" in output  # gunicorn still says what it refused
    assert USER_ID not in output and "5ca1ab1e" not in output and BAD_HOST not in output
