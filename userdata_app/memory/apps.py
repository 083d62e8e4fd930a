from django.apps import AppConfig


class MemoryConfig(AppConfig):
    """Memory items (LangGraph's ``BaseStore``): user data, declared in the map of people's data."""

    name = "userdata_app.memory"
    label = "memory"
    verbose_name = "Memories"

    def ready(self) -> None:
        from agentstate.search import memory_search_register
        from userdata_app.memory import selectors, subject_data

        subject_data.declare()
        memory_search_register(selectors.memory_text_search)
