"""ADK artifacts on the server: the size limit, content types kept, storage outages answered in
the error shape without losing a committed row, files removed after erasure and retention (the raw
directory listed), the subject export, the admin, and the S3 path against a moto server."""

from __future__ import annotations

import base64
import socket
from datetime import timedelta

import pytest
from django.core.files.storage import storages
from django.core.management import CommandError, call_command
from django.utils import timezone

from backends.adk.people.artifacts.models import Artifact, ArtifactFileOwed
from sessions_app.models import Session
from sessions_app.services import retention
from tests.userdata_app.erasure_factories import verified_request
from userdata_app import erasure
from userdata_app.models import ErasureRequest
from userdata_app.selectors import subject_export

A = "/api/v1/adk/apps/notes/users/ann/artifacts/"
FS = "django.core.files.storage.FileSystemStorage"


def files_in(directory) -> list[str]:
    """The files of the storage directory, as the disk has them."""
    return sorted(path.name for path in directory.rglob("*") if path.is_file())


@pytest.fixture
def artifacts_dir(settings, tmp_path):
    location = tmp_path / "artifacts"
    settings.STORAGES = {**settings.STORAGES, "artifacts": {"BACKEND": FS, "OPTIONS": {"location": str(location)}}}
    return location


@pytest.fixture
def storage_down(settings, tmp_path):
    """Point the storage at a directory that cannot be: every read, write and delete fails."""
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")

    def down():
        location = str(blocker / "artifacts")
        settings.STORAGES = {**settings.STORAGES, "artifacts": {"BACKEND": FS, "OPTIONS": {"location": location}}}

    return down


def save(api, filename="user:scan.png", data=b"\x89PNG-bytes", mime_type="image/png", **fields):
    part = {"inline_data": {"mime_type": mime_type, "data": base64.b64encode(data).decode()}}
    return api.post(A, {"filename": filename, "artifact": part, **fields}, format="json")


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == code
    return error


def test_a_save_over_the_limit_is_a_413_and_stores_nothing(api, settings, artifacts_dir):
    settings.ARTIFACT_MAX_BYTES = 10
    error = assert_error(save(api, data=b"x" * 11), 413, "too_large")
    assert "11 bytes" in error["message"] and error["fields"] == {"artifact": ["must hold at most 10 bytes."]}
    assert not Artifact.objects.exists() and files_in(artifacts_dir) == []
    assert save(api, data=b"x" * 10).status_code == 201


@pytest.mark.parametrize(
    "body, field",
    [
        ({"filename": "note.txt", "artifact": {"text": "hi"}}, "session_id"),  # a session's name without a session
        ({"filename": "user:a", "artifact": {"inline_data": {"data": "not base64!"}}}, "artifact.inline_data.data"),
        ({"filename": "user:a", "artifact": {"text": "hi", "inline_data": {}}}, "artifact"),
        ({"filename": "user:a\x00", "artifact": {"text": "hi"}}, "filename"),
        ({"filename": "user:a", "artifact": {"text": "hi"}, "custom_metadata": [1]}, "custom_metadata"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(api, artifacts_dir, body, field):
    error = assert_error(api.post(A, body, format="json"), 400, "invalid")
    assert field in error["fields"]
    assert files_in(artifacts_dir) == []


def test_the_bytes_come_back_with_their_content_type_as_a_download(api, artifacts_dir):
    assert (
        save(api, filename="user:scans/id card.pdf", data=b"%PDF-1.7", mime_type="application/pdf").status_code == 201
    )
    assert api.post(A, {"filename": "user:n", "artifact": {"text": "ünï"}}, format="json").status_code == 201
    pdf = api.get(A + "content/", {"filename": "user:scans/id card.pdf"}, HTTP_ACCEPT="image/png")
    assert pdf.status_code == 200 and pdf.content == b"%PDF-1.7"
    assert pdf["Content-Type"] == "application/pdf"
    assert pdf["Content-Disposition"] == 'attachment; filename="id card.pdf"'
    text = api.get(A + "content/", {"filename": "user:n", "version": 0})
    assert (text["Content-Type"], text.content) == ("text/plain; charset=utf-8", "ünï".encode())
    versions = api.get(A + "versions/", {"filename": "user:scans/id card.pdf"}).json()["versions"]
    assert [(v["version"], v["mime_type"], v["size"]) for v in versions] == [(0, "application/pdf", 8)]
    assert api.get(versions[0]["canonical_uri"]).content == b"%PDF-1.7"  # the canonical URI serves them
    assert_error(api.get(A + "content/", {"filename": "user:n", "version": 1}), 404, "not_found")


@pytest.mark.parametrize("kind", ["inline_data", "file_data"])
def test_a_mime_type_a_header_cannot_carry_is_a_400_naming_it(api, artifacts_dir, kind):
    """A CR or LF in the type would end the download's Content-Type header: every download a 500."""
    value = {"mime_type": "text/html\r\nSet-Cookie: x=1"}
    value |= {"data": "aGk="} if kind == "inline_data" else {"file_uri": "gs://bucket/a.pdf"}
    error = assert_error(api.post(A, {"filename": "user:a", "artifact": {kind: value}}, format="json"), 400, "invalid")
    assert list(error["fields"]) == [f"artifact.{kind}.mime_type"]
    assert "control characters" in error["message"]
    assert not Artifact.objects.exists() and files_in(artifacts_dir) == []


def test_a_stored_mime_type_a_header_cannot_carry_downloads_as_untyped_bytes(api, artifacts_dir):
    """A version stored before saves refused such a type still downloads, as bytes of no stated type."""
    assert save(api, data=b"%PDF").status_code == 201
    Artifact.objects.update(mime_type="application/pdf\nX-Injected: 1")
    response = api.get(A + "content/", {"filename": "user:scan.png"})
    assert response.status_code == 200 and response.content == b"%PDF"
    assert response["Content-Type"] == "application/octet-stream" and "X-Injected" not in response


def test_storage_down_answers_503_in_the_error_shape_and_never_loses_a_committed_row(
    api, artifacts_dir, storage_down, settings, django_capture_on_commit_callbacks
):
    assert save(api).status_code == 201
    [kept] = files_in(artifacts_dir)
    working = settings.STORAGES
    storage_down()
    assert_error(save(api, filename="user:other.png"), 503, "unavailable")  # nothing stored
    assert list(Artifact.objects.values_list("filename", flat=True)) == ["user:scan.png"]
    assert_error(api.get(A + "load/", {"filename": "user:scan.png"}), 503, "unavailable")
    assert_error(api.get(A + "content/", {"filename": "user:scan.png"}), 503, "unavailable")
    assert Artifact.objects.count() == 1  # a failed read changes nothing
    with django_capture_on_commit_callbacks(execute=True):
        assert api.delete(A + "?filename=user:scan.png").status_code == 204  # the row's deletion commits
    assert not Artifact.objects.exists()
    assert list(ArtifactFileOwed.objects.values_list("content", flat=True)) == [kept]  # the file is owed
    assert files_in(artifacts_dir) == [kept]
    with pytest.raises(CommandError, match="still owed"):
        call_command("remove_artifact_files", verbosity=0)
    settings.STORAGES = working  # the storage is back
    call_command("remove_artifact_files", verbosity=0)
    assert files_in(artifacts_dir) == [] and not ArtifactFileOwed.objects.exists()


def test_a_delete_removes_the_files_once_it_commits_and_versions_start_again(
    api, artifacts_dir, django_capture_on_commit_callbacks
):
    for data in (b"one", b"two"):
        assert save(api, data=data).json()["version"] in (0, 1)
    assert len(files_in(artifacts_dir)) == 2
    with django_capture_on_commit_callbacks(execute=False) as pending:
        assert api.delete(A + "?filename=user:scan.png").status_code == 204
    assert len(files_in(artifacts_dir)) == 2  # not before the commit
    for callback in pending:
        callback()
    assert files_in(artifacts_dir) == [] and not ArtifactFileOwed.objects.exists()
    assert save(api).json()["version"] == 0


def test_an_erasure_removes_the_persons_files_from_storage(
    api, tenant, artifacts_dir, django_capture_on_commit_callbacks
):
    assert save(api).status_code == 201
    assert save(api, filename="user:other.png").status_code == 201
    other = "/api/v1/adk/apps/notes/users/bob/artifacts/"
    bob = {"filename": "user:x", "artifact": {"text": "bob's"}}
    assert api.post(other, bob, format="json").status_code == 201
    [bobs_file] = [a.content for a in Artifact.objects.filter(user_id="bob")]
    request = verified_request(subjects=[(tenant, "ann")], scope=ErasureRequest.Scope.USER_DATA)
    with django_capture_on_commit_callbacks(execute=True):
        receipt = erasure.erasure_execute(request=request, actor=None)
    assert receipt.counts["artifacts"] == 2
    assert files_in(artifacts_dir) == [bobs_file]  # ann's files gone from the disk, bob's kept
    assert not ArtifactFileOwed.objects.exists()
    # During the grace period a save is refused after its file was written: the file goes again.
    assert_error(save(api), 409, "subject_erased")
    assert files_in(artifacts_dir) == [bobs_file]


def test_an_erasure_with_the_storage_down_is_done_and_its_files_owed_until_the_storage_is_back(
    api, tenant, artifacts_dir, storage_down, settings, django_capture_on_commit_callbacks
):
    assert save(api).status_code == 201
    working = settings.STORAGES
    storage_down()
    request = verified_request(subjects=[(tenant, "ann")], scope=ErasureRequest.Scope.USER_DATA)
    with django_capture_on_commit_callbacks(execute=True):
        receipt = erasure.erasure_execute(request=request, actor=None)  # no error after the commit
    assert receipt.counts["artifacts"] == 1 and not Artifact.objects.exists()
    assert len(files_in(artifacts_dir)) == 1 and ArtifactFileOwed.objects.count() == 1
    settings.STORAGES = working
    call_command("remove_artifact_files", verbosity=0)
    assert files_in(artifacts_dir) == [] and not ArtifactFileOwed.objects.exists()


def test_retention_deletes_an_ended_sessions_artifacts_and_their_files(
    api, tenant, artifacts_dir, django_capture_on_commit_callbacks
):
    sessions = "/api/v1/adk/apps/notes/users/ann/sessions/"
    assert api.post(sessions, {"session_id": "trip"}, format="json").status_code == 201
    note = {"filename": "note.txt", "session_id": "trip", "artifact": {"text": "passport 1234"}}
    assert api.post(A, note, format="json").status_code == 201
    assert save(api).status_code == 201  # the user's, in every session: user data, kept
    long_ago = timezone.now() - timedelta(days=10)
    Session.objects.filter(session_id="trip").update(ended_at=long_ago, updated_at=long_ago)
    retention.retention_policy_save(tenant=tenant, delete_ended_after_days=1)
    with django_capture_on_commit_callbacks(execute=True):
        retention.retention_apply(tenant=tenant)
    assert not Session.objects.filter(session_id="trip").exists()
    assert list(Artifact.objects.values_list("filename", flat=True)) == ["user:scan.png"]
    assert files_in(artifacts_dir) == [Artifact.objects.get().content]


def test_the_subject_export_lists_every_version_with_its_bytes(api, tenant, artifacts_dir):
    assert save(api, data=b"\x00\xffbytes").status_code == 201
    note = {"filename": "note.txt", "session_id": "s1", "artifact": {"text": "hi"}, "custom_metadata": {"k": 1}}
    assert api.post(A, note, format="json").status_code == 201
    [subject] = subject_export(subjects=[(tenant, "ann")])["subjects"]
    exported = {(a["session_id"], a["filename"], a["version"]): a for a in subject["artifacts"]}
    assert set(exported) == {(None, "user:scan.png", 0), ("s1", "note.txt", 0)}
    assert base64.b64decode(exported[None, "user:scan.png", 0]["artifact"]["inline_data"]["data"]) == b"\x00\xffbytes"
    assert exported["s1", "note.txt", 0]["artifact"] == {"text": "hi"}
    assert exported["s1", "note.txt", 0]["custom_metadata"] == {"k": 1}


def test_the_admin_lists_name_version_and_size_never_the_bytes(api, admin_client, artifacts_dir):
    assert save(api, data=b"SECRET-BYTES").status_code == 201
    listing = admin_client.get("/admin/userdata_app/artifact/").content.decode()
    assert "user:scan.png" in listing and "SECRET-BYTES" not in listing
    assert base64.b64encode(b"SECRET-BYTES").decode() not in listing
    artifact = Artifact.objects.get()
    page = admin_client.get(f"/admin/userdata_app/artifact/{artifact.pk}/change/").content.decode()
    assert "image/png" in page and "SECRET-BYTES" not in page and artifact.content not in page


# --- The S3 path: moto's server, on this helper's port ----------------------------------------------

S3_PORT = 28201  # below the kernel's ephemeral range, so no client socket holds it


@pytest.fixture
def s3_bucket(settings, monkeypatch):
    moto_server = pytest.importorskip("moto.server")
    import boto3

    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", S3_PORT)) == 0:
            pytest.fail(f"port {S3_PORT} is taken: the moto server needs it")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=S3_PORT)
    server.start()
    endpoint = f"http://127.0.0.1:{S3_PORT}"
    for name, value in (("AWS_ACCESS_KEY_ID", "test"), ("AWS_SECRET_ACCESS_KEY", "test")):
        monkeypatch.setenv(name, value)
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    client.create_bucket(Bucket="artifacts")
    options = {
        "bucket_name": "artifacts",
        "endpoint_url": endpoint,
        "region_name": "us-east-1",
        "file_overwrite": False,
    }
    settings.STORAGES = {
        **settings.STORAGES,
        "artifacts": {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": options},
    }
    try:
        yield client, server
    finally:
        server.stop()


def bucket_keys(client) -> list[str]:
    return sorted(item["Key"] for item in client.list_objects_v2(Bucket="artifacts").get("Contents", []))


def test_in_an_s3_bucket_saved_loaded_erased_and_a_down_bucket_is_a_503(
    api, tenant, s3_bucket, django_capture_on_commit_callbacks
):
    client, server = s3_bucket
    assert storages["artifacts"].__class__.__name__ == "S3Storage"
    assert save(api, data=b"in the bucket").status_code == 201
    [key] = bucket_keys(client)
    assert key == Artifact.objects.get().content  # a random name, nothing of the person
    assert client.get_object(Bucket="artifacts", Key=key)["Body"].read() == b"in the bucket"
    loaded = api.get(A + "load/", {"filename": "user:scan.png"}).json()["artifact"]
    assert base64.b64decode(loaded["inline_data"]["data"]) == b"in the bucket"
    request = verified_request(subjects=[(tenant, "ann")], scope=ErasureRequest.Scope.EVERYTHING)
    with django_capture_on_commit_callbacks(execute=True):
        erasure.erasure_execute(request=request, actor=None)
    assert bucket_keys(client) == []  # erased from the bucket
    server.stop()  # the bucket unreachable
    assert_error(save(api), 503, "unavailable")
    assert not Artifact.objects.exists()
