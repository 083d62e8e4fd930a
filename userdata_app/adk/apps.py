from django.apps import AppConfig


class AdkUserStateConfig(AppConfig):
    """Google ADK's ``user:`` state: user data, declared in the map of people's data."""

    name = "userdata_app.adk"
    label = "adk_user_state"
    verbose_name = "Google ADK user state"

    def ready(self) -> None:
        from userdata_app.adk import subject_data

        subject_data.declare()
