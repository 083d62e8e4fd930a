"""The models Django loads for this app: ``Meta.app_label`` keeps them in ``sessions_app``'s
tables, migrations and content types."""

from backends.langgraph.process.models import LangGraphBlob, LangGraphCheckpoint, LangGraphThread, LangGraphWrite

__all__ = ["LangGraphBlob", "LangGraphCheckpoint", "LangGraphThread", "LangGraphWrite"]
