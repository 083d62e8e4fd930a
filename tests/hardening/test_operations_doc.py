"""docs/OPERATIONS.md lists every environment variable the service reads."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READS = re.compile(r"""(?:environ\.get|env_bool|env_list|getenv)\(\s*["']([A-Z][A-Z0-9_]+)["']""")


def test_every_environment_variable_is_documented():
    sources = [ROOT / "gunicorn.conf.py", *ROOT.glob("agentstate/**/*.py"), *ROOT.glob("*_app/**/*.py")]
    read = {name for path in sources for name in READS.findall(path.read_text())}
    read -= {"DJANGO_SETTINGS_MODULE", "RUN_MAIN"}  # set by Django itself
    read |= {"DATABASE_URL"}  # read by dj_database_url
    doc = (ROOT / "docs" / "OPERATIONS.md").read_text()
    missing = sorted(name for name in read if f"`{name}`" not in doc)
    assert not missing, f"document these in docs/OPERATIONS.md: {missing}"
