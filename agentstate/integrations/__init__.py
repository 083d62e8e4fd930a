"""Agent frameworks' own storage interfaces, served by agentstate (client side: no Django)."""
