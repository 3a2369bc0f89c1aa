#!/usr/bin/env python3
"""Client side of bench/webhooks.sh: small downloads in a session whose delegate is nginx, and the
time from each transfer's end to the arrival of its `task.completed` webhook.

nginx is both the origin and the receiver (`POST /webhook` answers 204), and logs each request
with `$msec` — written after the response went out, millisecond resolution — so both ends of the
measurement come from one clock, and the receiver costs next to nothing. The transfer's end is
taken twice:
  origin  nginx's `$msec` for the download: the whole path — transferd noticing the end, the file's
          fsync and rename, the store commit, the delivery;
  task    the task's `completed_at` (transferd's clock, the same machine's): the delivery alone.

Usage: webhooks.py --api URL --token T --origin URL --access-log FILE --dest DIR
                   [--count 1000] [--rate 100] [--burst] [--label NAME]
  paced (default): one POST per download at --rate a second, every event pushed (the delegate's
                   default): four or five webhooks a download, in order;
  --burst:         all downloads in one tasks:batch, only `task.completed` pushed: how long one
                   session's in-order delivery queue gets when they all end together.
Prints: label count p50 p90 p99 max (ms, from the origin) p50 p90 p99 max (ms, from the task)
webhooks seconds. Exits 1 on any error.
"""
import argparse
import json
import os
import statistics
import sys
import time
import urllib.parse
from datetime import datetime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from drive import API, fail  # noqa: E402  (downloads.sh's client)


def encode(document):
    return json.dumps(document).encode()


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def seconds(rfc3339):
    return datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()


def access_log(path, label):
    """nginx's `$msec $request_uri $http_webhook_id` lines → ({download number: end}, {event id: arrival})."""
    ends, arrivals = {}, {}
    with open(path) as f:
        for line in f:
            msec, uri, hook = line.split()
            if uri == "/webhook":
                arrivals.setdefault(hook, float(msec))  # the first arrival: a retry would be later
                continue
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(uri).query)
            if query.get("run") == [label]:
                ends[int(query["n"][0])] = float(msec)
    return ends, arrivals


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--api", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--origin", required=True, help="nginx: /small.bin and POST /webhook")
    parser.add_argument("--access-log", required=True)
    parser.add_argument("--dest", required=True, help="an --allow-path directory for the files")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--burst", action="store_true")
    parser.add_argument("--label", default="run")
    args = parser.parse_args()

    api = API(args.api, args.token, timeout=60)
    session = f"/v1/sessions/bench.webhooks.{args.label}"
    delegate = {"url": f"{args.origin}/webhook"}
    if args.burst:
        delegate["events"] = ["task.completed"]
    api.call("PUT", session, encode({"mode": "background", "delegate": delegate}), expect=(201,))
    url = f"{args.origin}/small.bin?run={args.label}&n="
    tasks = [{"kind": "download", "id": f"d{i}", "request": {"url": f"{url}{i}"},
              "download": {"destination": f"{args.dest}/{args.label}-{i}.bin"}} for i in range(args.count)]
    started = time.monotonic()
    if args.burst:
        api.call("POST", f"{session}/tasks:batch", encode({"tasks": tasks}), expect=(201,))
    else:
        for i, task in enumerate(tasks):
            delay = started + i / args.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            api.call("POST", f"{session}/tasks", encode(task), expect=(201,))

    # Done when every task completed and every event was delivered (delivered counts as acknowledged).
    deadline = time.monotonic() + 120 + args.count / args.rate
    while True:
        state = api.json("GET", session)
        if state["tasks"]["completed"] == args.count and state["pending_events"] == 0:
            break
        if time.monotonic() > deadline:
            fail(f"not done in time: {state['tasks']}, {state['pending_events']} events pending")
        time.sleep(0.2)
    elapsed = time.monotonic() - started

    journal, after = [], 0
    while page := api.json("GET", f"{session}/events?after={after}&limit=1000")["events"]:
        journal += page
        after = page[-1]["seq"]
    completions = [e for e in journal if e["type"] == "task.completed"]
    failed = [e["task"] for e in completions if e["data"]["error"]]
    if failed or len(completions) != args.count:
        fail(f"{len(completions)} completions, {len(failed)} failed, e.g. {failed[:3]}")
    ends, arrivals = access_log(args.access_log, args.label)
    hooks = sum(1 for e in journal if e["id"] in arrivals)
    from_origin, from_task = [], []
    for event in completions:
        n = int(event["task"][1:])
        if n not in ends or event["id"] not in arrivals:
            fail(f"download {n} or its webhook {event['id']} is not in nginx's log")
        from_origin.append((arrivals[event["id"]] - ends[n]) * 1000)
        from_task.append((arrivals[event["id"]] - seconds(event["data"]["completed_at"])) * 1000)

    def figures(values):
        return " ".join(f"{v:.1f}" for v in (statistics.median(values), percentile(values, 90),
                                              percentile(values, 99), max(values)))

    print(f"{args.label} {len(from_origin)} {figures(from_origin)} {figures(from_task)} {hooks} {elapsed:.1f}")


if __name__ == "__main__":
    main()
