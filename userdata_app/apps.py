from django.apps import AppConfig


class UserdataAppConfig(AppConfig):
    name = "userdata_app"
    verbose_name = "User data and erasure"

    def ready(self) -> None:
        from userdata_app import subject_data
        from userdata_app.adk import subject_data as adk_subject_data

        subject_data.declare()
        adk_subject_data.declare()
