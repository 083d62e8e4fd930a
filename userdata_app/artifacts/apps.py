from django.apps import AppConfig


class ArtifactsConfig(AppConfig):
    """ADK's artifacts (``BaseArtifactService``): user data, declared in the map of people's data."""

    name = "userdata_app.artifacts"
    label = "artifacts"
    verbose_name = "Artifacts"

    def ready(self) -> None:
        from django.db.models.signals import post_delete

        from userdata_app.artifacts import services, subject_data
        from userdata_app.artifacts.models import Artifact

        subject_data.declare()
        # Every path that deletes rows (erasure, delete_artifact, retention's and a tenant's
        # cascades) removes their files once it commits: a file lives exactly as long as its row.
        post_delete.connect(services.artifact_file_release, sender=Artifact, dispatch_uid="artifact_file_release")
