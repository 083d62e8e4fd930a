"""The models Django loads for this app, from both layers: ``Meta.app_label`` keeps each in its
layer's app (``sessions_app``, ``userdata_app``), so tables, migrations and content types are
theirs."""

from backends.adk.people.artifacts.models import Artifact, ArtifactFileOwed
from backends.adk.people.models import AdkEventUserDelta, AdkUserState
from backends.adk.process.models import AdkAppState, AdkEvent

__all__ = ["AdkAppState", "AdkEvent", "AdkEventUserDelta", "AdkUserState", "Artifact", "ArtifactFileOwed"]
