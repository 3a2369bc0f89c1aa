"""Self-tests of the resumable upload origin (support/resumable_origin.py): each protocol and each
fault, driven over raw sockets so interim responses and cut connections are seen as they are."""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import subprocess
import sys
from pathlib import Path

import requests

from support.resumable_origin import INTEROP_VERSION, ResumableOrigin

BODY = bytes(range(256)) * 4096  # 1 MiB
IETF = {"Upload-Draft-Interop-Version": INTEROP_VERSION}
TUS = {"Tus-Resumable": "1.0.0"}


def exchange(origin: ResumableOrigin, method: str, target: str, headers: dict, body: bytes = b"",
             ) -> list[tuple[int, dict[str, str]]]:
    """Sends one request; returns every response head read (1xx included) until the final one or
    the connection's end."""
    sock = socket.create_connection(("127.0.0.1", origin.port), timeout=5)
    head = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}",
            *(f"{k}: {v}" for k, v in headers.items()), "", ""]
    heads: list[tuple[int, dict[str, str]]] = []
    try:
        sock.sendall("\r\n".join(head).encode() + body)
    except OSError:
        pass
    data = b""
    with sock:
        while True:
            try:
                piece = sock.recv(65536)
            except OSError:
                piece = b""
            data += piece
            while b"\r\n\r\n" in data:
                raw, data = data.split(b"\r\n\r\n", 1)
                lines = raw.decode().split("\r\n")
                fields = dict(line.split(": ", 1) for line in lines[1:])
                heads.append((int(lines[0].split()[1]), {k.lower(): v for k, v in fields.items()}))
                if heads[-1][0] >= 200:
                    return heads
            if not piece:
                return heads


def test_ietf_upload_announces_its_resource_in_a_104_and_completes(ietf):
    heads = exchange(ietf, "POST", "/files", {**IETF, "Upload-Complete": "?1"}, BODY)
    assert [status for status, _ in heads] == [104, 200]
    assert heads[0][1]["location"].startswith("/uploads/")
    assert heads[0][1]["upload-draft-interop-version"] == INTEROP_VERSION
    assert json.loads(requests.get(f"{ietf.url}/_stats").content)["completed"] == [
        {"size": len(BODY), "sha256": hashlib.sha256(BODY).hexdigest()}]


def test_ietf_cut_upload_resumes_with_head_and_patch(ietf):
    ietf.set_faults(cut_at=len(BODY) // 2)
    heads = exchange(ietf, "PUT", "/files/a", {**IETF, "Upload-Complete": "?1"}, BODY)
    assert [status for status, _ in heads] == [104]  # then the reset
    location = heads[0][1]["location"]
    offset = requests.head(ietf.url + location, headers=IETF)
    assert offset.status_code == 204 and offset.headers["Upload-Complete"] == "?0"
    at = int(offset.headers["Upload-Offset"])
    assert len(BODY) // 2 <= at < len(BODY)
    rest = requests.patch(ietf.url + location, data=BODY[at:], headers={
        **IETF, "Upload-Complete": "?1", "Upload-Offset": str(at), "Content-Type": "application/partial-upload"})
    assert rest.status_code == 200 and rest.json()["sha256"] == hashlib.sha256(BODY).hexdigest()
    assert ietf.snapshot()["bytes_received"] == len(BODY)


def test_ietf_faults_rewind_conflict_lose_and_fail(ietf):
    ietf.set_faults(fail_at=1000)
    heads = exchange(ietf, "POST", "/files", {**IETF, "Upload-Complete": "?1"}, BODY)
    assert [status for status, _ in heads] == [104, 503]
    location = heads[0][1]["location"]
    ietf.set_faults(rewind_to=10)
    assert requests.head(ietf.url + location).headers["Upload-Offset"] == "10"
    ietf.set_faults(conflict=True)
    patch = {"Upload-Complete": "?1", "Upload-Offset": "10", "Content-Type": "application/partial-upload"}
    conflict = requests.patch(ietf.url + location, data=BODY[10:], headers={**IETF, **patch})
    assert conflict.status_code == 409 and conflict.headers["Upload-Offset"] == "10"
    wrong = requests.patch(ietf.url + location, data=BODY[5:], headers={**IETF, **patch, "Upload-Offset": "5"})
    assert wrong.status_code == 409 and wrong.headers["Upload-Offset"] == "10"
    ietf.set_faults(lose=True)
    assert requests.head(ietf.url + location).status_code == 404
    assert requests.head(ietf.url + location).status_code == 404


def test_ietf_request_without_the_interop_version_is_a_plain_upload(ietf):
    heads = exchange(ietf, "POST", "/files", {"Upload-Complete": "?1"}, BODY)
    assert [status for status, _ in heads] == [200]


def test_tus_creation_head_patch_with_checksum(tus):
    options = requests.options(f"{tus.url}/files")
    assert options.headers["Tus-Version"] == "1.0.0" and "checksum" in options.headers["Tus-Extension"]
    assert requests.post(f"{tus.url}/files", headers={"Upload-Length": "10"}).status_code == 412
    created = requests.post(f"{tus.url}/files", headers={**TUS, "Upload-Length": str(len(BODY))})
    assert created.status_code == 201
    location = tus.url + created.headers["Location"]
    tus.set_faults(cut_at=len(BODY) // 2)
    patch = {**TUS, "Content-Type": "application/offset+octet-stream", "Upload-Offset": "0"}
    assert [s for s, _ in exchange(tus, "PATCH", created.headers["Location"], patch, BODY)] == []
    at = int(requests.head(location, headers=TUS).headers["Upload-Offset"])
    assert 0 < at < len(BODY)
    bad = base64.b64encode(hashlib.sha1(b"not it").digest()).decode()
    checked = {**patch, "Upload-Offset": str(at)}
    assert requests.patch(location, data=BODY[at:], headers={**checked, "Upload-Checksum": f"sha1 {bad}"}).status_code == 460
    good = base64.b64encode(hashlib.sha1(BODY[at:]).digest()).decode()
    done = requests.patch(location, data=BODY[at:], headers={**checked, "Upload-Checksum": f"sha1 {good}"})
    assert done.status_code == 204 and done.headers["Upload-Offset"] == str(len(BODY))
    assert tus.snapshot()["completed"][0]["sha256"] == hashlib.sha256(BODY).hexdigest()


def test_standalone_plain_origin_counts_bytes(tmp_path):
    script = Path(__file__).parent / "support" / "resumable_origin.py"
    process = subprocess.Popen([sys.executable, str(script), "--protocol", "plain", "--port", "0",
                                "--dir", str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        port = int(process.stdout.readline().split()[1].rsplit(":", 1)[1])
        url = f"http://127.0.0.1:{port}"
        assert requests.put(f"{url}/x", data=BODY).json()["size"] == len(BODY)
        assert requests.post(f"{url}/_control", json={"cut_at": 10}).status_code == 204
        assert requests.get(f"{url}/_stats").json()["bytes_received"] == len(BODY)
    finally:
        process.terminate()
        process.wait(timeout=5)
