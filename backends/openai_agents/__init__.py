"""The OpenAI Agents SDK's server side: its sessions are core sessions marked in their metadata
(``process``), its admin section and its importer. The client is
``agentstate.integrations.openai_agents``."""
