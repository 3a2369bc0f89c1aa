#!/usr/bin/env python3
"""Helpers of bench/wan.sh (standard library only).

Subcommands:

  origin   a plain upload origin: accepts `PUT /<name>` with a Content-Length body and stores it in
           --dir (a body cut short is discarded), answers 201; nothing resumable. It stands for
           "an origin that speaks no resumable upload protocol": an upload cut there starts again.
  upload   create a background session and one upload task (PUT from a file); print its id.
  state    print an upload task's state and bytes sent (long-polls up to --wait seconds).
  report   the per-link table and the table of bars from the results file; exits 1 when a bar is
           missed.
"""
import argparse
import json
import os
import statistics
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from drive import API, put_session  # noqa: E402  (bench/drive.py, beside this file)

LINK_RATE = 125e6  # the emulated link: 1 Gbit/s, in bytes a second


# --- origin ---------------------------------------------------------------------------------------
def cmd_origin(args):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 30  # a client gone without a FIN or RST (a cut connection) frees its thread

        def do_PUT(self):
            length = self.headers.get("Content-Length")
            if length is None:
                self.send_error(411)
                return
            left = int(length)
            name = os.path.basename(self.path.split("?")[0]) or "upload"
            part = os.path.join(args.dir, f"{name}.{threading.get_ident()}.part")
            with open(part, "wb") as f:
                while left:
                    try:
                        chunk = self.rfile.read(min(left, 1 << 20))
                    except OSError:  # reset, or the timeout
                        chunk = b""
                    if not chunk:  # the connection ended before the body did
                        os.unlink(part)
                        self.close_connection = True
                        return
                    f.write(chunk)
                    left -= len(chunk)
            os.replace(part, os.path.join(args.dir, name))
            self.send_response(201)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_):
            pass

    server = ThreadingHTTPServer(("0.0.0.0", args.port), Handler)
    server.daemon_threads = True
    server.serve_forever()


# --- transferd -------------------------------------------------------------------------------------
def cmd_upload(args):
    api = API(args.api, args.token)
    put_session(api, args.session, None)
    upload = {"from_file": args.file, **({"resumable": args.resumable} if args.resumable else {})}
    body = {"kind": "upload", "request": {"url": args.url, "method": args.method}, "upload": upload}
    task = api.json("POST", f"/v1/sessions/{args.session}/tasks", json.dumps(body).encode(), expect=(201,))
    print(task["id"])


def cmd_state(args):
    api = API(args.api, args.token)
    task = api.json("GET", f"/v1/sessions/{args.session}/tasks/{args.id}?wait={args.wait}")
    error = task["error"]
    print(task["state"], task["progress"]["bytes_sent"], (error or {}).get("code", "-") if error else "-")


# --- report ----------------------------------------------------------------------------------------
def cmd_report(args):
    links, downloads, uploads = {}, {}, []
    with open(args.results) as f:
        for line in f:
            kind, *rest = line.split()
            if kind == "link":  # key rtt-ms loss-% outage-s
                key, rtt, loss, outage = rest
                links[key] = (float(rtt), float(loss), float(outage))
            elif kind == "dl":  # link tool run seconds extra-bytes
                key, tool, _run, seconds, extra = rest
                downloads.setdefault(key, {}).setdefault(tool, []).append((float(seconds), int(extra)))
            elif kind == "ul":  # how origin size received completed seconds
                how, origin, size, received, completed, seconds = rest
                uploads.append((how, origin, int(size), int(received), completed, float(seconds)))

    size = args.size

    def label(key):
        rtt, loss, outage = links[key]
        text = f"RTT {rtt:g} ms" + (f", {loss:g}% loss" if loss else ", no loss")
        return text + (f", {outage:g} s outage" if outage else "")

    def med_seconds(key, tool):
        runs = downloads.get(key, {}).get(tool)
        return statistics.median(s for s, _ in runs) if runs else None

    def mbps(seconds):
        return None if seconds is None else size / seconds / 1e6

    def f1(v):
        return "-" if v is None else f"{v:.1f}"

    tools = ("curl", "aria2c", "transferd")
    if downloads:
        print("Per run: seconds (bytes the origin sent beyond the file)")
    for key in downloads:
        for tool in tools:
            runs = downloads[key].get(tool, [])
            print(f"  {label(key):36} {tool:9} " + "  ".join(f"{s:.2f} ({e:+,})" for s, e in runs))
    if downloads:
        print()
    head = ("link", "curl MB/s", "aria2c MB/s", "transferd MB/s", "transferd / aria2c", "share of the link",
            "transferd beyond the file")
    rows = []
    for key in downloads:
        rates = {tool: mbps(med_seconds(key, tool)) for tool in tools}
        t, a = rates["transferd"], rates["aria2c"]
        extra = [e for _, e in downloads[key].get("transferd", [])]
        rows.append((label(key), f1(rates["curl"]), f1(a), f1(t), f"{t / a:.2f}x" if t and a else "-",
                     f"{t * 1e6 / LINK_RATE:.0%}" if t else "-", f"{max(extra):,} B" if extra else "-"))
    if rows:
        table(head, rows, left=(0,))
        print()

    bars, missed = [], []

    def bar(figure, unit, value, anchor, ratio, text, ok):
        verdict = "n/a" if ok is None else ("met" if ok else "NOT met")
        if ok is False:
            missed.append(figure)
        bars.append((figure, unit, value, anchor, ratio, text, verdict))

    for key, (rtt, loss, outage) in links.items():
        if outage or key not in downloads:
            continue
        t, a = mbps(med_seconds(key, "transferd")), mbps(med_seconds(key, "aria2c"))
        if (rtt, loss) in ((80, 0.1), (200, 1)) and t and a:
            bar(f"{label(key)}: vs aria2c", "MB/s", f1(t), f"{f1(a)} aria2c", f"{t / a:.2f}x", ">= 1.2x aria2c",
                t / a >= 1.2)
        if (rtt, loss) == (80, 0.1) and t:
            bar(f"{label(key)}: share of the link", "%", f"{t * 1e8 / LINK_RATE:.0f}", "125 MB/s", "",
                ">= 80% of the link", t * 1e6 / LINK_RATE >= 0.8)
    for key, (rtt, loss, outage) in links.items():
        if not outage or key not in downloads:
            continue
        twin = next((k for k, v in links.items() if v == (rtt, loss, 0) and k in downloads), None)
        with_outage = med_seconds(key, "transferd")
        without = med_seconds(twin, "transferd") if twin else None
        if with_outage is not None and without is not None:
            cost = with_outage - without
            bar(f"{label(key)}: cost", "s", f"{cost:.1f}", f"{without:.1f} s without", "",
                f"<= {outage:g} s + 2 s", cost <= outage + 2)
        extra = [e for _, e in downloads[key].get("transferd", [])]
        if extra:
            bar(f"{label(key)}: refetched", "bytes", f"{max(extra):,}", "", "", "0 (nothing refetched)",
                max(extra) <= 0)
    for how, origin, usize, received, completed, seconds in uploads:
        figure = f"upload {usize / 2**20:,.0f} MiB cut at 50% by {how}, {origin} origin"
        if received < 0:
            bar(figure, "bytes", "origin not available", "", "", "<= 1.05x the size, completed", None)
            continue
        bar(figure, "bytes", f"{received:,}", f"{usize:,} size", f"{received / usize:.2f}x",
            "<= 1.05x the size, completed", received <= 1.05 * usize and completed == "yes")
        print(f"upload cut by {how} ({origin} origin): {received:,} bytes received in all for {usize:,}, "
              f"completed: {completed}, {seconds:.1f} s")
    if uploads:
        print()
    if bars:
        table(("figure", "unit", "transferd", "anchor", "ratio", "bar", "verdict"), bars, left=(0, 1, 5, 6))
        print()
    if missed:
        print("bars missed: " + "; ".join(missed))
        sys.exit(1)
    print("every bar measured here is met" if bars else "no bar is measured on these links")


def table(head, rows, left):
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    line = "  ".join(f"{{:{'<' if i in left else '>'}{w}}}" for i, w in enumerate(widths))
    print(line.format(*head))
    print("-" * (sum(widths) + 2 * (len(widths) - 1)))
    for r in rows:
        print(line.format(*r))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    o = sub.add_parser("origin")
    o.add_argument("--port", type=int, required=True)
    o.add_argument("--dir", required=True)
    o.set_defaults(func=cmd_origin)
    for name, func in (("upload", cmd_upload), ("state", cmd_state)):
        s = sub.add_parser(name)
        s.add_argument("--api", required=True)
        s.add_argument("--token", required=True)
        s.add_argument("--session", required=True)
        if name == "upload":
            s.add_argument("--url", required=True)
            s.add_argument("--method", default="PUT")
            s.add_argument("--file", required=True)
            s.add_argument("--resumable", help="upload.resumable (unset: the service's default)")
        else:
            s.add_argument("--id", required=True)
            s.add_argument("--wait", type=int, default=0)
        s.set_defaults(func=func)
    r = sub.add_parser("report")
    r.add_argument("results")
    r.add_argument("--size", type=int, required=True, help="bytes of the downloaded file")
    r.set_defaults(func=cmd_report)
    args = p.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
