"""The Python client openapi-python-client generates from openapi.yaml, used as a service team would:
generated without a warning into a temporary directory, then a whole flow run against a live
transferd with nothing but the generated functions and models — sessions of each mode with a
configuration and a delegate, re-attached; a download, an upload from a blob, a data task; waiting
and reading results, files and bodies; every list paged through; events read and acknowledged;
a download cancelled with resume data and resumed from it; a problem document read as a value.

The generator's version is pinned in scripts/install-deps.sh; its settings are
clients/python/openapi-python-client.yaml."""

from __future__ import annotations

import importlib
import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.api import wait_for
from support.origin import expected_bytes, expected_sha256
from support.transferd import REPO_ROOT

GENERATOR_CONFIG = REPO_ROOT / "clients" / "python" / "openapi-python-client.yaml"
PACKAGE = "transferd_client"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """Generates the client and imports it; fails on any warning the generator prints."""
    generator = shutil.which("openapi-python-client")
    if generator is None:
        pytest.fail("openapi-python-client is not installed: run scripts/install-deps.sh test", pytrace=False)
    root = tmp_path_factory.mktemp("python-client")
    result = subprocess.run([generator, "generate", "--path", str(REPO_ROOT / "openapi.yaml"),
                             "--config", str(GENERATOR_CONFIG), "--meta", "none",
                             "--output-path", str(root / PACKAGE)],
                            capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Warning" not in output and "WARNING" not in output, output
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def test_every_operation_of_the_document_is_generated(generated):
    import yaml
    spec = yaml.safe_load((REPO_ROOT / "openapi.yaml").read_text())
    package = Path(generated.__file__).parent
    modules = {path.stem for path in (package / "api").rglob("*.py")}
    for item in spec["paths"].values():
        for method, operation in item.items():
            if method in ("get", "put", "post", "delete", "patch", "head"):
                snake = "".join("_" + c.lower() if c.isupper() else c for c in operation["operationId"])
                assert snake in modules, f"{operation['operationId']} was not generated"


def test_the_generated_client_runs_the_whole_flow(generated, transferd, api_token, origin):
    from transferd_client import AuthenticatedClient
    from transferd_client.api.blobs import create_blob
    from transferd_client.api.events import acknowledge_events, list_deliveries, list_events
    from transferd_client.api.sessions import get_session, list_session_cookies, list_sessions, put_session
    from transferd_client.api.tasks import (cancel_task, create_task, create_tasks, get_task, get_task_body,
                                            get_task_file, list_tasks)
    from transferd_client.models import (BearerCredential, CancelRequest, DelegateSettings, EventAck, HeaderFields,
                                         Problem, SessionConfiguration, SessionConfigurationRetryType0, SessionPut,
                                         SessionPutModeType1, TaskBatch, TaskCreation, TaskCreationKind,
                                         TaskRequest, UploadFromBlob)
    from transferd_client.types import File

    client = AuthenticatedClient(base_url=transferd.base_url, token=api_token, raise_on_unexpected_status=True)

    def ok(response, status=200):
        assert response.status_code == status, response.content[:500]
        assert not isinstance(response.parsed, Problem), response.parsed
        return response.parsed

    def paged(call, items, after=None, **kwargs):
        """Every item of a list, one page at a time, following `next`."""
        found = []
        while True:
            page = ok(call(client=client, limit=1, **({"after": after} if after else {}), **kwargs))
            found += getattr(page, items)
            if page.next_ is None or not getattr(page, items):
                return found
            after = page.next_

    # Sessions of each mode, configured and with a delegate; a re-attach that names neither keeps both.
    configuration = SessionConfiguration(
        headers=HeaderFields.from_dict({"X-Flow": "generated"}),
        retry=SessionConfigurationRetryType0(max_attempts=2),
        credentials=[BearerCredential(host="127.0.0.1", scheme="bearer", token="s3cr3t")])
    sessions = {mode: f"com.example.generated.{mode.value}" for mode in SessionPutModeType1}
    for mode, sid in sessions.items():
        body = SessionPut(mode=mode, configuration=configuration, delegate=DelegateSettings(url=origin.url("/echo")))
        created = ok(put_session.sync_detailed(sid, client=client, body=body), 201)
        assert created.mode.value == mode.value and created.delegate.secret.startswith("whsec_")
        assert created.configuration.headers.additional_properties == {"X-Flow": "generated"}
        assert created.configuration.credentials[0].token == "<redacted>"
        reattached = ok(put_session.sync_detailed(sid, client=client, body=SessionPut(mode=mode)))
        assert reattached.configuration.retry.max_attempts == 2 and reattached.delegate.url == origin.url("/echo")
    sid = sessions[SessionPutModeType1.DEFAULT]
    assert ok(get_session.sync_detailed(sid, client=client)).identifier == sid
    assert {s.identifier for s in paged(list_sessions.sync_detailed, "sessions")} >= set(sessions.values())

    # A download, a data task and an upload from a blob; waited for, with their results.
    def create(kind, url, **members):
        return ok(create_task.sync_detailed(sid, client=client, body=TaskCreation(
            kind=kind, request=TaskRequest(url=url, **members.pop("request", {})), **members)), 201)

    def wait(task):
        done = ok(get_task.sync_detailed(sid, task.id, client=client, wait=20))
        assert done.state.value == "completed" and done.error is None, done
        return done

    download = wait(create(TaskCreationKind.DOWNLOAD, origin.url("/bytes/20000?seed=gen")))
    assert download.result.size == 20000 and download.result.sha256 == expected_sha256(20000, "gen")
    file = ok(get_task_file.sync_detailed(sid, download.id, client=client))
    assert file.payload.read() == expected_bytes(20000, "gen")
    data = wait(create(TaskCreationKind.DATA, origin.url("/bytes/300?seed=data")))
    assert ok(get_task_body.sync_detailed(sid, data.id, client=client)).payload.read() == expected_bytes(300, "data")
    blob = ok(create_blob.sync_detailed(client=client, body=File(payload=io.BytesIO(b"uploaded " * 100))), 201)
    assert blob.size == 900
    upload = wait(create(TaskCreationKind.UPLOAD, origin.url("/upload"), request={"method": "POST"},
                         upload=UploadFromBlob(from_blob=blob.id)))
    assert upload.request.body.blob == blob.id and upload.response.status == 201
    batch = ok(create_tasks.sync_detailed(sid, client=client, body=TaskBatch(tasks=[
        TaskCreation(kind=TaskCreationKind.DATA, request=TaskRequest(url=origin.url(f"/bytes/{n}"))) for n in (1, 2)])), 201)
    for task in batch.tasks:
        wait(task)
    listed = paged(list_tasks.sync_detailed, "tasks", identifier=sid)
    assert {t.id for t in listed} == {download.id, data.id, upload.id} | {t.id for t in batch.tasks}

    # A slow download cancelled with resume data, then resumed from it.
    slow = create(TaskCreationKind.DOWNLOAD, origin.url("/bytes/1048576?seed=resume&rate=100000"))
    wait_for(lambda: ok(get_task.sync_detailed(sid, slow.id, client=client)).progress.bytes_received > 0, timeout=20)
    cancelled = ok(cancel_task.sync_detailed(sid, slow.id, client=client, body=CancelRequest(produce_resume_data=True)))
    assert cancelled.error.code == "cancelled" and cancelled.error.resume_data, cancelled.error
    resumed = ok(create_task.sync_detailed(sid, client=client, body=TaskCreation(
        kind=TaskCreationKind.DOWNLOAD, resume_data=cancelled.error.resume_data)), 201)
    resumed = ok(get_task.sync_detailed(sid, resumed.id, client=client, wait=60))
    assert resumed.error is None and resumed.result.sha256 == expected_sha256(1048576, "resume"), resumed.error

    # Events, read a page at a time and acknowledged; the delegate's deliveries and the cookie jar.
    # (The delegate's deliveries acknowledge events too, so reading starts from the first.)
    events = paged(list_events.sync_detailed, "events", after="0", identifier=sid)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert {"task.created", "task.completed", "task.resumed_at_offset"} <= {e.type_ for e in events}
    acked = ok(acknowledge_events.sync_detailed(sid, client=client, body=EventAck(through=events[-1].seq)))
    assert acked.acked_through == events[-1].seq and acked.pending_events == 0
    wait_for(lambda: paged(list_deliveries.sync_detailed, "deliveries", identifier=sid), timeout=20)
    assert paged(list_session_cookies.sync_detailed, "cookies", identifier=sid) == []

    # A problem document, read as a typed value.
    problem = get_session.sync_detailed("com.example.generated.none", client=client).parsed
    assert isinstance(problem, Problem) and (problem.status, problem.code) == (404, "not_found"), problem
