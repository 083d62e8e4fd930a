"""Production settings: Django's deploy checks pass and a missing secret or host list stops the
service; static files are served with DEBUG off (WhiteNoise), in process and under gunicorn, hashed,
pre-compressed and cached far ahead; behind a proxy plain HTTP is redirected and HSTS sent;
gunicorn's request limits leave the app to answer long request lines, and neither log quotes a
request. Each case asserts what docs/OPERATIONS.md promises for it."""

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
pytestmark = pytest.mark.servers  # manage.py and gunicorn, each in a process of its own


def production_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")}
    env.update(
        DJANGO_ENV="production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(64),
        DJANGO_ALLOWED_HOSTS=HOST,
        DJANGO_SETTINGS_MODULE="agentstate_site.settings",
        # As docs/OPERATIONS.md sets it: without a receipt key the access log warns (access_log.W001).
        AGENTSTATE_ERASURE_HMAC_KEYS=f"k1:{secrets.token_urlsafe(32)}",
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
    assert "System check identified no issues (0 silenced)." in result.stdout  # nothing warned, nothing hidden


@pytest.mark.parametrize(
    "variable, value",
    [
        ("DJANGO_SECRET_KEY", None),
        ("DJANGO_SECRET_KEY", "django-insecure-" + "x" * 60),
        ("DJANGO_SECRET_KEY", "short"),
        ("DJANGO_ALLOWED_HOSTS", None),
    ],
    ids=["no secret key", "the development key's prefix", "a short secret key", "no host list"],
)
def test_production_refuses_to_start_without_a_real_secret_and_hosts(variable, value):
    """The settings themselves refuse, with a message naming the variable to set (not some later
    error that happens to quote it)."""
    env = production_env()
    del env[variable]
    if value is not None:
        env[variable] = value
    result = manage("check", env=env)
    assert result.returncode != 0
    refusal = result.stderr.strip().splitlines()[-1]
    assert refusal.startswith(f"django.core.exceptions.ImproperlyConfigured: DJANGO_ENV=production needs {variable}"), (
        result.stderr
    )


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
    """With DEBUG off Django serves no static files: WhiteNoise, in the app, serves every asset the
    pages link."""
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
            asset = client.get(link)
            assert asset.status_code == 200, link
            assert b"".join(asset.streaming_content)
            asset.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def gunicorn(tmp_path, collected_static, **extra_env: str):
    """gunicorn with the production settings and gunicorn.conf.py (and ``extra_env``); yields its
    base URL, a function returning what it has logged so far (its error log and the app's JSON
    lines) and the master's process id."""
    port = free_port()
    env = production_env(
        DJANGO_STATIC_ROOT=str(collected_static),
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        GUNICORN_BIND=f"127.0.0.1:{port}",
        GUNICORN_WORKERS="1",
        **extra_env,
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
            yield base, log.read_text, server.pid
        finally:
            server.terminate()
            server.wait(timeout=30)


HTTPS = {"Host": HOST, "X-Forwarded-Proto": "https"}  # what the TLS-terminating proxy sends


def test_gunicorn_serves_the_admin_and_api_docs_over_https_behind_a_proxy(collected_static, tmp_path):
    """Plain HTTP is redirected to HTTPS; over HTTPS the pages answer with a year of HSTS,
    subdomains included, preload asked (docs/OPERATIONS.md)."""
    with (
        gunicorn(tmp_path, collected_static) as (base, _, _),
        httpx.Client(base_url=base, headers=HTTPS, timeout=10) as http,
    ):
        for page in PAGES:
            plain = http.get(page, headers={"X-Forwarded-Proto": "http"})
            assert (plain.status_code, plain.headers["location"]) == (301, f"https://{HOST}{page}")
            response = http.get(page)
            assert response.status_code == 200, page
            assert response.headers["strict-transport-security"] == "max-age=31536000; includeSubDomains; preload"


def test_gunicorn_serves_the_pages_assets_hashed_precompressed_and_cached_far_ahead(collected_static, tmp_path):
    """Every asset the admin and the API docs link is served by the app itself (WhiteNoise) from
    collectstatic's hashed, pre-compressed copies, with far-future cache headers."""
    with (
        gunicorn(tmp_path, collected_static) as (base, _, _),
        httpx.Client(base_url=base, headers=HTTPS, timeout=10) as http,
    ):
        links = {link for page in PAGES for link in static_links(http.get(page).text)}
        for link in sorted(links):
            assert re.search(r"\.[0-9a-f]{12}\.", link), f"{link} is not the hashed name"
            asset = http.get(link, headers={"Accept-Encoding": "gzip"})
            assert asset.status_code == 200, link
            assert asset.content, link
            assert asset.headers["cache-control"] == "max-age=315360000, public, immutable", link
            if link.endswith((".css", ".js")):
                assert asset.headers["content-encoding"] == "gzip", link
                assert (collected_static / (link.removeprefix("/static/") + ".gz")).is_file(), link


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
        return (
            f"GET {target} HTTP/1.1\r\nHost: {host}\r\nX-Forwarded-Proto: https\r\n{headers}Connection: close\r\n\r\n"
        ).encode()

    with gunicorn(tmp_path, collected_static) as (base, logged, _):
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


@pytest.mark.skipif(
    not Path("/dev/shm").is_dir() or not Path("/proc/self/fd").is_dir(), reason="needs Linux's /proc and /dev/shm"
)
def test_gunicorn_workers_keep_their_heartbeat_file_in_memory(collected_static, tmp_path):
    """A worker touches its heartbeat file on every turn of its loop: on a disk-backed temporary
    directory that can wait behind the disk's other writes (gunicorn.conf.py)."""
    with gunicorn(tmp_path, collected_static) as (_, _, pid):
        workers = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        assert workers
        for worker in workers:
            files = [name for fd in Path(f"/proc/{worker}/fd").iterdir() if (name := _link(fd))]
            assert any(name.startswith("/dev/shm/wgunicorn-") for name in files), files


def _link(fd: Path) -> str:
    """What an open descriptor names, or "" for one closed since the directory was listed (a
    threaded worker opens and closes sockets while it starts)."""
    try:
        return os.readlink(fd)
    except FileNotFoundError:
        return ""


def test_gunicorn_as_shipped_answers_a_clients_requests_on_one_kept_connection(collected_static, tmp_path):
    """gunicorn's default sync worker closed the connection after every answer, so every call of an
    agent paid a new one; the shipped threaded worker keeps it (docs/OPERATIONS.md)."""
    with gunicorn(tmp_path, collected_static) as (base, _, _), httpx.Client(base_url=base) as client:
        ports = []
        for _ in range(3):
            answer = client.get("/livez", headers={"Host": HOST})
            assert answer.status_code == 200 and answer.headers.get("connection", "").lower() != "close"
            ports.append(answer.extensions["network_stream"].get_extra_info("client_addr")[1])
        assert len(set(ports)) == 1, ports
