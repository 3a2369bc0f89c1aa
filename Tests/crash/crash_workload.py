"""The crash harness's workload (crash_harness.py): the sessions it uses, the tasks transferd
acknowledged, and the thread that submits a random mix of work until told to stop or until
transferd stops answering."""

from __future__ import annotations

import os
import random
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import requests

from support.api import task_path, tasks_path
from support.origin import Origin

if TYPE_CHECKING:
    from crash_harness import Harness

MiB = 1 << 20
RETRY = {"retry": {"backoff_initial_s": 0.2, "backoff_max_s": 1}}
# identifier → (mode, with a delegate)
SESSIONS = {
    "crash.bg": ("background", False),
    "crash.bg.hook": ("background", True),
    "crash.df": ("default", False),
    "crash.df.hook": ("default", True),
    "crash.eph": ("ephemeral", False),
}
# Quick webhook retries, and enough of them that a delegate is never given up on.
WEBHOOK_SCHEDULE = ",".join(["0"] + ["300ms"] * 60)


@dataclass
class Submitted:
    """A task transferd acknowledged with 201."""

    session: str
    id: str
    kind: str
    round: int
    sha256: str | None = None  # a download's expected content
    size: int | None = None
    cancelled: bool = False
    # A slow small download's seed: what finds its requests at the origin (`Harness.check_progress_kept`).
    slow_seed: str | None = None
    # A POST data task's request id at the origin's /once (`Harness.check_sent_once`).
    once_id: str | None = None

    @property
    def mode(self) -> str:
        return SESSIONS[self.session][0]


@dataclass
class Replay:
    """A task creation acknowledged under an Idempotency-Key: the request and the reply's bytes."""

    session: str
    key: str
    body: dict
    status: int
    reply: bytes


@dataclass
class Report:
    rounds: int = 0
    submitted: int = 0
    findings: list[str] = field(default_factory=list)

    def finding(self, text: str) -> None:
        print(f"FINDING: {text}", flush=True)
        self.findings.append(text)


class Workload(threading.Thread):
    """Submits random work until told to stop or until transferd stops answering."""

    def __init__(self, harness: "Harness", round_number: int, rng: random.Random):
        super().__init__(daemon=True, name=f"workload-{round_number}")
        self.h = harness
        self.round = round_number
        self.rng = rng
        self.stop = threading.Event()
        self.submitted: list[Submitted] = []
        self.replays: list[Replay] = []
        self._n = 0

    def run(self) -> None:
        actions = [(self.download, 5), (self.slow_small_download, 2), (self.batch, 1), (self.upload, 2), (self.data, 2),
                   (self.once_post, 2), (self.keyed_download, 1), (self.cancel_and_resume, 1), (self.suspend_and_resume, 1)]
        choices = [a for a, weight in actions for _ in range(weight)]
        try:
            while not self.stop.is_set():
                self.rng.choice(choices)(self.rng.choice(list(SESSIONS)))
        except (requests.RequestException, OSError):
            pass  # transferd was killed under us

    def _seed(self) -> str:
        self._n += 1
        return f"r{self.round}-{self._n}"

    def _create(self, sid: str, bodies: list[dict], expected: list[tuple[str | None, int | None]]) -> list[Submitted]:
        td = self.h.td
        if len(bodies) == 1:
            response = td.post(tasks_path(sid), json=bodies[0])
            tasks = [response.json()] if response.status_code == 201 else []
        else:
            response = td.post(tasks_path(sid) + ":batch", json={"tasks": bodies}, timeout=30)
            tasks = response.json()["tasks"] if response.status_code == 201 else []
        if response.status_code != 201 and not self.h.expected_refusal(sid, response):
            self.h.report.finding(f"creation refused: {response.status_code} {response.text[:300]}")
        made = [Submitted(sid, task["id"], task["kind"], self.round, sha, size) for task, (sha, size) in zip(tasks, expected)]
        self.submitted += made
        return made

    def _download_body(self, sizes: list[int]) -> tuple[dict, tuple[str, int]]:
        size, seed = self.rng.choice(sizes), self._seed()
        path = f"/bytes/{size}?seed={seed}"
        if size >= MiB and self.rng.random() < 0.7:
            # Still running when the kill comes; 20 MiB is written with O_DIRECT from chunks.
            rates = [MiB, 4 * MiB] if size < 16 * MiB else [4 * MiB, 16 * MiB]
            path += f"&rate={self.rng.choice(rates)}"
        body: dict[str, Any] = {"kind": "download", "request": {"url": self.h.origin.url(path)}}
        if self.rng.random() < 0.2:
            body["download"] = {"destination": str(self.h.root / f"{seed}.bin")}
        return body, (Origin.expected_sha256(size, seed), size)

    def download(self, sid: str) -> None:
        body, expected = self._download_body([1000, 40_000, 400_000, MiB, 3 * MiB, 20 * MiB])
        self._create(sid, [body], [expected])

    def slow_small_download(self, sid: str) -> None:
        """Under 1 MiB from an origin at 128–256 KiB/s: named once it ran a second, so a kill after
        that must not make it start over."""
        size, seed = self.rng.randint(200_000, MiB - 1), self._seed()
        url = self.h.origin.url(f"/bytes/{size}?seed={seed}&rate={self.rng.choice([128, 256]) * 1024}")
        for made in self._create(sid, [{"kind": "download", "request": {"url": url}}], [(Origin.expected_sha256(size, seed), size)]):
            made.slow_seed = seed

    def batch(self, sid: str) -> None:
        made = [self._download_body([500, 5000, 50_000]) for _ in range(self.rng.randint(5, 30))]
        self._create(sid, [b for b, _ in made], [e for _, e in made])

    def upload(self, sid: str) -> None:
        url = self.h.origin.url("/upload/" + self._seed())
        if self.rng.random() < 0.5:
            body = {"kind": "upload", "request": {"url": url, "body": {"text": "x" * self.rng.randint(1, 300_000)}}}
        else:
            blob = self.h.td.post("/v1/blobs", data=os.urandom(self.rng.randint(1, 2 * MiB)),
                                  headers={"Content-Type": "application/octet-stream"})
            if blob.status_code != 201:
                return self.h.report.finding(f"blob refused: {blob.status_code} {blob.text[:300]}")
            body = {"kind": "upload", "request": {"url": url}, "upload": {"from_blob": blob.json()["id"]}}
        self._create(sid, [body], [(None, None)])

    def data(self, sid: str) -> None:
        body = {"kind": "data", "request": {"url": self.h.origin.url(f"/bytes/{self.rng.randint(1, 100_000)}")}}
        self._create(sid, [body], [(None, None)])

    def once_post(self, sid: str) -> None:
        """A POST the origin counts by request id, some held unanswered for a while (in flight at the
        kill): whatever happens, the origin reads its body at most once."""
        seed = self._seed()
        hold = f"?hold={self.rng.choice([0, 0.3, 1.5])}"
        body = {"kind": "data", "request": {"url": self.h.origin.url(f"/once/{seed}{hold}"), "method": "POST",
                                            "body": {"text": seed}}}
        for made in self._create(sid, [body], [(None, None)]):
            made.once_id = seed

    def keyed_download(self, sid: str) -> None:
        """A download created under an Idempotency-Key, replayed after the next restart
        (`Harness.check_replays`): the replay must be the first reply, byte for byte."""
        body, expected = self._download_body([1000, 400_000, 3 * MiB])
        key = "crash-" + self._seed()
        response = self.h.td.post(tasks_path(sid), json=body, headers={"Idempotency-Key": key})
        if response.status_code != 201:
            if not self.h.expected_refusal(sid, response):
                self.h.report.finding(f"keyed creation refused: {response.status_code} {response.text[:300]}")
            return
        task = response.json()
        self.submitted.append(Submitted(sid, task["id"], task["kind"], self.round, *expected))
        self.replays.append(Replay(sid, key, body, response.status_code, response.content))

    def _running_download(self, sid: str) -> Submitted | None:
        candidates = [s for s in self.submitted if s.session == sid and s.kind == "download" and not s.cancelled]
        return self.rng.choice(candidates) if candidates else None

    def cancel_and_resume(self, sid: str) -> None:
        """Cancel with resume data, then continue from it (when the task was still running)."""
        task = self._running_download(sid)
        if task is None:
            return
        reply = self.h.td.post(task_path(sid, task.id, "/cancel"), json={"produce_resume_data": True}, timeout=15)
        if reply.status_code != 200:
            if self.h.expected_refusal(sid, reply):
                return
            return self.h.report.finding(f"cancel {sid}/{task.id}: {reply.status_code} {reply.text[:300]}")
        done = reply.json()
        if (done.get("error") or {}).get("code") != "cancelled":
            return  # it had completed already
        task.cancelled = True
        token = done["error"]["resume_data"]
        if token:
            self._create(sid, [{"kind": "download", "resume_data": token}], [(task.sha256, task.size)])

    def suspend_and_resume(self, sid: str) -> None:
        task = self._running_download(sid)
        if task is None:
            return
        for action in ("suspend", "resume"):
            reply = self.h.td.post(task_path(sid, task.id, "/" + action), timeout=15)
            if reply.status_code != 200:
                if self.h.expected_refusal(sid, reply):
                    return
                return self.h.report.finding(f"{action} {sid}/{task.id}: {reply.status_code} {reply.text[:300]}")
