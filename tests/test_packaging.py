"""The wheel carries every package of the service: pyproject.toml lists them (it must, to map the
top-level templates/ folder into the wheel), so a new package left off the list would be missing
from an installed service while every test in the checkout passes."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_is_listed_for_the_wheel():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for root in ("agentstate", "agentstate_site", "sessions_app", "userdata_app")
        for init in (ROOT / root).rglob("__init__.py")
    }
    assert found | {"agentstate.templates"} == listed
