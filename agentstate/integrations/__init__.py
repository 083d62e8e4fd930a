"""Framework backends on agentstate, client side: each module implements one agent framework's
session or checkpoint interface over the REST API, imports no Django and is installed with that
framework's extra (docs/CLIENT.md)."""
