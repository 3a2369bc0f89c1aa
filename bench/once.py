#!/usr/bin/env python3
"""What "a request goes out once per attempt" costs: N small POST data tasks (200-byte bodies) on
loopback, one `tasks:batch` of 100 at a time in an ephemeral session, against the test origin's
`/once/{id}` (which counts bodies per request id). For each binary given, in the order given, prints
the wall time from the first batch to the last completion, transferd's CPU over that span (its
/proc stat) and the connections the origin accepted; fails if any body arrived other than once.
Give the binaries several times, interleaved (A B A B …), and quote medians.

    python3 bench/once.py [--tasks 500] BINARY [BINARY …]
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "integration"))
from support.api import create_batch, create_session, get_task, wait_for  # noqa: E402
from support.origin import Origin  # noqa: E402
from support.transferd import Transferd  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def run(binary: str, tasks: int) -> tuple[float, float, int]:
    with Origin() as origin:
        td = Transferd(api_token="tdt_" + secrets.token_urlsafe(24), binary=binary).start()
        try:
            sid = create_session(td, mode="ephemeral")
            bodies = [{"kind": "data", "request": {"url": origin.url(f"/once/b{i}"), "method": "POST",
                                                   "body": {"text": "x" * 200}}} for i in range(tasks)]
            pid = td.process.pid
            cpu, start = cpu_seconds(pid), time.monotonic()
            ids = [t["id"] for k in range(0, tasks, 100) for t in create_batch(td, sid, bodies[k:k + 100])]
            for tid in ids:
                wait_for(lambda: get_task(td, sid, tid)["state"] == "completed", timeout=120, interval=0.02)
            wall, used = time.monotonic() - start, cpu_seconds(pid) - cpu
            sent = [len(origin.bodies(f"b{i}")) for i in range(tasks)]
            if sent != [1] * tasks:
                sys.exit(f"{binary}: bodies received other than once: {sorted(set(sent))}")
            return wall, used, origin.connections_opened
        finally:
            td.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()
    for binary in map(os.path.abspath, args.binaries):
        wall, cpu, connections = run(binary, args.tasks)
        print(f"{binary}  wall {wall:.2f} s  cpu {cpu:.2f} s  connections {connections}", flush=True)


if __name__ == "__main__":
    main()
