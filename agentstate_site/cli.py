"""The ``agentstate`` command: what ``manage.py`` does, for an installed service (a wheel has no
manage.py); ``agentstate adk-services AGENTS_DIR`` and ``agentstate mcp`` (the MCP server,
agentstate.integrations.mcp_server), which need only the client.

ADK 2.13 finds a custom URI scheme only in an agents directory's ``services.py`` or
``services.yaml`` (its ``service_registry.load_services_module``); it reads no entry point and no
environment variable for one, and builds a ``DatabaseSessionService`` for any scheme it does not
know. ``adk-services`` writes that ``services.py``, once, so that ``adk web`` / ``adk api_server
--session_service_uri agentstate://HOST:PORT`` (and the memory and artifact URIs) then work with
the key from ``AGENTSTATE_API_KEY``.
"""

import os
import sys
from pathlib import Path

ADK_SERVICES = '''"""Written by `agentstate adk-services`: ADK imports this file when `adk web` or `adk api_server`
starts, and it makes agentstate:// (HTTP) and agentstates:// (HTTPS) service URIs build agentstate's
session, memory and artifact services (the API key from AGENTSTATE_API_KEY)."""

from agentstate.integrations.adk import register

register()
'''


def write_adk_services(agents_dir: str) -> str:
    """Writes ``services.py`` into an ADK agents directory; refuses to overwrite one of the user's.
    Returns what was done, or raises ``SystemExit`` with what to do instead."""
    folder = Path(agents_dir)
    if not folder.is_dir():
        raise SystemExit(f"{agents_dir} is not a directory: give the folder you pass to `adk web` / `adk api_server`.")
    target = folder / "services.py"
    if target.exists():
        if "from agentstate.integrations.adk import register" in target.read_text():
            return f"{target} already registers agentstate's URIs."
        raise SystemExit(
            f"{target} exists and is not ours: add these two lines to it instead:\n"
            "from agentstate.integrations.adk import register\nregister()"
        )
    target.write_text(ADK_SERVICES)
    return f"Wrote {target}: --session_service_uri agentstate://HOST:PORT now works (key from AGENTSTATE_API_KEY)."


def main() -> None:
    if sys.argv[1:2] == ["adk-services"]:
        if len(sys.argv) != 3:
            sys.exit("usage: agentstate adk-services AGENTS_DIR")
        print(write_adk_services(sys.argv[2]))  # noqa: T201 (a command's answer)
        return
    if sys.argv[1:2] == ["mcp"]:
        try:
            from agentstate.integrations.mcp_server import main as mcp_main
        except ImportError:
            sys.exit("agentstate mcp needs its extra: pip install 'agentstate-django[mcp]'")
        mcp_main(sys.argv[2:])
        return
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentstate_site.settings")
    try:
        from django.core.management import execute_from_command_line
    except ImportError:
        sys.exit(
            "The agentstate command runs the service, which needs its extra: pip install 'agentstate-django[server]'"
        )
    execute_from_command_line(sys.argv)
