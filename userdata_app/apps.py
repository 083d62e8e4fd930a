from django.apps import AppConfig


class UserdataAppConfig(AppConfig):
    name = "userdata_app"
    verbose_name = "User data and erasure"

    def ready(self) -> None:
        from userdata_app import subject_data

        subject_data.declare()
