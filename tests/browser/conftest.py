"""A headless Chromium page for the browser tests."""

import pytest
from django.db import connections

from tests.browser.chromium import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS


@pytest.fixture
def browser_page(monkeypatch):
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')"
    )
    # Playwright's sync API runs an event loop in this thread; the ORM calls in the test are
    # still plain synchronous code.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(15_000)
        yield page
        browser.close()
        # ORM calls made inside the Playwright context got a connection of their own (its
        # greenlet's context); close it, or the test database cannot be dropped at the end.
        connections.close_all()
