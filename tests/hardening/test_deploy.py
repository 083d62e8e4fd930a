"""Production settings: Django's deploy checks pass, and static files are served with DEBUG off
(WhiteNoise), in process and under gunicorn."""
import os
import re
import secrets
import socket
import subprocess
import sys
import time
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


def test_gunicorn_serves_the_admin_and_api_docs_over_https_behind_a_proxy(collected_static, tmp_path):
    port = free_port()
    env = production_env(
        DJANGO_STATIC_ROOT=str(collected_static),
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        GUNICORN_BIND=f"127.0.0.1:{port}",
        GUNICORN_WORKERS="1",
    )
    env.pop("REDIS_URL", None)
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "-c", "gunicorn.conf.py"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        headers = {"Host": HOST, "X-Forwarded-Proto": "https"}
        with httpx.Client(base_url=base, headers=headers, timeout=10) as http:
            for _ in range(200):
                try:
                    http.get("/static/")
                    break
                except httpx.TransportError:
                    assert server.poll() is None, server.stdout.read().decode()
                    time.sleep(0.05)
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
    finally:
        server.terminate()
        server.wait(timeout=30)
