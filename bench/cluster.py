#!/usr/bin/env python3
"""Driver of bench/cluster.sh's takeover phase: how long a replica killed with `kill -9` leaves its
transfers stopped before another replica continues them (bar: lease timeout + 5 s), and that they
then complete with the right bytes.

  takeover  Starts DOWNLOADS slow downloads (a local origin drips each at RATE bytes/s, so they run
            for about a minute) in a background session created through the first replica; once
            every one has moved, finds the replica whose sockets hold the most connections to the
            origin (the one running the transfers) and kills it with SIGKILL. The downloads it was
            running are those whose origin request ends right after the kill. Then it polls the
            surviving replicas every 100 ms until each of those tasks is `running` again with its
            progress moving, and reports the seconds from the kill (the slowest one is judged),
            with when the origin saw each continue and from which offset. Finally every download
            must complete with the origin's sha256, those taken over having continued with Range.

Prints the figures; exits 1 when a check fails (not when the bar is missed: it prints that).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Tests" / "integration"))

import requests  # noqa: E402

from support.origin import Origin  # noqa: E402

MiB = 1 << 20
POLL = 0.1


class Replicas:
    """The replicas' APIs with one token; `get` asks each survivor in turn and tolerates errors
    (a survivor may still be forwarding to the dead replica)."""

    def __init__(self, apis: list[str], token: str):
        self.apis = apis
        self.alive = list(apis)
        self.http = requests.Session()
        self.http.trust_env = False
        self.http.headers["Authorization"] = f"Bearer {token}"
        self.turn = 0
        self.errors = 0

    def call(self, method: str, api: str, path: str, **kwargs) -> requests.Response:
        return self.http.request(method, api + path, timeout=kwargs.pop("timeout", 5), **kwargs)

    def get(self, path: str) -> dict | None:
        self.turn += 1
        api = self.alive[self.turn % len(self.alive)]
        try:
            response = self.call("GET", api, path, timeout=2)
        except requests.RequestException:
            self.errors += 1
            return None
        if response.status_code != 200:
            self.errors += 1
            return None
        return response.json()


def origin_connections(pid: int, port: int) -> int:
    """Established TCP connections of process `pid` to 127.0.0.1:`port` (its socket inodes matched
    against the kernel's connection table)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[len("socket:["):-1])
    count = 0
    with open(f"/proc/{pid}/net/tcp") as table:
        next(table)
        for line in table:
            fields = line.split()
            remote_port, state, inode = int(fields[2].rsplit(":", 1)[1], 16), fields[3], fields[9]
            count += remote_port == port and state == "01" and inode in inodes
    return count


def start_downloads(replicas: Replicas, origin: Origin, session: str, count: int, size: int, rate: int) -> list[str]:
    first = replicas.apis[0]
    response = replicas.call("PUT", first, f"/v1/sessions/{session}", json={"mode": "background"})
    if response.status_code not in (200, 201):
        raise SystemExit(f"creating {session}: {response.status_code} {response.text[:300]}")
    ids = [f"slow{i}" for i in range(count)]
    tasks = [{"kind": "download", "id": tid, "request": {"url": origin.url(f"/bytes/{size}?seed={tid}&rate={rate}")}}
             for tid in ids]
    response = replicas.call("POST", first, f"/v1/sessions/{session}/tasks:batch", json={"tasks": tasks})
    if response.status_code != 201:
        raise SystemExit(f"tasks:batch: {response.status_code} {response.text[:300]}")
    deadline = time.monotonic() + 60
    for tid in ids:
        while True:
            task = replicas.call("GET", first, f"/v1/sessions/{session}/tasks/{tid}").json()
            if task["state"] == "running" and task["progress"]["bytes_received"] >= rate // 2:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"{tid} did not start within 60 s: {task}")
            time.sleep(POLL)
    return ids


def open_requests(origin: Origin) -> dict[str, object]:
    """The origin's requests still streaming, by seed (= task id)."""
    return {r.query["seed"]: r for r in origin.requests if r.path.startswith("/bytes/") and r.end_time is None}


def wait_until(predicate, timeout: float):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(POLL)
    return None


def takeover(args: argparse.Namespace) -> int:
    replicas = Replicas(args.api, args.token)
    size, rate = args.seconds * args.rate, args.rate
    session = f"bench.takeover.{os.getpid()}"
    failures = []
    with Origin() as origin:
        ids = start_downloads(replicas, origin, session, args.downloads, size, rate)
        held = [origin_connections(pid, origin.port) for pid in args.pid]
        victim = max(range(len(held)), key=held.__getitem__)
        if held[victim] == 0:
            raise SystemExit(f"no replica holds a connection to the origin (port {origin.port})")
        streaming = open_requests(origin)
        print(f"connections to the origin by replica: {held}; killing replica {victim + 1} "
              f"(pid {args.pid[victim]}) with SIGKILL", flush=True)
        killed_at = time.monotonic()
        os.kill(args.pid[victim], signal.SIGKILL)
        replicas.alive.remove(args.api[victim])
        paths = {tid: f"/v1/sessions/{session}/tasks/{tid}" for tid in ids}
        # Progress as the survivors see it right after the kill: what "moving again" is judged against.
        baseline = {}
        for tid in ids:
            task = wait_until(lambda tid=tid: replicas.get(paths[tid]), 10)
            baseline[tid] = task["progress"]["bytes_received"] if task else 0

        # The victim's downloads: their streaming requests end once the origin writes to a socket
        # the kernel closed with the process (within its next drip, 100 ms).
        time.sleep(max(0.0, killed_at + 2 - time.monotonic()))
        victims = sorted(seed for seed, record in streaming.items() if record.end_time is not None)
        print(f"downloads the killed replica was running: {len(victims)} of {len(ids)} ({', '.join(victims)})",
              flush=True)
        if not victims:
            failures.append("no download stopped with the killed replica")

        moved_after: dict[str, float] = {}
        deadline = killed_at + args.lease_timeout + 60
        while len(moved_after) < len(victims) and time.monotonic() < deadline:
            for tid in victims:
                if tid not in moved_after and (task := replicas.get(paths[tid])) and (
                        task["state"] == "completed" or
                        (task["state"] == "running" and task["progress"]["bytes_received"] > baseline[tid])):
                    moved_after[tid] = time.monotonic() - killed_at
            time.sleep(POLL)
        for tid in victims:
            resumed = next((r for r in origin.requests if r.query.get("seed") == tid and r.time > killed_at), None)
            seen = (f"origin asked again after {resumed.time - killed_at:.1f} s, "
                    f"Range {resumed.headers.get('Range') or 'none'}") if resumed else "origin not asked again"
            moved = f"{moved_after[tid]:.1f} s" if tid in moved_after else "never (lease timeout + 60 s)"
            print(f"  {tid}: progress moving on another replica after {moved} ({seen})", flush=True)
            if tid not in moved_after:
                failures.append(f"{tid} did not move again within lease timeout + 60 s")

        intact = 0
        for tid in ids:
            task = wait_until(lambda tid=tid: (t := replicas.get(paths[tid])) and t["state"] == "completed" and t,
                              args.seconds + args.lease_timeout + 120)
            if task and task["error"] is None and (task["result"] or {}).get("sha256") == Origin.expected_sha256(size, tid):
                intact += 1
            else:
                failures.append(f"{tid} did not complete with the origin's sha256: {task}")
        for tid in victims:
            later = [r for r in origin.requests if r.query.get("seed") == tid and r.time > killed_at]
            if not later or not all(r.headers.get("Range") and r.status == 206 for r in later):
                failures.append(f"{tid} was not continued with Range after the takeover")
        print(f"downloads: {intact} of {len(ids)} completed with the origin's sha256; "
              f"{replicas.errors} polls of the survivors failed", flush=True)

    bar = args.lease_timeout + 5
    if moved_after:
        slowest = max(moved_after.values())
        print(f"bar: takeover within lease timeout + 5 s ({bar:.0f} s): {slowest:.1f} s, "
              f"ratio {slowest / bar:.2f} ({'met' if slowest <= bar and len(moved_after) == len(victims) else 'NOT met'})")
    for failure in failures:
        print("FAILED: " + failure)
    return 1 if failures else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("takeover")
    t.add_argument("--api", action="append", required=True, help="each replica's base URL")
    t.add_argument("--pid", action="append", type=int, required=True, help="each replica's pid, in --api order")
    t.add_argument("--token", required=True)
    t.add_argument("--lease-timeout", type=float, required=True)
    t.add_argument("--downloads", type=int, default=4)
    t.add_argument("--rate", type=int, default=MiB, help="bytes per second the origin sends each download")
    t.add_argument("--seconds", type=int, default=60, help="how long each download runs at that rate")
    args = parser.parse_args()
    if len(args.api) != len(args.pid) or len(args.api) < 2:
        parser.error("give --api and --pid once per replica, for two replicas or more")
    return takeover(args)


if __name__ == "__main__":
    sys.exit(main())
