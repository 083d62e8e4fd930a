"""The server side of the OpenAI Agents SDK's sessions (agentstate.integrations.openai_agents):
they are core sessions, written through the message API, one per branch and marked in their
metadata. This backend registers them with the core and shows their items to staff."""
