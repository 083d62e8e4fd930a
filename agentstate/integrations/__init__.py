"""Framework backends on agentstate, client side: each module implements one agent framework's
session or checkpoint interface over the REST API and imports no Django (docs/CLIENT.md)."""
