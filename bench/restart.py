#!/usr/bin/env python3
"""Driver of bench/restart.sh: restart time with many tasks stored, and partial downloads resuming
from their offset after the restart (bar: ready in under a second with 100,000 tasks).

Fills one data directory with TOTAL tasks through `tasks:batch` (background sessions):
  - completed: downloads from a port nothing listens on, one attempt each, so they complete at once
    (`cannot_connect_to_host`) without a network transfer each;
  - unfinished: downloads with `begin_at` a day ahead (scheduled: in memory, in the engine);
  - PARTIALS slow downloads from a local origin, stopped once each has a few hundred KiB.
Then, for SIGTERM and for SIGKILL: stop, start again, and time from the exec to the first 200 of
`/readyz` (polled every 2 ms). Then the partial downloads must complete with the right sha256, each
having asked the origin only for the rest (`Range` from its offset, answered 206).

Prints the figures; exits 1 when a check fails (not when the bar is missed: it prints that).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Tests" / "integration"))

import requests  # noqa: E402

from support.api import create_batch, create_session, download, wait_progress, wait_task  # noqa: E402
from support.origin import Origin  # noqa: E402
from support.transferd import Transferd, free_port  # noqa: E402

MiB = 1 << 20
BATCH = 5000


def fill(td: Transferd, origin: Origin, total: int, unfinished: int, partials: int) -> list[tuple[str, str, int, str]]:
    done_sid = create_session(td, "bench.completed", "background",
                              {"retry": {"max_attempts": 1}, "waits_for_connectivity": False})
    later_sid = create_session(td, "bench.scheduled", "background")
    partial_sid = create_session(td, "bench.partial", "background")
    refused = f"http://127.0.0.1:{free_port()}/nothing"
    completed = total - unfinished - partials
    began = time.monotonic()
    for start in range(0, completed, BATCH):
        create_batch(td, done_sid, [download(refused) for _ in range(min(BATCH, completed - start))], timeout=120)
    begin_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 86400))
    for start in range(0, unfinished, BATCH):
        create_batch(td, later_sid, [download(refused, begin_at=begin_at) for _ in range(min(BATCH, unfinished - start))],
                     timeout=120)
    # Every completed task is stored completed before the restart is measured.
    deadline = time.monotonic() + 600
    while (n := td.get(f"/v1/sessions/{done_sid}").json()["tasks"]["completed"]) < completed:
        if time.monotonic() > deadline:
            raise SystemExit(f"only {n} of {completed} tasks completed")
        time.sleep(0.5)
    # The slow downloads start last, so however long the rest took to fill, they are still
    # mid-way (16 MiB at 2 MiB/s: 8 s) when the first restart comes.
    size = 16 * MiB
    slow = [create_batch(td, partial_sid, [download(origin.url(f"/bytes/{size}?seed=p{i}&rate={2 * MiB}"))])[0]
            for i in range(partials)]
    for task in slow:
        wait_progress(td, partial_sid, task["id"], 256 * 1024, timeout=60)
    print(f"stored {total} tasks ({completed} completed, {unfinished} scheduled, {partials} partial downloads) "
          f"in {time.monotonic() - began:.1f} s", flush=True)
    return [(partial_sid, t["id"], size, f"p{i}") for i, t in enumerate(slow)]


def time_to_ready(td: Transferd) -> float:
    """Starts transferd and returns the seconds from the exec to the first 200 of /readyz."""
    td.spawn()
    began = time.monotonic()
    with requests.Session() as http:
        http.trust_env = False
        while True:
            try:
                if http.get(td.url("/readyz"), timeout=1).status_code == 200:
                    return time.monotonic() - began
            except requests.RequestException:
                pass
            if td.process.poll() is not None:
                raise SystemExit(f"transferd exited while starting:\n{td.output()[-2000:]}")
            if time.monotonic() - began > 60:
                raise SystemExit("not ready within 60 s")
            time.sleep(0.002)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--unfinished", type=int, default=20_000, help="of them, scheduled for tomorrow")
    parser.add_argument("--partials", type=int, default=8, help="of them, slow downloads caught mid-way")
    parser.add_argument("--runs", type=int, default=3, help="restarts per stop signal (median reported)")
    args = parser.parse_args()

    failures = []
    with Origin() as origin, Transferd(api_token="bench") as td:
        partials = fill(td, origin, args.tasks, args.unfinished, args.partials)
        results = {}
        for how in ("SIGTERM", "SIGKILL"):
            times = []
            for _ in range(args.runs):
                td.kill9() if how == "SIGKILL" else td.stop()
                times.append(time_to_ready(td))
            results[how] = sorted(times)[len(times) // 2]
            stored = td.get("/v1/stats").json()["tasks"]
            print(f"after {how}: ready in {results[how] * 1000:.0f} ms (median of {args.runs}: "
                  f"{', '.join(f'{t * 1000:.0f}' for t in times)} ms); tasks by state {stored}", flush=True)
            if sum(stored.values()) != args.tasks:
                failures.append(f"{sum(stored.values())} tasks stored after {how}, not {args.tasks}")
        # The partial downloads continue from their offset: the origin is asked for the rest only.
        resumed = []
        for sid, tid, size, seed in partials:
            done = wait_task(td, sid, tid, timeout=300)
            if done["error"] is not None or done["result"]["sha256"] != Origin.expected_sha256(size, seed):
                failures.append(f"partial download {tid}: {done['error'] or done['result']}")
        for record in origin.requests:
            if record.headers.get("Range"):
                resumed.append(int(record.headers["Range"][6:-1]))
                if record.status != 206:
                    failures.append(f"ranged request answered {record.status}")
        restarts = 2 * args.runs
        print(f"partial downloads: {len(partials)} completed with the right sha256 after {restarts} restarts; "
              f"{len(resumed)} requests continued from an offset (smallest {min(resumed, default=0)} bytes), "
              f"{sum(1 for r in origin.requests if not r.headers.get('Range'))} from zero")
        if len(resumed) < len(partials):
            failures.append("some partial downloads did not continue from their offset")
    for how, seconds in results.items():
        print(f"bar: restart with {args.tasks} tasks stored, ready in < 1 s after {how}: {seconds * 1000:.0f} ms "
              f"({'met' if seconds < 1 else 'NOT met'})")
    for failure in failures:
        print("FAILED: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
