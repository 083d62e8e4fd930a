"""Debian's Chromium, which Playwright drives headless in these tests (never `playwright install`)."""

import shutil
from pathlib import Path

import pytest
from django.conf import settings

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(settings.BASE_DIR) / "artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
needs_chromium = [
    pytest.mark.skipif(
        not shutil.which(CHROMIUM),
        reason=f"{CHROMIUM} is missing: apt-get install chromium (Debian's package; Playwright drives it, no driver)",
    ),
    pytest.mark.browser,
]
