"""transferd's own metric families on `/metrics`: each moves as the real work it counts does —
downloads, uploads and data tasks against a real origin, webhooks to a real receiver, tenants with
an auth file — and the whole output passes `promtool check metrics`. The alert rules and the
Grafana dashboard in deploy/ are checked against what a live transferd exposes."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
import yaml

from support.api import (action, assert_success, assert_task_error, create_session, create_task, data, download,
                         get_session, run_task, unique, wait_for, wait_task)
from support.events import ack, create_delegated_session, read_events
from support.metrics import metrics_text, promtool, scrape, value, wait_metric
from support.receiver import WebhookReceiver
from support.tenants import Principal, write_auth_file
from support.transferd import REPO_ROOT

ONE_ATTEMPT = {"retry": {"max_attempts": 1}}
FAST_RETRIES = ("--webhook-retry-schedule", "0,100ms,200ms,300ms,400ms,500ms")

# Every family transferd exposes, with its type.
FAMILIES = {
    "transferd_tasks": "gauge",
    "transferd_tasks_completed_total": "counter",
    "transferd_transfer_bytes_total": "counter",
    "transferd_transfer_duration_seconds": "histogram",
    "transferd_webhook_deliveries_total": "counter",
    "transferd_webhook_latency_seconds": "histogram",
    "transferd_events_pending": "gauge",
    "transferd_store_commit_seconds": "histogram",
    "transferd_data_dir_free_bytes": "gauge",
    "transferd_curl_handles": "gauge",
    "transferd_sessions": "gauge",
    "http_requests_total": "counter",
    "http_request_duration_seconds": "histogram",
    "http_open_connections": "gauge",
    "process_resident_memory_bytes": "gauge",
    "process_open_fds": "gauge",
    "process_start_time_seconds": "gauge",
}


def check_with_promtool(text: str) -> None:
    result = subprocess.run([promtool(), "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def helps(text: str) -> set[str]:
    return {line.split()[2] for line in text.splitlines() if line.startswith("# HELP ")}


def upload_text(url: str, text: str) -> dict:
    return {"kind": "upload", "request": {"url": url, "body": {"text": text}}}


def test_every_family_is_typed_described_and_clean_under_promtool(transferd, origin):
    # Some work first, so that labelled series and histograms have samples.
    sid = create_session(transferd, mode="background")
    assert_success(run_task(transferd, sid, download(origin.url("/bytes/1000"))))
    transferd.get("/v1")
    text = metrics_text(transferd)
    _, types = scrape(transferd)
    for family, kind in FAMILIES.items():
        assert types.get(family) == kind, (family, types.get(family))
    assert set(types) <= helps(text), f"families without # HELP: {sorted(set(types) - helps(text))}"
    check_with_promtool(text)


def test_tasks_count_by_state_kind_and_outcome_with_their_bytes_and_durations(transferd, origin):
    sid = create_session(transferd, mode="background")
    # A background session would continue a broken download; a default one fails it.
    fails = create_session(transferd, configuration=ONE_ATTEMPT)
    before, _ = scrape(transferd)

    suspended = create_task(transferd, sid, dict(download(origin.url("/bytes/10")), start=False))
    now, _ = scrape(transferd)
    assert value(now, "transferd_tasks", state="suspended", kind="download") == 1
    assert value(now, "transferd_tasks", state="running", kind="download") == 0

    # A transfer running: counted as running, on an active curl handle.
    slow = create_task(transferd, sid, download(origin.url("/bytes/400000?rate=200000")))
    running = wait_metric(transferd, lambda s: value(s, "transferd_curl_handles", state="active") >= 1,
                          "an active curl handle")
    assert value(running, "transferd_tasks", state="running", kind="download") == 1
    slow = assert_success(wait_task(transferd, sid, slow["id"]))
    idle = wait_metric(transferd, lambda s: value(s, "transferd_curl_handles", state="active") == 0,
                       "the handle back in the pool")
    assert value(idle, "transferd_curl_handles", state="idle") >= 1
    assert value(idle, "transferd_tasks", state="running", kind="download") == 0

    done = [assert_success(run_task(transferd, sid, download(origin.url("/bytes/300000")))),
            assert_success(run_task(transferd, sid, data(origin.url("/bytes/5000")))),
            assert_success(run_task(transferd, sid, upload_text(origin.url("/upload"), "hello, metrics")))]
    failed = assert_task_error(run_task(transferd, fails, download(origin.url("/bytes/1000000?reset_after=300000"))),
                               "network_connection_lost")
    action(transferd, sid, suspended["id"], "cancel")
    assert wait_task(transferd, sid, suspended["id"])["error"]["code"] == "cancelled"

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    after = wait_metric(transferd, lambda s: value(s, "transferd_tasks_completed_total") - value(
        before, "transferd_tasks_completed_total") == 6, "six completions counted")
    assert moved("transferd_tasks_completed_total", kind="download", outcome="success") == 2
    assert moved("transferd_tasks_completed_total", kind="data", outcome="success") == 1
    assert moved("transferd_tasks_completed_total", kind="upload", outcome="success") == 1
    assert moved("transferd_tasks_completed_total", kind="download", outcome="failed") == 1
    assert moved("transferd_tasks_completed_total", kind="download", outcome="cancelled") == 1
    assert value(after, "transferd_tasks", state="suspended", kind="download") == 0
    # Five ran (the cancelled one never started); each observed once.
    assert moved("transferd_transfer_duration_seconds_count") == 5
    assert moved("transferd_transfer_duration_seconds_sum") > 0
    # Bytes as the tasks report them: the upload's body sent, its response and the others' bodies
    # received — the failed download's partial body too: it did cross the network.
    assert moved("transferd_transfer_bytes_total", direction="sent") == len("hello, metrics")
    assert failed["progress"]["bytes_received"] > 0
    assert moved("transferd_transfer_bytes_total", direction="received") == sum(
        task["progress"]["bytes_received"] for task in [slow, *done, failed])
    # The background session's changes went through group commits.
    assert moved("transferd_store_commit_seconds_count") >= 6


def test_sessions_count_by_mode(transferd):
    before, _ = scrape(transferd)
    for mode, n in (("background", 1), ("default", 2), ("ephemeral", 3)):
        for _ in range(n):
            create_session(transferd, mode=mode)
    after, _ = scrape(transferd)
    for mode, n in (("background", 1), ("default", 2), ("ephemeral", 3)):
        assert value(after, "transferd_sessions", mode=mode) - value(before, "transferd_sessions", mode=mode) == n


def test_events_pending_falls_as_events_are_acknowledged(transferd, origin):
    sid = create_session(transferd, mode="background")
    assert_success(run_task(transferd, sid, download(origin.url("/bytes/100"))))
    pending = get_session(transferd, sid)["pending_events"]
    assert pending > 0
    assert value(scrape(transferd)[0], "transferd_events_pending") == pending
    ack(transferd, sid, read_events(transferd, sid)["events"][-1]["seq"])
    assert value(scrape(transferd)[0], "transferd_events_pending") == 0


def test_data_dir_free_bytes_is_the_file_systems(transferd):
    shown = value(scrape(transferd)[0], "transferd_data_dir_free_bytes")
    space = os.statvfs(transferd.data_dir)
    # Other processes write meanwhile: the same figure within a few percent.
    assert shown == pytest.approx(space.f_bavail * space.f_frsize, rel=0.05)


@pytest.fixture
def receiver():
    with WebhookReceiver(secret="whsec_" + "bWV0cmljcy10ZXN0LXNlY3JldC0zMi1ieXRlcyEhISE=") as server:
        yield server


def test_webhook_deliveries_count_by_outcome_and_time_completions(start_transferd, api_token, origin, receiver):
    td = start_transferd(*FAST_RETRIES, api_token=api_token)
    before, _ = scrape(td)
    # Only completions are pushed: one delivery (and its retries) per task.
    receiver.respond_with(500, times=2)
    sid = create_delegated_session(td, receiver, events=["task.completed"])
    assert_success(run_task(td, sid, download(origin.url("/bytes/100"))))
    receiver.wait_for(lambda ds: [d.status for d in ds] == [500, 500, 200])
    after = wait_metric(td, lambda s: value(s, "transferd_webhook_deliveries_total", outcome="success")
                        - value(before, "transferd_webhook_deliveries_total", outcome="success") == 1,
                        "the 2xx delivery counted")
    assert value(after, "transferd_webhook_deliveries_total", outcome="failed") - value(
        before, "transferd_webhook_deliveries_total", outcome="failed") == 2
    assert value(after, "transferd_webhook_latency_seconds_count") - value(
        before, "transferd_webhook_latency_seconds_count") == 1
    assert value(after, "transferd_webhook_latency_seconds_sum") > 0

    receiver.respond_with(410)
    assert_success(run_task(td, sid, download(origin.url("/bytes/100"))))
    gone = wait_metric(td, lambda s: value(s, "transferd_webhook_deliveries_total", outcome="gone") == 1,
                       "the 410 counted")
    assert value(gone, "transferd_webhook_latency_seconds_count") == value(after, "transferd_webhook_latency_seconds_count")


def test_with_tenants_tasks_and_bytes_count_by_principal(start_transferd, origin, tmp_path):
    alpha = Principal("alpha", "write", namespaces=["com.alpha."])
    beta = Principal("beta", "write", namespaces=["com.beta."])
    watcher = Principal("watcher", "read", namespaces=["com."])
    beta_reader = Principal("beta-reader", "read", namespaces=["com.beta."])
    ops = Principal("ops", "admin")
    principals = [watcher, beta_reader, alpha, beta, ops]
    td = start_transferd("--auth-file", str(write_auth_file(tmp_path / "auth.json", principals)))
    work = [(alpha, "com.alpha.", 1000), (beta, "com.beta.", 2000), (beta, "com.beta.", 3000), (ops, "org.ops.", 4000)]
    for principal, namespace, size in work:
        caller = td.as_caller(principal.token)
        sid = create_session(caller, unique(namespace + "jobs-"))
        assert_success(run_task(caller, sid, download(origin.url(f"/bytes/{size}"))))
    samples = wait_metric(td, lambda s: value(s, "transferd_tasks_completed_total") == 4, "four completions")
    # The owner of a session is the principal whose namespace holding it is the longest: the
    # reader of every "com." session owns none of them; of two with the same namespace, the one
    # that writes; sessions no tenant holds are "(admin)".
    expected = {"alpha": (1, 1000), "beta": (2, 5000), "(admin)": (1, 4000)}
    for name, (tasks, received) in expected.items():
        assert value(samples, "transferd_tasks_completed_total", principal=name, kind="download",
                     outcome="success") == tasks, name
        assert value(samples, "transferd_transfer_bytes_total", principal=name, direction="received") == received, name
    assert {l.get("principal") for n, l, _ in samples
            if n in ("transferd_tasks_completed_total", "transferd_transfer_bytes_total")} == set(expected)
    check_with_promtool(metrics_text(td))


# MARK: deploy/: alert rules and dashboard

ALERTS = REPO_ROOT / "deploy" / "prometheus" / "transferd-alerts.yml"
DASHBOARD = REPO_ROOT / "deploy" / "grafana" / "transferd-dashboard.json"
# The series Prometheus records itself for every target it scrapes.
SCRAPE_SERIES = {"up"}
PROMQL_WORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan"}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: the identifiers left once strings, label
    matchers, ranges and grouping clauses are gone, other than functions and keywords."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    expr = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    return set(re.findall(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()", expr)) - PROMQL_WORDS


def exposed(td) -> set[str]:
    """Every series name a live transferd exposes (histograms' _bucket, _sum and _count too)."""
    samples, types = scrape(td)
    return set(types) | {name for name, _, _ in samples}


def test_metric_names_are_read_from_promql():
    assert metric_names('sum by (le) (rate(a_bucket{x="y"}[5m])) / b > 2 * 1024 and on (i) c{d!~"e"}') == \
        {"a_bucket", "b", "c"}


def test_alert_rules_pass_promtool_and_read_only_what_transferd_exposes(transferd):
    result = subprocess.run([promtool(), "check", "rules", str(ALERTS)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    rules = [rule for group in yaml.safe_load(ALERTS.read_text())["groups"] for rule in group["rules"]]
    assert rules
    known = exposed(transferd) | SCRAPE_SERIES
    for rule in rules:
        assert metric_names(rule["expr"]) <= known, (rule["alert"], metric_names(rule["expr"]) - known)


def test_dashboard_parses_and_reads_only_what_transferd_exposes(transferd):
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    assert exprs
    known = exposed(transferd)
    read = set().union(*(metric_names(expr) for expr in exprs))
    assert read <= known, read - known
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            match = re.fullmatch(r"label_values\((\w+), *\w+\)", variable["query"]["query"])
            assert match and match.group(1) in known, variable
    # Every family of transferd's own has a panel.
    families = {name for name, kind in FAMILIES.items() if name.startswith("transferd_")}
    shown = {name.removesuffix("_bucket") for name in read}
    assert families <= shown, families - shown
