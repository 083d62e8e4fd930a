"""The settings a fresh process computes from exactly the environment a test gives it."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Every variable the settings read starts with one of these: none is inherited from the test run.
ENV_PREFIXES = ("DJANGO_", "DATABASE_", "REDIS_URL", "AGENTSTATE_", "OTEL_")


def settings_process(fields: str, **env: str) -> subprocess.CompletedProcess:
    """Print ``json.dumps({fields})`` of ``agentstate_site.settings`` imported as ``s`` in a fresh
    process whose environment, among the settings' variables, is exactly ``env``."""
    clean = {key: value for key, value in os.environ.items() if not key.startswith(ENV_PREFIXES)}
    script = f"import json, agentstate_site.settings as s; print(json.dumps({{{fields}}}, default=str))"
    return subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env={**clean, **env}, capture_output=True, text=True, timeout=60
    )
