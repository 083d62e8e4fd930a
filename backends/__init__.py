"""The framework backends: one package per framework (Google ADK, LangGraph, the OpenAI Agents SDK)
with its models of both layers, rules, API, admin, importer and templates, and one AppConfig that
registers it with the core (``sessions_app.backends``). The core imports none of them."""
