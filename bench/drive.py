#!/usr/bin/env python3
"""Client side of bench/downloads.sh and bench/uploads.sh: drives transferd's API and formats the
results.

Kept in Python (standard library only) so that the timing happens inside one process with
keep-alive connections: no process start-up, no shell, no JSON tooling inside a timed section.

Subcommands (every one prints its measurement on stdout, diagnostics on stderr, exits 1 on error):

  download     create a session, submit the tasks of a list (one POST for a single task, one
               `tasks:batch` otherwise), wait until all are completed, print the elapsed seconds;
               then verify every task (state, status, size, sha256, location) and sha256 a sample
               of the files on disk against the source. With --cpu-pid, also transferd's CPU time
               over the timed section, per thread name.
  upload       create a session and one upload task (PUT, from a blob or a file), wait until it is
               completed, print the elapsed seconds; then verify status and bytes sent.
  submit-batch create suspended tasks through `tasks:batch` from several connections; print
               "tasks/s tasks seconds" and check that the session stores exactly that many. With
               --api given once per replica (cluster mode), each replica gets its own session and
               connections, and the rate is of all of them together.
  count        print a session's total number of tasks.
  replay       send the same GET, or the same POST of suspended tasks (one, or a tasks:batch), a
               number of times one after another on one connection (bench/instructions.sh).
  report       print the table of medians, ratios and bars from the results file.
"""
import argparse
import hashlib
import http.client
import json
import os
import random
import statistics
import sys
import threading
import time
import urllib.parse


def fail(message):
    print(f"drive.py: {message}", file=sys.stderr)
    sys.exit(1)


class API:
    """One keep-alive connection to transferd with the bearer token."""

    def __init__(self, base, token, timeout=700):
        parts = urllib.parse.urlsplit(base)
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self.last_used = time.monotonic()

    def call(self, method, path, body=None, expect=(200,)):
        try:
            self.conn.request(method, path, body=body, headers=self.headers)
            response = self.conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as e:
            # A server may close an idle keep-alive connection; retry what is safe to repeat. Before
            # transferd's idle timeout (75 s) that is unexpected, so say so.
            if method not in ("GET", "PUT"):
                raise
            idle = time.monotonic() - self.last_used
            if idle < 75:
                print(f"drive.py: warning: {method} {path}: {type(e).__name__} on a keep-alive connection "
                      f"idle for only {idle:.1f} s; retrying on a new connection", file=sys.stderr)
            self.conn.close()
            self.conn.request(method, path, body=body, headers=self.headers)
            response = self.conn.getresponse()
        data = response.read()
        self.last_used = time.monotonic()
        if response.status not in expect:
            fail(f"{method} {path} -> {response.status}: {data[:500].decode(errors='replace')}")
        return data

    def json(self, method, path, body=None, expect=(200,)):
        return json.loads(self.call(method, path, body, expect))


def put_session(api, session, configuration, mode="background"):
    body = {"mode": mode}
    if configuration:
        body["configuration"] = configuration
    api.call("PUT", f"/v1/sessions/{session}", json.dumps(body).encode(), expect=(200, 201))


def read_list(path):
    """Lines `url<TAB>name<TAB>size<TAB>sha256` (written by downloads.sh from SHA256SUMS)."""
    items = []
    with open(path) as f:
        for line in f:
            url, name, size, sha = line.rstrip("\n").split("\t")
            items.append({"url": url, "name": name, "size": int(size), "sha256": sha})
    return items


def wait_all(api, session, total, last_id, deadline):
    """Return once all `total` tasks of the session are completed.

    Few requests on purpose, so that polling does not steal CPU from the transfers: long-poll the
    last task submitted (usually the last to finish), then read the session's counts; while some
    are still unfinished, long-poll the oldest running one and look again.
    """
    target = last_id
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            fail(f"timed out waiting for {total} tasks in session {session}")
        api.call("GET", f"/v1/sessions/{session}/tasks/{target}?wait={min(600, int(left) + 1)}")
        counts = api.json("GET", f"/v1/sessions/{session}")["tasks"]
        if counts["completed"] >= total:
            return
        running = api.json("GET", f"/v1/sessions/{session}/tasks?state=running&limit=1")["tasks"]
        if running:
            target = running[0]["id"]
        else:  # suspended or canceling ones are not expected; look again shortly
            time.sleep(0.002)


def list_all(api, session):
    tasks, after = [], None
    while True:
        query = "limit=1000" + (f"&after={after}" if after else "")
        page = api.json("GET", f"/v1/sessions/{session}/tasks?{query}")
        tasks.extend(page["tasks"])
        after = page.get("next")
        if not after:
            return tasks


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def thread_cpu(pid):
    """CPU ticks (user + system) of a process and of each of its threads: {"total": t, tid: (name, t)}."""
    def ticks(path):
        with open(path) as f:
            text = f.read()
        name, fields = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
        return name, int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15 of proc(5))
    out = {"total": ticks(f"/proc/{pid}/stat")[1]}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out[tid] = ticks(f"/proc/{pid}/task/{tid}/stat")
        except (FileNotFoundError, ProcessLookupError):
            pass  # the thread ended meanwhile
    return out


def write_cpu(path, before, after):
    """Writes what the process and its threads (grouped by name) used between two `thread_cpu`s,
    in seconds: one `name seconds` line each, `total` first (threads that ended meanwhile count
    only there)."""
    hz = os.sysconf("SC_CLK_TCK")
    groups = {}
    for tid, value in after.items():
        if tid == "total":
            continue
        name, t = value
        used = t - before.get(tid, (name, 0))[1]
        groups[name] = groups.get(name, 0) + used
    with open(path, "w") as f:
        f.write(f"total {(after['total'] - before['total']) / hz:.3f}\n")
        for name, used in sorted(groups.items(), key=lambda kv: -kv[1]):
            f.write(f"{name.replace(' ', '_')} {used / hz:.3f}\n")


def cmd_download(args):
    items = read_list(args.list)
    api = API(args.api, args.token)
    put_session(api, args.session, json.loads(args.config) if args.config else None, args.mode)
    digests = None if args.digests is None else [d for d in args.digests.split(",") if d]
    specs = [{"kind": "download", "request": {"url": it["url"]},
              "download": {"destination": f"{args.dest}/{it['name']}",
                           **({} if digests is None else {"digests": digests})}} for it in items]
    # Bodies are encoded before the clock starts: the client's JSON work is not transferd's time.
    if len(specs) == 1:
        path, body = f"/v1/sessions/{args.session}/tasks", json.dumps(specs[0]).encode()
    else:
        path, body = f"/v1/sessions/{args.session}/tasks:batch", json.dumps({"tasks": specs}).encode()

    cpu_before = thread_cpu(args.cpu_pid) if args.cpu_pid else None
    start = time.perf_counter()
    reply = api.json("POST", path, body, expect=(201,))
    created = [reply] if len(specs) == 1 else reply["tasks"]
    wait_all(api, args.session, len(specs), created[-1]["id"], time.monotonic() + args.timeout)
    elapsed = time.perf_counter() - start
    if cpu_before:
        write_cpu(args.cpu_out, cpu_before, thread_cpu(args.cpu_pid))

    # Verification, outside the timed section: a fast but wrong result must not pass.
    expected = {f"{args.dest}/{it['name']}": it for it in items}
    tasks = list_all(api, args.session)
    if len(tasks) != len(items):
        fail(f"session {args.session} has {len(tasks)} tasks, expected {len(items)}")
    for t in tasks:
        dest = t.get("download", {}).get("destination")
        it = expected.get(dest)
        problem = None
        if it is None:
            problem = f"unexpected destination {dest}"
        elif t["state"] != "completed" or t["error"] is not None:
            problem = f"state {t['state']}, error {t['error']}"
        elif (t["response"] or {}).get("status") != 200:
            problem = f"HTTP status {(t['response'] or {}).get('status')}"
        elif not t["result"] or t["result"]["size"] != it["size"] or t["result"].get("sha256", it["sha256"]) != it["sha256"]:
            problem = f"result {t['result']} does not match size {it['size']} sha256 {it['sha256']}"
        elif t["result"]["location"] != dest:
            problem = f"result location {t['result']['location']} is not the destination {dest}"
        if problem:
            fail(f"task {t['id']} ({dest}): {problem}")
    # transferd's own sha256 could be right while the bytes on disk are not: hash a sample.
    sample = random.Random(args.seed).sample(items, min(args.sample, len(items)))
    for it in sample:
        path = f"{args.dest}/{it['name']}"
        actual = sha256_file(path)
        if actual != it["sha256"]:
            fail(f"{path}: sha256 {actual} differs from the source's {it['sha256']}")
    if args.ids_out:
        with open(args.ids_out, "w") as f:
            f.write("".join(t["id"] + "\n" for t in created))
    print(f"{elapsed:.6f}")


def cmd_upload(args):
    api = API(args.api, args.token)
    put_session(api, args.session, None)
    source = {"from_blob": args.blob} if args.blob else {"from_file": args.file}
    body = json.dumps({"kind": "upload", "request": {"url": args.url, "method": "PUT"}, "upload": source}).encode()
    start = time.perf_counter()
    task = api.json("POST", f"/v1/sessions/{args.session}/tasks", body, expect=(201,))
    wait_all(api, args.session, 1, task["id"], time.monotonic() + args.timeout)
    elapsed = time.perf_counter() - start
    task = api.json("GET", f"/v1/sessions/{args.session}/tasks/{task['id']}")
    status = (task["response"] or {}).get("status")
    if task["error"] is not None or status not in (200, 201, 204):
        fail(f"upload task {task['id']}: error {task['error']}, HTTP status {status}")
    if task["progress"]["bytes_sent"] != args.size:
        fail(f"upload task {task['id']} sent {task['progress']['bytes_sent']} bytes, expected {args.size}")
    print(f"{elapsed:.6f}")


def cmd_submit_batch(args):
    """tasks:batch from `concurrency` keep-alive connections to each API until `total` tasks are
    stored; with several APIs, in session `<session>.<n>` created through the n-th."""
    sessions = [args.session] if len(args.api) == 1 else [f"{args.session}.{n}" for n in range(1, len(args.api) + 1)]
    seeds = [API(base, args.token) for base in args.api]
    for seed, session in zip(seeds, sessions):
        put_session(seed, session, None)
    before = [seed.json("GET", f"/v1/sessions/{session}")["tasks"]["total"] for seed, session in zip(seeds, sessions)]
    # Suspended tasks ("start": false) pointing at a tiny file: stored, never transferred.
    task = {"kind": "download", "start": False, "request": {"url": args.url}}
    batches = [args.batch] * (args.total // args.batch)
    if args.total % args.batch:
        batches.append(args.total % args.batch)
    bodies = {n: json.dumps({"tasks": [task] * n}).encode() for n in set(batches)}
    lock, errors, stored = threading.Lock(), [], dict.fromkeys(sessions, 0)
    deadline = time.monotonic() + args.max_seconds

    def worker(api, session):
        while True:
            with lock:
                # Past the deadline no new batch starts (a slow service must not stall the bench);
                # the rate is then over what was stored.
                if not batches or errors or time.monotonic() > deadline:
                    return
                n = batches.pop()
            try:
                api.conn.request("POST", f"/v1/sessions/{session}/tasks:batch",
                                 body=bodies[n], headers=api.headers)
                response = api.conn.getresponse()
                data = response.read()
                if response.status != 201:
                    raise RuntimeError(f"tasks:batch -> {response.status}: {data[:300]!r}")
                got = data.count(b'"session":')  # one per task object; cheaper than parsing
                if got != n:
                    raise RuntimeError(f"tasks:batch of {n} answered {got} tasks")
                with lock:
                    stored[session] += n
            except Exception as e:  # noqa: BLE001 - reported below
                with lock:
                    errors.append(str(e))
                return

    threads = [threading.Thread(target=worker, args=(API(base, args.token), session))
               for _ in range(args.concurrency) for base, session in zip(args.api, sessions)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        fail(errors[0])
    total = sum(stored.values())
    if total < args.total:
        print(f"drive.py: note: stopped at the {args.max_seconds:.0f} s limit after {total:,} of "
              f"{args.total:,} tasks ({elapsed:.1f} s)", file=sys.stderr)
    for seed, session, earlier in zip(seeds, sessions, before):
        after = seed.json("GET", f"/v1/sessions/{session}")["tasks"]["total"]
        if after - earlier != stored[session]:
            fail(f"session {session} stores {after - earlier} new tasks, expected {stored[session]}")
    print(f"{total / elapsed:.1f} {total} {elapsed:.3f}")


def cmd_replay(args):
    api = API(args.api, args.token)
    task = {"kind": "download", "start": False, "request": {"url": "http://127.0.0.1:9/x"}}
    if args.get:
        for _ in range(args.count):
            api.call("GET", args.get)
    else:
        body = json.dumps({"tasks": [task] * args.batch} if args.batch else task).encode()
        for _ in range(args.count):
            api.call("POST", args.post, body, expect=(201,))
    print(args.count)


def cmd_count(args):
    api = API(args.api, args.token)
    print(api.json("GET", f"/v1/sessions/{args.session}")["tasks"]["total"])


# --- report ---------------------------------------------------------------------------------------
# workload -> (label, unit, anchor tools, bar text, check(medians) -> bool)
WORKLOADS = {
    "single": ("1 GiB, one download", "MB/s", ["curl", "aria2c"], ">=1.0x curl, > aria2c",
               lambda m: m["transferd"] >= m["curl"] and m["transferd"] > m["aria2c"]),
    "parallel": ("16 x 64 MiB, 16 at once", "MB/s", ["curl", "aria2c"], ">=1.0x curl, > aria2c",
                 lambda m: m["transferd"] >= m["curl"] and m["transferd"] > m["aria2c"]),
    "small": ("2,000 x 16 KiB, batch", "files/s", ["curl", "aria2c"], ">=1.0x curl --parallel",
              lambda m: m["transferd"] >= m["curl"]),
    "submit1": ("submit one by one", "tasks/s", [], ">= 3,000 tasks/s",
                lambda m: m["transferd"] >= 3000),
    "submitN": ("submit tasks:batch", "tasks/s", [], ">= 20,000 tasks/s",
                lambda m: m["transferd"] >= 20000),
    "get": ("task GET, wrk -t2 -c64", "req/s", ["nginx"], ">=0.5x nginx",
            lambda m: m["transferd"] >= 0.5 * m["nginx"]),
    "blob": ("1 GiB PUT from a blob", "MB/s", ["curl"], ">=1.0x curl -T",
             lambda m: m["transferd"] >= m["curl"]),
    "file": ("1 GiB PUT from a file", "MB/s", ["curl"], ">=1.0x curl -T",
             lambda m: m["transferd"] >= m["curl"]),
}


# workload -> (label, (units per run, unit)) for the CPU lines of the report
CPU_UNITS = {
    "single": ("1 GiB, one download", (1, "GiB")),
    "parallel": ("16 x 64 MiB, 16 at once", (1, "GiB")),
    "small": ("2,000 x 16 KiB, batch", (2000, "file")),
}


def cmd_report(args):
    runs = {}
    with open(args.results) as f:
        for line in f:
            workload, tool, _run, value = line.split()
            runs.setdefault(workload, {}).setdefault(tool, []).append(float(value))

    def fmt(v):
        return "-" if v is None else f"{v:,.0f}"

    def ratio(a, b):
        return "-" if a is None or not b else f"{a / b:.2f}x"

    print("Per-run values (higher is better):")
    for workload, tools in runs.items():
        if workload.startswith("cpu-"):
            continue  # in the CPU lines below
        for tool, values in tools.items():
            print(f"  {workload:9} {tool:10} " + "  ".join(f"{v:,.0f}" for v in values))
    print()
    head = (f"{'workload':26} {'unit':8} {'transferd':>10} {'curl':>10} {'aria2c':>10} {'nginx':>10} "
            f"{'t/curl':>7} {'t/aria2c':>8} {'t/nginx':>7}  {'bar':24} verdict")
    print(head)
    print("-" * len(head))
    for workload, (label, unit, anchors, bar, check) in WORKLOADS.items():
        if workload not in runs:
            continue
        med = {tool: statistics.median(values) for tool, values in runs[workload].items()}
        t = med.get("transferd")
        try:
            verdict = "met" if check(med) else "NOT met"
        except (KeyError, TypeError):
            verdict = "n/a"
        print(f"{label:26} {unit:8} {fmt(t):>10} {fmt(med.get('curl')):>10} {fmt(med.get('aria2c')):>10} "
              f"{fmt(med.get('nginx')):>10} {ratio(t, med.get('curl')):>7} {ratio(t, med.get('aria2c')):>8} "
              f"{ratio(t, med.get('nginx')):>7}  {bar:24} {verdict}")
    cpu = [(label, runs[f"cpu-{workload}"]["transferd"], per) for workload, (label, per) in CPU_UNITS.items()
           if f"cpu-{workload}" in runs]
    if cpu:
        print()
        print("transferd CPU time (user + system, all threads) over the timed section, median of the runs:")
        for label, values, (count, unit) in cpu:
            m = statistics.median(values)
            print(f"  {label:26} {m:7.3f} s   {m * 1000 / count:8.3f} ms per {unit}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("download")
    d.add_argument("--api", required=True)
    d.add_argument("--token", required=True)
    d.add_argument("--session", required=True)
    d.add_argument("--config", help="session configuration, JSON")
    d.add_argument("--mode", default="background", choices=["background", "default", "ephemeral"],
                   help="the session's mode")
    d.add_argument("--list", required=True, help="url<TAB>name<TAB>size<TAB>sha256 lines")
    d.add_argument("--dest", required=True, help="directory for the destinations")
    d.add_argument("--sample", type=int, default=8, help="files to sha256 on disk")
    d.add_argument("--digests", help="download.digests, comma-separated ('' for none; default: the service's)")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--timeout", type=float, default=600)
    d.add_argument("--ids-out", help="write the created task ids here")
    d.add_argument("--cpu-pid", type=int, help="transferd's pid: measure its CPU time over the timed section")
    d.add_argument("--cpu-out", help="write that CPU time here, per thread name (with --cpu-pid)")
    d.set_defaults(func=cmd_download)

    u = sub.add_parser("upload")
    u.add_argument("--api", required=True)
    u.add_argument("--token", required=True)
    u.add_argument("--session", required=True)
    u.add_argument("--url", required=True, help="where to PUT the body")
    source = u.add_mutually_exclusive_group(required=True)
    source.add_argument("--blob", help="id of a stored blob")
    source.add_argument("--file", help="path under an --allow-path root")
    u.add_argument("--size", type=int, required=True, help="bytes the task must send")
    u.add_argument("--timeout", type=float, default=600)
    u.set_defaults(func=cmd_upload)

    s = sub.add_parser("submit-batch")
    s.add_argument("--api", required=True, action="append", help="once per replica in cluster mode")
    s.add_argument("--token", required=True)
    s.add_argument("--session", required=True)
    s.add_argument("--url", required=True, help="what the (suspended) tasks would download")
    s.add_argument("--total", type=int, default=100_000)
    s.add_argument("--batch", type=int, default=5_000)
    s.add_argument("--concurrency", type=int, default=2)
    s.add_argument("--max-seconds", type=float, default=30, help="start no batch after this long")
    s.set_defaults(func=cmd_submit_batch)

    c = sub.add_parser("count")
    c.add_argument("--api", required=True)
    c.add_argument("--token", required=True)
    c.add_argument("--session", required=True)
    c.set_defaults(func=cmd_count)

    p_replay = sub.add_parser("replay")
    p_replay.add_argument("--api", required=True)
    p_replay.add_argument("--token", required=True)
    target = p_replay.add_mutually_exclusive_group(required=True)
    target.add_argument("--get", help="path to GET")
    target.add_argument("--post", help="path to POST suspended tasks to")
    p_replay.add_argument("--batch", type=int, default=0, help="tasks per POST (a tasks:batch body); 0: one task")
    p_replay.add_argument("--count", type=int, required=True)
    p_replay.set_defaults(func=cmd_replay)

    r = sub.add_parser("report")
    r.add_argument("results")
    r.set_defaults(func=cmd_report)

    args = p.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
