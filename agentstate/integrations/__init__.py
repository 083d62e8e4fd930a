"""Framework backends on agentstate, client side: each module implements one agent framework's
own persistence interface over the API (no Django), installed with that framework's extra."""
