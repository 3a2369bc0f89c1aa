#!/usr/bin/env python3
"""Client side of bench/small.sh: what a small task costs transferd, against curl in the same run.

Standard library only; the API client and the CPU reading come from drive.py.

Subcommands:
  run      run a command (an anchor: curl --parallel, or curl then sync); print "wall_seconds
           cpu_seconds", the CPU being the command's own user + system time (wait4's rusage).
  history  BATCHES batches of the same list, each in a new background session through one
           tasks:batch: per batch, one line "batch tasks seconds cpu_seconds db_bytes wal_bytes
           rss_kib anon_kib" — transferd's CPU over the timed section (its /proc stat), the SQLite
           file and its WAL, and its resident memory after the batch. Every task is checked
           (completed, 200, size, sha256) and a sample of files hashed; the files are then removed
           (the tasks stay: history is what grows).
  burst    COUNT downloads in one tasks:batch of a session whose delegate (nginx) gets only
           task.completed, with delegate.max_in_flight N when N > 1: from each transfer's end
           (nginx's $msec for the download) to the arrival of its webhook (nginx's $msec for the
           POST). Prints "count p50 p90 p99 max span_ms in_order" (ms), or "unsupported" when
           transferd refuses max_in_flight.
  report   the table of figures, ratios and bars; exits 1 when a bar is missed.
"""
import argparse
import hashlib
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from drive import API, fail, list_all, read_list, thread_cpu, wait_all  # noqa: E402


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def size_or_zero(path):
    try:
        return os.path.getsize(path)
    except FileNotFoundError:
        return 0


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# --- run -----------------------------------------------------------------------------------------
def cmd_run(args):
    start = time.perf_counter()
    cpu = 0.0
    for command in args.command.split(" && "):  # "curl ... && sync": one after the other
        proc = subprocess.Popen(command, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        errors = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        if status != 0:
            fail(f"{command}: exit status {status}: {errors[-500:].decode(errors='replace')}")
        cpu += usage.ru_utime + usage.ru_stime
    print(f"{time.perf_counter() - start:.6f} {cpu:.6f}")


# --- history -------------------------------------------------------------------------------------
def cmd_history(args):
    items = read_list(args.list)
    api = API(args.api, args.token)
    config = {"max_concurrent_tasks": args.parallel, "max_connections_per_host": args.parallel}
    db = os.path.join(args.data, "transferd.sqlite")
    out = open(args.out, "a")
    for b in range(1, args.batches + 1):
        session = f"bench.small.history.{b:04d}"
        dest = os.path.join(args.dest, f"b{b:04d}")
        os.makedirs(dest, exist_ok=True)
        api.call("PUT", f"/v1/sessions/{session}",
                 json.dumps({"mode": "background", "configuration": config}).encode(), expect=(200, 201))
        body = json.dumps({"tasks": [{"kind": "download", "request": {"url": it["url"]},
                                      "download": {"destination": f"{dest}/{it['name']}"}} for it in items]}).encode()
        before = thread_cpu(args.pid)["total"]
        start = time.perf_counter()
        created = api.json("POST", f"/v1/sessions/{session}/tasks:batch", body, expect=(201,))["tasks"]
        wait_all(api, session, len(items), created[-1]["id"], time.monotonic() + 600)
        elapsed = time.perf_counter() - start
        cpu = (thread_cpu(args.pid)["total"] - before) / os.sysconf("SC_CLK_TCK")
        # Verification outside the timed section.
        expected = {f"{dest}/{it['name']}": it for it in items}
        tasks = list_all(api, session)
        if len(tasks) != len(items):
            fail(f"batch {b}: {len(tasks)} tasks, expected {len(items)}")
        for t in tasks:
            it = expected.get(t.get("download", {}).get("destination"))
            if (it is None or t["state"] != "completed" or t["error"] is not None or not t["result"]
                    or t["result"]["size"] != it["size"] or t["result"]["sha256"] != it["sha256"]):
                fail(f"batch {b}: task {t['id']} is not a good completion: {json.dumps(t)[:400]}")
        for it in random.Random(b).sample(items, min(4, len(items))):
            if sha256_file(f"{dest}/{it['name']}") != it["sha256"]:
                fail(f"batch {b}: {dest}/{it['name']} differs from the source")
        for it in items:
            os.unlink(f"{dest}/{it['name']}")
        os.rmdir(dest)
        line = (f"{b} {len(items)} {elapsed:.4f} {cpu:.3f} {size_or_zero(db)} {size_or_zero(db + '-wal')} "
                f"{status_kib(args.pid, 'VmRSS')} {status_kib(args.pid, 'RssAnon')}")
        out.write(line + "\n")
        out.flush()
        if b == 1 or b % args.every == 0 or b == args.batches:
            print(f"  batch {b:4}: {len(items) / elapsed:7.0f} files/s, cpu {cpu * 1000 / len(items):.3f} ms/task, "
                  f"db {size_or_zero(db) / 1e6:.1f} MB + wal {size_or_zero(db + '-wal') / 1e6:.1f} MB, "
                  f"RSS {status_kib(args.pid, 'VmRSS') / 1024:.1f} MiB", file=sys.stderr)


# --- burst ---------------------------------------------------------------------------------------
def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def cmd_burst(args):
    api = API(args.api, args.token, timeout=60)
    session = f"/v1/sessions/bench.small.burst.{args.label}"
    delegate = {"url": f"{args.origin}/webhook", "events": ["task.completed"]}
    if args.max_in_flight > 1:
        delegate["max_in_flight"] = args.max_in_flight
    body = json.dumps({"mode": "background", "configuration": {"max_concurrent_tasks": 64,
                                                                "max_connections_per_host": 64},
                       "delegate": delegate}).encode()
    api.conn.request("PUT", session, body=body, headers=api.headers)
    response = api.conn.getresponse()
    text = response.read()
    if response.status in (400, 422) and args.max_in_flight > 1:
        print(f"small.py: the delegate's max_in_flight is refused ({response.status}): "
              f"{text[:200].decode(errors='replace')}", file=sys.stderr)
        print("unsupported")
        return
    if response.status not in (200, 201):
        fail(f"PUT {session} -> {response.status}: {text[:300]!r}")
    url = f"{args.origin}/burst/s0000.bin?run={args.label}&n="
    tasks = [{"kind": "download", "id": f"d{i}", "request": {"url": f"{url}{i}"},
              "download": {"destination": f"{args.dest}/{args.label}-{i}.bin"}} for i in range(args.count)]
    started = time.monotonic()
    api.call("POST", f"{session}/tasks:batch", json.dumps({"tasks": tasks}).encode(), expect=(201,))
    deadline = started + 120
    while True:
        state = api.json("GET", session)
        if state["tasks"]["completed"] == args.count and state["pending_events"] == 0:
            break
        if time.monotonic() > deadline:
            fail(f"burst {args.label}: not done in time: {state['tasks']}, {state['pending_events']} events pending")
        time.sleep(0.1)
    journal, after = [], 0
    while page := api.json("GET", f"{session}/events?after={after}&limit=1000")["events"]:
        journal += page
        after = page[-1]["seq"]
    completions = {e["id"]: e for e in journal if e["type"] == "task.completed"}
    if len(completions) != args.count or any(e["data"]["error"] for e in completions.values()):
        fail(f"burst {args.label}: {len(completions)} completions (some failed?)")
    ends, arrivals = {}, []  # download number -> end; (arrival, event id) in the log's order
    with open(args.access_log) as f:
        for line in f:
            msec, uri, hook = line.split()
            if uri == "/webhook":
                if hook in completions:
                    arrivals.append((float(msec), hook))
                continue
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(uri).query)
            if query.get("run") == [args.label]:
                ends[int(query["n"][0])] = float(msec)
    first = {}
    for msec, hook in arrivals:
        first.setdefault(hook, msec)
    latencies = []
    for hook, event in completions.items():
        n = int(event["task"][1:])
        if n not in ends or hook not in first:
            fail(f"burst {args.label}: download {n} or its webhook {hook} is not in nginx's log")
        latencies.append((first[hook] - ends[n]) * 1000)
    seqs = [completions[hook]["seq"] for _, hook in arrivals]
    in_order = all(a < b for a, b in zip(seqs, seqs[1:]))
    span = (max(first.values()) - min(ends.values())) * 1000
    print(f"{len(latencies)} {statistics.median(latencies):.1f} {percentile(latencies, 90):.1f} "
          f"{percentile(latencies, 99):.1f} {max(latencies):.1f} {span:.0f} {'yes' if in_order else 'no'}")


# --- report --------------------------------------------------------------------------------------
def cmd_report(args):
    values = {}
    with open(args.results) as f:
        for line in f:
            key, *rest = line.split()
            values.setdefault(key, []).append(rest)

    def med(key):
        return statistics.median(float(v[0]) for v in values[key]) if key in values else None

    n = args.files
    rows, missed = [], []

    def row(figure, unit, transferd, anchor, ratio, bar, ok):
        verdict = "n/a" if ok is None else ("met" if ok else "NOT met")
        if ok is False:
            missed.append(figure)
        rows.append((figure, unit, transferd, anchor, ratio, bar, verdict))

    def f0(v):
        return "-" if v is None else f"{v:,.0f}"

    def f2(v):
        return "-" if v is None else f"{v:,.3f}"

    curl, curl_sync = med("rate.curl"), med("rate.curl+sync")
    eph, bg = med("rate.ephemeral"), med("rate.background")
    if curl and eph:
        row(f"{n:,} x 16 KiB, ephemeral", "files/s", f0(eph), f"{f0(curl)} curl", f"{eph / curl:.2f}x",
            ">= 1.0x curl --parallel", eph >= curl)
    if curl_sync and bg:
        row(f"{n:,} x 16 KiB, background", "files/s", f0(bg), f"{f0(curl_sync)} c+sync", f"{bg / curl_sync:.2f}x",
            ">= 1.0x curl + sync", bg >= curl_sync)
    ccpu = med("cpu.curl")
    for mode, judged in (("background", True), ("ephemeral", False)):
        tcpu = med(f"cpu.{mode}")
        if ccpu and tcpu:
            ratio = tcpu / ccpu
            row(f"CPU per file, {mode}", "ms", f2(tcpu * 1000 / n), f"{f2(ccpu * 1000 / n)} curl", f"{ratio:.2f}x",
                "<= 1.5x curl" if judged else "(shown; bar on background)", ratio <= 1.5 if judged else None)
    history = []
    if args.history and os.path.exists(args.history):
        with open(args.history) as f:
            history = [line.split() for line in f if line.strip()]
    if history:
        per = [float(h[3]) * 1000 / int(h[1]) for h in history]
        tasks = sum(int(h[1]) for h in history)
        if len(per) >= 10:
            row("CPU per task, batch 10 / 1", "ms", f"{per[9]:.3f}", f"{per[0]:.3f} b1", f"{per[9] / per[0]:.2f}x",
                f"<= {args.flat:.2f}x (flat)", per[9] / per[0] <= args.flat)
        if len(per) > 10:
            row(f"CPU per task, batch {len(per)} / 1", "ms", f"{per[-1]:.3f}", f"{per[0]:.3f} b1",
                f"{per[-1] / per[0]:.2f}x", f"<= {args.flat:.2f}x (flat)", per[-1] / per[0] <= args.flat)
        start_db = args.db_start
        end = int(history[-1][4]) + int(history[-1][5])
        per_task_db = (end - start_db) / tasks
        row(f"DB growth per task ({tasks:,})", "bytes", f0(per_task_db), "", "", "<= 2,000 bytes",
            per_task_db <= 2000)
        rss = int(history[-1][6]) / 1024
        row(f"RSS after {tasks:,} completed", "MiB", f"{rss:.1f}", "", "", "< 64 MiB",
            rss < 64 if tasks >= 100_000 else None)
    for label, key, bar in (("webhook burst, max_in_flight 16", "hook.16", "p99 <= 50 ms"),
                            ("webhook burst, strict order", "hook.1", "all <= 2,000 ms, in order")):
        if key not in values:
            continue
        v = values[key][0]
        if v[0] == "unsupported":
            row(label, "ms", "not supported", "", "", bar, None)
            continue
        count, p50, p90, p99, mx, span, order = v
        if key == "hook.16":
            row(label + " p99", "ms", p99, f"p50 {p50}", "", bar, float(p99) <= 50)
        else:
            row(label + " max", "ms", mx, f"p99 {p99}", f"order {order}", bar,
                float(mx) <= 2000 and order == "yes")

    head = ("figure", "unit", "transferd", "anchor", "ratio", "bar", "verdict")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    line = "  ".join(f"{{:{'<' if i in (0, 1, 5, 6) else '>'}{w}}}" for i, w in enumerate(widths))
    print(line.format(*head))
    print("-" * (sum(widths) + 2 * (len(widths) - 1)))
    for r in rows:
        print(line.format(*r))

    print()
    print("Per task:")
    for mode in ("background", "ephemeral"):
        if f"cpu.{mode}" in values:
            print(f"  CPU, {mode:10}      {med(f'cpu.{mode}') * 1000 / n:7.3f} ms a task "
                  f"(runs: {', '.join(f'{float(v[0]) * 1000 / n:.3f}' for v in values[f'cpu.{mode}'])})")
    if ccpu:
        print(f"  CPU, curl --parallel  {ccpu * 1000 / n:7.3f} ms a file")
    if history:
        tasks = sum(int(h[1]) for h in history)
        db, wal = int(history[-1][4]), int(history[-1][5])
        print(f"  database             {(db + wal - args.db_start) / tasks:7.0f} bytes a task "
              f"(SQLite file {db / 1e6:.1f} MB, WAL {wal / 1e6:.1f} MB after {tasks:,} tasks)")
        picks = sorted({0, min(9, len(per) - 1), len(per) // 2, len(per) - 1})
        print(f"  resident memory      {int(history[-1][6]) / 1024:7.1f} MiB after {tasks:,} completed "
              f"(anon {int(history[-1][7]) / 1024:.1f} MiB); by batch: "
              + ", ".join(f"#{i + 1} {int(history[i][6]) / 1024:.0f}" for i in picks) + " MiB")
        print("  CPU by batch         " + ", ".join(f"#{i + 1} {per[i]:.3f}" for i in picks) + " ms a task")
    if "strace" in values:
        calls = dict((v[0], int(v[1])) for v in values["strace"])
        tasks = calls.pop("_tasks")
        total = calls.pop("total", sum(calls.values()))
        print(f"  system calls         {total / tasks:7.1f} a task (strace -c -f over one background batch of {tasks:,}):")
        top = sorted(calls.items(), key=lambda kv: -kv[1])[:12]
        print("    " + ", ".join(f"{name} {c / tasks:.2f}" for name, c in top))
        print("    pwrite64 %.2f, fsync %.2f, fdatasync %.2f a task" % tuple(
            calls.get(k, 0) / tasks for k in ("pwrite64", "fsync", "fdatasync")))
    print()
    if missed:
        print("bars missed: " + "; ".join(missed))
        sys.exit(1)
    print("every bar measured here is met")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("command", help="shell command; 'a && b' runs both, CPU summed")
    r.set_defaults(func=cmd_run)
    h = sub.add_parser("history")
    for name in ("api", "token", "list", "dest", "data", "out"):
        h.add_argument(f"--{name}", required=True)
    h.add_argument("--pid", type=int, required=True)
    h.add_argument("--batches", type=int, required=True)
    h.add_argument("--parallel", type=int, default=64)
    h.add_argument("--every", type=int, default=10, help="log every this many batches")
    h.set_defaults(func=cmd_history)
    b = sub.add_parser("burst")
    for name in ("api", "token", "origin", "access-log", "dest", "label"):
        b.add_argument(f"--{name}", required=True)
    b.add_argument("--count", type=int, default=1000)
    b.add_argument("--max-in-flight", type=int, default=1)
    b.set_defaults(func=cmd_burst)
    rp = sub.add_parser("report")
    rp.add_argument("results")
    rp.add_argument("--history")
    rp.add_argument("--db-start", type=int, default=0)
    rp.add_argument("--files", type=int, default=2000)
    rp.add_argument("--flat", type=float, default=1.2)
    rp.set_defaults(func=cmd_report)
    args = p.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
