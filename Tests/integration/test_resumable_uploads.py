"""Resumable uploads (`upload.resumable`): against real origins speaking the IETF resumable upload
draft and tus 1.0.0 (support/resumable_origin.py), each rule a client follows — the 104's upload
resource, HEAD for the offset after a cut connection or a 5xx, PATCH for the rest, an offset that
moved back, a 409 with the right offset, a final answer with `Upload-Complete: ?1`, a resource the
origin lost — and a background upload that continues from the origin's offset after kill -9."""

from __future__ import annotations

import hashlib
import os

import pytest


from support.api import assert_problem, assert_success, create_session, create_task, post_task, wait_for, wait_task
from support.resumable_origin import ResumableOrigin

MiB = 1 << 20
QUICK_RETRIES = {"retry": {"backoff_initial_s": 0.05, "backoff_max_s": 0.2}}


def blob(td, data: bytes) -> str:
    response = td.post("/v1/blobs", data=data, headers={"Content-Type": "application/octet-stream"})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def upload(td, sid: str, url: str, data: bytes, method: str = "PUT", **upload_fields) -> dict:
    return create_task(td, sid, {"kind": "upload", "request": {"url": url, "method": method},
                                 "upload": {"from_blob": blob(td, data), **upload_fields}})


def run_upload(td, origin: ResumableOrigin, data: bytes, path: str = "/files/a", mode: str = "default",
               **upload_fields) -> dict:
    sid = create_session(td, mode=mode, configuration=QUICK_RETRIES)
    task = upload(td, sid, origin.url + path, data, **upload_fields)
    return wait_task(td, sid, task["id"])


def assert_received_whole(origin: ResumableOrigin, data: bytes) -> None:
    completed = origin.snapshot()["completed"]
    assert completed and completed[-1] == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def test_ietf_upload_offers_resumption_on_its_own_request(transferd, ietf):
    data = os.urandom(300_000)
    done = assert_success(run_upload(transferd, ietf, data))
    assert ietf.methods() == ["PUT"]
    headers = ietf.snapshot()["requests"][0][2]
    assert headers["Upload-Complete"] == "?1" and headers["Upload-Draft-Interop-Version"] == "8"
    assert headers["Upload-Length"] == str(len(data))
    assert done["response"]["status"] == 200 and done["progress"]["bytes_sent"] == len(data)
    assert_received_whole(ietf, data)


def test_ietf_connection_cut_at_half_continues_with_head_and_patch(transferd, ietf):
    data = os.urandom(4 * MiB)
    ietf.set_faults(cut_at=2 * MiB)
    done = assert_success(run_upload(transferd, ietf, data))
    assert ietf.methods() == ["PUT", "HEAD", "PATCH"]
    patch = ietf.snapshot()["requests"][2][2]
    assert patch["Content-Type"] == "application/partial-upload" and int(patch["Upload-Offset"]) >= 2 * MiB
    assert_received_whole(ietf, data)
    assert ietf.snapshot()["bytes_received"] <= len(data) + 256 * 1024
    assert done["progress"]["bytes_sent"] == len(data)


def test_ietf_5xx_asks_for_the_offset_and_appends(transferd, ietf):
    data = os.urandom(2 * MiB)
    ietf.set_faults(fail_at=MiB)
    assert_success(run_upload(transferd, ietf, data))
    assert ietf.methods() == ["PUT", "HEAD", "PATCH"]
    assert_received_whole(ietf, data)


def test_ietf_offset_that_moved_backwards_is_where_the_append_starts(transferd, ietf):
    data = os.urandom(2 * MiB)
    ietf.set_faults(cut_at=MiB, rewind_to=100_000)
    assert_success(run_upload(transferd, ietf, data))
    assert ietf.methods() == ["PUT", "HEAD", "PATCH"]
    assert ietf.snapshot()["requests"][2][2]["Upload-Offset"] == "100000"
    assert_received_whole(ietf, data)


def test_ietf_409_carries_the_right_offset(transferd, ietf):
    data = os.urandom(2 * MiB)
    ietf.set_faults(cut_at=MiB, conflict=True)
    assert_success(run_upload(transferd, ietf, data))
    # The 409's Upload-Offset is taken as it is: no second HEAD.
    assert ietf.methods() == ["PUT", "HEAD", "PATCH", "PATCH"]
    assert_received_whole(ietf, data)


def test_ietf_final_error_with_upload_complete_is_not_resumed(transferd, ietf):
    data = os.urandom(100_000)
    ietf.set_faults(final_status=500)
    done = run_upload(transferd, ietf, data)
    assert done["response"]["status"] == 500
    assert ietf.methods() == ["PUT"]


def test_ietf_resource_the_origin_lost_starts_over_from_zero(transferd, ietf):
    data = os.urandom(2 * MiB)
    ietf.set_faults(cut_at=MiB, lose=True)
    assert_success(run_upload(transferd, ietf, data))
    assert ietf.methods() == ["PUT", "HEAD", "PUT"]
    assert_received_whole(ietf, data)


@pytest.mark.parametrize("method", ["PUT", "POST"])
def test_background_upload_continues_from_the_origins_offset_after_kill9(transferd, ietf, method):
    size = 8 * MiB
    data = os.urandom(size)
    ietf.set_faults(read_rate=2 * MiB)
    sid = create_session(transferd, mode="background", configuration=QUICK_RETRIES)
    # A POST is not sent twice, but the HEAD that continues it is safe to send after a restart.
    task = upload(transferd, sid, ietf.url + "/files/k", data, method=method)
    wait_for(lambda: any(u["offset"] >= size // 2 for u in ietf.snapshot()["uploads"].values()), timeout=30,
             message="half the upload at the origin")
    transferd.kill9()
    ietf.set_faults(read_rate=None)
    transferd.restart()
    assert_success(wait_task(transferd, sid, task["id"]))
    # The origin may still be reading what the dead connection had buffered when the HEAD comes:
    # an append at the offset the HEAD gave is then answered 409 with the offset it has by then.
    methods = ietf.methods()
    assert methods[:3] == [method, "HEAD", "PATCH"] and set(methods[3:]) <= {"PATCH"}, methods
    assert_received_whole(ietf, data)
    # What went twice is at most what was in flight when the process died.
    assert ietf.snapshot()["bytes_received"] <= size * 1.05


def test_tus_cut_upload_continues_with_head_and_patch(transferd, tus):
    data = os.urandom(4 * MiB)
    tus.set_faults(cut_at=2 * MiB)
    done = assert_success(run_upload(transferd, tus, data, path="/files", resumable="tus"))
    assert tus.methods() == ["POST", "PATCH", "HEAD", "PATCH"]
    for _, _, headers in tus.snapshot()["requests"]:
        assert headers["Tus-Resumable"] == "1.0.0"
    create, first, _, second = tus.snapshot()["requests"]
    assert create[2]["Upload-Length"] == str(len(data)) and first[2]["Content-Type"] == "application/offset+octet-stream"
    assert int(second[2]["Upload-Offset"]) >= 2 * MiB
    assert_received_whole(tus, data)
    assert tus.snapshot()["bytes_received"] <= len(data) + 256 * 1024
    assert done["progress"]["bytes_sent"] == len(data)


def test_off_sends_a_plain_upload(transferd, ietf):
    data = os.urandom(100_000)
    assert_success(run_upload(transferd, ietf, data, resumable="off"))
    assert ietf.methods() == ["PUT"]
    assert "Upload-Complete" not in ietf.snapshot()["requests"][0][2]


def test_auto_against_a_plain_origin_is_a_plain_upload(transferd):
    data = os.urandom(2 * MiB)
    with ResumableOrigin("plain") as plain:
        plain.set_faults(cut_at=MiB)
        done = assert_success(run_upload(transferd, plain, data))
        # No upload resource was offered: the cut upload went again whole, as a plain one does.
        assert plain.methods() == ["PUT", "PUT"]
        assert_received_whole(plain, data)
        assert done["progress"]["bytes_sent"] == len(data)


def test_unknown_resumable_value_is_refused(transferd):
    sid = create_session(transferd)
    response = post_task(transferd, sid, {"kind": "upload", "request": {"url": "http://127.0.0.1:9/x", "method": "PUT"},
                                          "upload": {"from_blob": blob(transferd, b"x"), "resumable": "sometimes"}})
    assert_problem(response, 422, field="upload.resumable")
