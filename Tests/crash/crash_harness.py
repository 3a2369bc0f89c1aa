#!/usr/bin/env python3
"""Crash harness: `kill -9` transferd at random moments under a mixed workload, start it again, and
check that nothing acknowledged was lost or corrupted (issue 6: whatever got a 2xx survives
`kill -9` at any moment, and the database passes `PRAGMA integrity_check` after it).

Each round starts transferd on the same data directory, re-attaches the sessions (one ephemeral,
recreated), submits a random mix of work — downloads (some slow, some to an `--allow-path`
destination), uploads from inline bodies and blobs, data tasks, batches; some cancelled with resume
data and continued from it, some suspended and resumed — across background, default and ephemeral
sessions, two of them with a webhook delegate to a real receiver, kills transferd with SIGKILL at a
random moment and runs `PRAGMA integrity_check` on its database. At the start of the next round
every task that got a 201 in a durable session must exist. A last start then runs to the end:
  - every background task completes (successfully, unless the harness cancelled it); default tasks
    complete (`interrupted` allowed);
  - every successful download has the origin's sha256, in its result and in the bytes on disk;
  - a POST data task's body reached the origin at most once (exactly once when it succeeded),
    though some were in flight at a kill;
  - a task creation under an Idempotency-Key, repeated after the next restart, gets the first
    reply byte for byte (and the journal stays numbered without gaps);
  - a slow small download that ran for over a second and a half before a kill was not fetched
    from zero again (background) and was interrupted with resume data (default);
  - each durable session's journal is numbered without gaps and holds exactly one `task.completed`
    for each completed task;
  - each delegate received every journaled event at least once, first deliveries in seq order.

    python3 Tests/crash/crash_harness.py --rounds 200 [--seed N] [--keep]

`make test` runs a short form through Tests/integration/test_crash_harness.py; `make crash` (with
`ROUNDS=`) the long one. Needs the release binary (`make build`, or TRANSFERD_BINARY).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

import requests  # noqa: E402

from support.api import session_path, tasks_path  # noqa: E402
from support.events import all_events  # noqa: E402
from support.origin import Origin  # noqa: E402
from support.receiver import WebhookReceiver  # noqa: E402
from support.transferd import Transferd  # noqa: E402

from crash_workload import MiB, SESSIONS, WEBHOOK_SCHEDULE, RETRY, Replay, Report, Submitted, Workload  # noqa: E402


class Harness:
    def __init__(self, workdir: Path, seed: int):
        self.rng = random.Random(seed)
        self.report = Report()
        self.root = workdir / "destinations"
        self.root.mkdir()
        self.origin = Origin().start()
        secret = "whsec_" + base64.b64encode(os.urandom(24)).decode()
        self.receiver = WebhookReceiver(secret=secret).start()
        self.secret = secret
        (workdir / "data").mkdir()
        self.td = self.service(workdir / "data")
        self.submitted: dict[tuple[str, str], Submitted] = {}
        self.verified: set[tuple[str, str]] = set()
        # Keyed creations of the last round, replayed after the restart that follows it.
        self.replays: list[Replay] = []

    def service(self, data_dir: Path) -> Transferd:
        """What the rounds start, kill and talk to: one transferd."""
        # Warnings only: request lines of hundreds of rounds would fill the memory of this process.
        return Transferd(*self.service_args(), data_dir=data_dir)

    def service_args(self) -> list[str]:
        return ["--allow-path", str(self.root), "--webhook-retry-schedule", WEBHOOK_SCHEDULE, "--log-level", "warning"]

    def close(self) -> None:
        self.td.close()
        self.receiver.stop()
        self.origin.stop()

    # MARK: rounds

    def attach_sessions(self) -> None:
        for sid, (mode, hook) in SESSIONS.items():
            body: dict[str, Any] = {"mode": mode, "configuration": RETRY}
            if hook:
                body["delegate"] = {"url": self.receiver.url, "secret": self.secret}
            response = self.td.put(session_path(sid), json=body)
            expected = self.expected_attach(mode)
            if response.status_code not in expected:
                self.report.finding(f"PUT {sid}: {response.status_code}, expected {expected}: {response.text[:300]}")

    def expected_attach(self, mode: str) -> set[int]:
        """What re-attaching a session answers: an ephemeral one did not survive the kill."""
        return {201} if mode == "ephemeral" or self.report.rounds == 0 else {200}

    def expected_refusal(self, sid: str, response: requests.Response) -> bool:
        """Whether the workload may be refused this way: never, as long as transferd answers."""
        return False

    def round(self) -> None:
        self.td.start() if self.td.process is None else self.td.restart()
        self.check_acknowledged_exist()
        self.attach_sessions()
        self.check_replays()
        if self.rng.random() < 0.3:
            self.receiver.respond_with(500, times=self.rng.randint(1, 3))
        workload = Workload(self, self.report.rounds + 1, random.Random(self.rng.random()))
        workload.start()
        time.sleep(self.rng.uniform(0.05, 2.0))
        self.td.kill9()
        workload.stop.set()
        workload.join(timeout=30)
        for task in workload.submitted:
            self.submitted[(task.session, task.id)] = task
        self.replays = workload.replays
        self.report.submitted += len(workload.submitted)
        self.report.rounds += 1
        self.check_database()

    def check_database(self) -> None:
        with sqlite3.connect(f"file:{self.td.data_dir / 'transferd.sqlite'}?mode=ro", uri=True) as db:
            result = db.execute("PRAGMA integrity_check").fetchall()
        db.close()
        if result != [("ok",)]:
            self.report.finding(f"round {self.report.rounds}: integrity_check: {result[:5]}")

    # MARK: checks

    def stored_tasks(self, sid: str) -> dict[str, dict]:
        tasks: dict[str, dict] = {}
        after = None
        while True:
            response = self.td.get(tasks_path(sid), params={"limit": 1000, **({"after": after} if after else {})})
            if response.status_code != 200:
                self.report.finding(f"listing {sid}: {response.status_code} {response.text[:300]}")
                return tasks
            page = response.json()
            tasks.update((t["id"], t) for t in page["tasks"])
            if not (after := page["next"]):
                return tasks

    def durable_sessions(self) -> list[str]:
        return [sid for sid, (mode, _) in SESSIONS.items() if mode != "ephemeral"]

    def check_acknowledged_exist(self) -> None:
        """Every task acknowledged in a durable session is still there."""
        if not self.submitted:
            return
        stored = {sid: self.stored_tasks(sid) for sid in self.durable_sessions()}
        for (sid, tid), task in self.submitted.items():
            if task.mode != "ephemeral" and tid not in stored[sid]:
                self.report.finding(f"lost: {sid}/{tid} ({task.kind}, acknowledged in round {task.round})")
        self.check_completed_files(stored)

    def check_completed_files(self, stored: dict[str, dict[str, dict]]) -> None:
        """A completed download is the origin's content, in its result and on disk (once per task)."""
        for sid, tasks in stored.items():
            for tid, task in tasks.items():
                submitted = self.submitted.get((sid, tid))
                if (sid, tid) in self.verified or submitted is None or submitted.sha256 is None:
                    continue
                if task["state"] != "completed" or task["error"] is not None:
                    continue
                self.verified.add((sid, tid))
                result = task["result"]
                if (result["sha256"], result["size"]) != (submitted.sha256, submitted.size):
                    self.report.finding(f"corrupt result {sid}/{tid}: {result}, expected {submitted.sha256} {submitted.size}")
                elif file_sha256(result["location"]) != submitted.sha256:
                    self.report.finding(f"corrupt file {sid}/{tid} at {result['location']}")

    def check_replays(self) -> None:
        """The keyed creations of the round before this restart, repeated: each gets its first
        reply, byte for byte (an ephemeral session's are gone with it, and not asked)."""
        for replay in self.replays:
            if SESSIONS[replay.session][0] == "ephemeral":
                continue
            again = self.td.post(tasks_path(replay.session), json=replay.body, headers={"Idempotency-Key": replay.key})
            if (again.status_code, again.content) != (replay.status, replay.reply):
                self.report.finding(f"replay of {replay.session} {replay.key}: {again.status_code} {again.text[:200]}, "
                                    f"first {replay.status} {replay.reply[:200]!r}")
        self.replays = []

    def finish(self, timeout: float) -> None:
        """A last start that runs to the end, then the end-state checks."""
        self.td.restart()
        self.attach_sessions()
        self.check_replays()
        deadline = time.monotonic() + timeout
        while True:
            stored = {sid: self.stored_tasks(sid) for sid in self.durable_sessions()}
            unfinished = [(sid, tid) for (sid, tid), s in self.submitted.items()
                          if s.mode != "ephemeral" and stored[sid].get(tid, {}).get("state", "completed") != "completed"]
            if not unfinished:
                break
            if time.monotonic() >= deadline:
                self.report.finding(f"{len(unfinished)} tasks never completed, e.g. {unfinished[:5]}")
                break
            time.sleep(0.5)
        self.check_acknowledged_exist()
        self.check_outcomes(stored)
        self.check_progress_kept(stored)
        self.check_sent_once(stored)
        for sid in self.durable_sessions():
            self.check_journal(sid, stored[sid], deadline)

    def check_outcomes(self, stored: dict[str, dict[str, dict]]) -> None:
        for (sid, tid), submitted in self.submitted.items():
            task = stored.get(sid, {}).get(tid)
            if task is None:
                continue
            code = (task["error"] or {}).get("code")
            allowed = {None, "cancelled"} if submitted.cancelled else {None}
            # A POST caught in flight by a kill is not sent again: it ends interrupted.
            if submitted.mode == "default" or submitted.once_id:
                allowed |= {"interrupted"}
            if code not in allowed:
                self.report.finding(f"{submitted.mode} task {sid}/{tid} ({task['kind']}) ended with {task['error']}")
            elif task["kind"] == "upload" and code is None and task["response"]["status"] != 201:
                self.report.finding(f"upload {sid}/{tid} answered {task['response']['status']}")

    def check_sent_once(self, stored: dict[str, dict[str, dict]]) -> None:
        """A POST's body reached the origin at most once, and exactly once when the task succeeded."""
        for (sid, tid), submitted in self.submitted.items():
            if submitted.once_id is None:
                continue
            bodies = len(self.origin.bodies(submitted.once_id))
            task = stored.get(sid, {}).get(tid)
            succeeded = task is not None and task["state"] == "completed" and task["error"] is None
            if bodies > 1 or (succeeded and bodies != 1):
                self.report.finding(f"{submitted.mode} POST {sid}/{tid}: its body reached the origin {bodies} times "
                                    f"({'succeeded' if succeeded else (task or {}).get('error')})")

    # What ran this long before a kill had a named partial (a second, plus the loop's sweep and
    # the head's flush, with margin).
    KEPT_AFTER_SECONDS = 1.5

    def check_progress_kept(self, stored: dict[str, dict[str, dict]]) -> None:
        """A slow small download's progress survives kill -9 once it ran a second: a background
        one's next request continues with Range, a default one is interrupted with resume data."""
        requests_by_seed: dict[str, list] = {}
        for record in self.origin.requests:
            if seed := record.query.get("seed"):
                requests_by_seed.setdefault(seed, []).append(record)
        for (sid, tid), submitted in self.submitted.items():
            if submitted.slow_seed is None or submitted.mode == "ephemeral" or submitted.cancelled:
                continue
            sent = sorted(requests_by_seed.get(submitted.slow_seed, []), key=lambda r: r.time)
            ran = [r for r in sent if r.bytes_sent > 0 and r.end_time is not None
                   and r.end_time - r.time >= self.KEPT_AFTER_SECONDS and r.bytes_sent < submitted.size]
            if submitted.mode == "background":
                for before, after in zip(sent, sent[1:]):
                    if before in ran and not after.headers.get("Range"):
                        self.report.finding(f"{sid}/{tid}: fetched from zero again after {before.bytes_sent} bytes in "
                                            f"{before.end_time - before.time:.1f} s")
            elif ran and sent[-1] in ran:
                task = stored.get(sid, {}).get(tid) or {}
                error = task.get("error") or {}
                if error.get("code") == "interrupted" and not error.get("resume_data"):
                    self.report.finding(f"{sid}/{tid}: interrupted without resume data after {sent[-1].bytes_sent} bytes")

    def check_journal(self, sid: str, tasks: dict[str, dict], deadline: float) -> None:
        events = all_events(self.td, sid)
        seqs = [e["seq"] for e in events]
        if seqs != list(range(1, len(seqs) + 1)):
            gaps = sorted(set(range(1, max(seqs, default=0) + 1)) - set(seqs))
            self.report.finding(f"{sid}: journal not numbered 1..N: gaps {gaps[:10]}, {len(seqs)} events")
        completions: dict[str, list[dict]] = {}
        for event in events:
            if event["type"] == "task.completed":
                completions.setdefault(event["task"], []).append(event)
        for tid, task in tasks.items():
            if task["state"] == "completed" and len(completions.get(tid, [])) != 1:
                summary = [(e["seq"], e["at"], (e["data"]["error"] or {}).get("code")) for e in completions.get(tid, [])]
                self.report.finding(f"{sid}/{tid}: {len(summary)} task.completed events (seq, at, error): {summary}")
        if not SESSIONS[sid][1]:
            return
        wanted = {e["id"]: e["seq"] for e in events}

        def delivered():
            firsts: dict[str, int] = {}
            for d in self.receiver.deliveries:
                if d.json and d.json.get("session") == sid and d.json["type"] != "task.progress":
                    firsts.setdefault(d.json["id"], d.json["seq"])
            return firsts

        while set(wanted) - set(delivered()) and time.monotonic() < deadline:
            time.sleep(0.5)
        firsts = delivered()
        missing = set(wanted) - set(firsts)
        if missing:
            self.report.finding(f"{sid}: {len(missing)} journaled events never delivered, seqs {sorted(wanted[m] for m in missing)[:10]}")
        order = list(firsts.values())
        if order != sorted(order):
            self.report.finding(f"{sid}: first deliveries out of seq order: {order[:40]}")
        invalid = [d for d in self.receiver.deliveries if d.valid is False]
        if invalid:
            self.report.finding(f"{len(invalid)} deliveries with a bad signature: {invalid[0].error}")


def file_sha256(path: str) -> str | None:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(MiB):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()


def run(rounds: int, seed: int, budget: float, finish_timeout: float, keep: bool = False,
        harness_class: type[Harness] = Harness) -> Report:
    """Runs up to `rounds` rounds (fewer when `budget` seconds run out), then the last start."""
    workdir = Path(tempfile.mkdtemp(prefix="transferd-crash-"))
    harness = harness_class(workdir, seed)
    began = time.monotonic()
    try:
        while harness.report.rounds < rounds and time.monotonic() - began < budget:
            harness.round()
            if harness.report.rounds % 10 == 0:
                print(f"round {harness.report.rounds}: {harness.report.submitted} tasks acknowledged, "
                      f"{len(harness.report.findings)} findings", flush=True)
        harness.finish(finish_timeout)
    except (requests.RequestException, OSError, RuntimeError) as error:
        # transferd stopped answering outside a planned kill: a crash, or a hang.
        td = harness.td
        status = f"exited with {td.process.poll()}" if td.process is not None and not td.running else "running"
        log = workdir / "transferd.log"
        log.write_text(td.output())
        harness.report.finding(f"round {harness.report.rounds + 1}: {type(error).__name__}: {error}; transferd {status}; "
                               f"its output is in {log}; the end of it:\n{td.output()[-3000:]}")
    finally:
        harness.close()
        if keep or harness.report.findings:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return harness.report


def main(harness_class: type[Harness] = Harness, description: str = __doc__) -> int:
    parser = argparse.ArgumentParser(description=description.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--seed", type=int, default=random.randrange(1 << 30))
    parser.add_argument("--budget", type=float, default=3600, help="seconds for the rounds")
    parser.add_argument("--finish-timeout", type=float, default=300)
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    args = parser.parse_args()
    print(f"seed {args.seed}", flush=True)
    report = run(args.rounds, args.seed, args.budget, args.finish_timeout, args.keep, harness_class)
    print(f"{report.rounds} rounds, {report.submitted} tasks acknowledged, {len(report.findings)} findings")
    for text in report.findings:
        print("  " + text)
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
