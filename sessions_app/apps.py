from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Agent sessions (process state)"

    def ready(self) -> None:
        from sessions_app import subject_data
        from sessions_app.adk import subject_data as adk_subject_data
        from sessions_app.langgraph import subject_data as langgraph_subject_data

        subject_data.declare()
        langgraph_subject_data.declare()
        adk_subject_data.declare()
