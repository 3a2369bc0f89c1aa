"""Schemathesis against a live transferd: every operation of openapi.yaml, generated from the spec
(examples, coverage, fuzzing and stateful phases), with every check (`--checks all`) and a fixed
seed. Any failure schemathesis reports fails this test, with its report in the message.

Safety: transfers the generated tasks start must never leave the machine. transferd runs with a
network policy that allows loopback only (`allow=127.0.0.0/8,::1/128;deny=0.0.0.0/0,::/0`): the
policy is enforced on the address actually connected to (proxies and redirects included), so a
generated URL or proxy anywhere else fails at once with `blocked_by_policy` (or `cannot_find_host`
when DNS has no answer) and no connection is made.

This file is also the schemathesis hooks module (`SCHEMATHESIS_HOOKS` points at it). The hooks
only adjust generated *valid* requests for rules a JSON Schema cannot state or for state the
server keeps between requests, so that a valid request stays valid:
  - `retry.backoff_initial_s` must not exceed `retry.backoff_max_s` (a comparison of two members);
  - an `Idempotency-Key` reused with another body is rightly 422 `idempotency_key_reused`: the key
    is made unique per body (same body, same key — so replays are still exercised);
  - `?wait=` long-polls up to 600 s on a task that does not complete: valid values are capped at
    0.5 s so the run stays short (values out of range are still sent, and refused);
  - a body taken from a blob or another task must name one that exists (422 `blob_not_found`,
    `task_not_found` otherwise): such references name a blob the test stored beforehand.
One reported failure is dropped (`filter_failure`): "deleted resource still available" after
`DELETE /v1/sessions/{identifier}`, whose invalidation is asynchronous by contract (202).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

# MARK: schemathesis hooks (registered only when schemathesis loads this file as its hooks module)

if __name__ == "_schemathesis_hooks":
    import schemathesis

    def _is_positive(case) -> bool:
        meta = case.meta
        return meta is not None and meta.generation.mode.is_positive

    def _fix_backoff(configuration) -> None:
        if not isinstance(configuration, dict):
            return
        retry = configuration.get("retry")
        if not isinstance(retry, dict):
            return
        initial, maximum = retry.get("backoff_initial_s"), retry.get("backoff_max_s")
        numbers = (int, float)
        initial_value = initial if isinstance(initial, numbers) and not isinstance(initial, bool) else 1
        max_value = maximum if isinstance(maximum, numbers) and not isinstance(maximum, bool) else 300
        if initial_value > max_value:
            if isinstance(maximum, numbers) and not isinstance(maximum, bool):
                retry["backoff_max_s"] = initial_value
            else:
                retry["backoff_initial_s"] = max_value

    def _existing_sources(creation) -> None:
        """Points a task's blob and task references at the blob the test stored."""
        blob = os.environ.get("TRANSFERD_SCHEMATHESIS_BLOB")
        if not blob or not isinstance(creation, dict):
            return
        request = creation.get("request")
        if isinstance(request, dict) and isinstance(request.get("body"), dict):
            if isinstance(request["body"].get("blob"), str):
                request["body"]["blob"] = blob
        upload = creation.get("upload")
        if isinstance(upload, dict) and (isinstance(upload.get("from_blob"), str) or isinstance(upload.get("from_task"), str)):
            creation["upload"] = {"from_blob": blob}

    def _adjust(case):
        operation = case.operation.label
        if _is_positive(case):
            if operation == "PUT /v1/sessions/{identifier}" and isinstance(case.body, dict):
                _fix_backoff(case.body.get("configuration"))
            if operation == "POST /v1/sessions/{identifier}/tasks":
                _existing_sources(case.body)
            if operation == "POST /v1/sessions/{identifier}/tasks:batch" and isinstance(case.body, dict):
                for creation in case.body.get("tasks") or []:
                    _existing_sources(creation)
            if operation == "POST /v1/sessions/{identifier}/tasks" and case.headers:
                key = case.headers.get("Idempotency-Key")
                if isinstance(key, str) and key:
                    body = json.dumps(case.body, sort_keys=True, default=str).encode()
                    digest = hashlib.sha256(body).hexdigest()[:16]
                    case.headers["Idempotency-Key"] = f"{key[:200]}.{digest}"
        if operation == "GET /v1/sessions/{identifier}/tasks/{task}" and case.query and "wait" in case.query:
            try:
                seconds = float(case.query["wait"])
            except (TypeError, ValueError):
                seconds = None
            if seconds is not None and 0.5 < seconds <= 600:
                case.query["wait"] = 0.5 if not isinstance(case.query["wait"], str) else "0.5"
        return case

    @schemathesis.hook
    def map_case(context, case):
        return _adjust(case)

    @schemathesis.hook
    def filter_failure(context, failure, case, response):
        # Invalidating a session is asynchronous by contract (PRODUCT.md: `DELETE` is 202, the
        # session is `invalidating` until its unfinished tasks finish, then `invalidated`, and it
        # stays readable while its events are read): reading it, or its tasks, after the 202 is not
        # a use after free. Deleting a task (204) is synchronous and stays checked.
        free = getattr(failure, "free", None)
        return not (failure.code == "ST301" and isinstance(free, str)
                    and re.fullmatch(r"DELETE /v1/sessions/[^/]+", free))

    @schemathesis.hook
    def before_add_examples(context, examples):
        # The examples phase does not run `map_case`: the spec's own examples get the same care.
        for case in examples:
            _adjust(case)

else:
    import pytest
    import requests

    from support.origin import Origin
    from support.transferd import REPO_ROOT, clean_environment

    SPEC_PATH = REPO_ROOT / "openapi.yaml"
    # A fixed seed, and examples per operation in the fuzzing and stateful phases (the coverage
    # phase's count follows from the schema): the whole run takes about a minute and a half on 2
    # cores. Both can be changed for a deeper exploration, e.g.
    # TRANSFERD_SCHEMATHESIS_MAX_EXAMPLES=300 TRANSFERD_SCHEMATHESIS_SEED=2 (about 6 minutes).
    SEED = int(os.environ.get("TRANSFERD_SCHEMATHESIS_SEED", "1"))
    MAX_EXAMPLES = int(os.environ.get("TRANSFERD_SCHEMATHESIS_MAX_EXAMPLES", "25"))
    LOOPBACK_ONLY = "allow=127.0.0.0/8,::1/128;deny=0.0.0.0/0,::/0"
    # schemathesis's defaults, plus 413: a request refused for its size (a `tasks:batch` of more
    # than 10,000 tasks is larger than `--max-body-bytes`) is rejected too.
    CONFIG = """
    [checks.negative_data_rejection]
    expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]
    """
    # Example values of openapi.yaml that the run seeds, so that examples reach real resources.
    EXAMPLE_SESSION = "com.example.app.downloads"
    EXAMPLE_TASK = "report-2026-11"

    def schemathesis_command() -> list[str]:
        for name in ("st", "schemathesis"):
            path = shutil.which(name)
            if path:
                return [path]
        candidate = Path(sys.executable).with_name("st")
        if candidate.exists():
            return [str(candidate)]
        pytest.fail("schemathesis is not installed: run scripts/install-deps.sh test", pytrace=False)

    def seed(td, origin: Origin) -> str:
        """The session and task the spec's examples name, plus a finished data task, so that the
        examples phase reaches a real session, task, file and body; and a blob for upload tasks
        (its id is returned)."""
        response = td.put(f"/v1/sessions/{EXAMPLE_SESSION}", json={"mode": "default"})
        assert response.status_code == 201, response.text
        tasks = [
            {"id": EXAMPLE_TASK, "kind": "download", "request": {"url": origin.url("/bytes/4096")}},
            {"id": "seed-data", "kind": "data", "request": {"url": origin.url("/bytes/512")}},
            {"id": "seed-suspended", "kind": "download", "start": False,
             "request": {"url": origin.url("/bytes/1024")}},
        ]
        response = td.post(f"/v1/sessions/{EXAMPLE_SESSION}/tasks:batch", json={"tasks": tasks})
        assert response.status_code == 201, response.text
        for task in (EXAMPLE_TASK, "seed-data"):
            done = td.get(f"/v1/sessions/{EXAMPLE_SESSION}/tasks/{task}?wait=10").json()
            assert done["state"] == "completed" and done["error"] is None, done
        response = td.post("/v1/blobs", data=b"schemathesis\n" * 100)
        assert response.status_code == 201, response.text
        return response.json()["id"]

    def test_schemathesis_finds_no_failures(start_transferd, api_token, tmp_path):
        command = schemathesis_command()
        with Origin() as origin:
            td = start_transferd("--network-policy", LOOPBACK_ONLY, api_token=api_token)
            blob = seed(td, origin)
            config = tmp_path / "schemathesis.toml"
            config.write_text("\n".join(line.strip() for line in CONFIG.strip().splitlines()) + "\n")
            argv = command + [
                "--config-file", str(config),
                "run", str(SPEC_PATH),
                "--url", td.base_url,
                "--header", f"Authorization: Bearer {api_token}",
                "--checks", "all",
                "--seed", str(SEED),
                "--max-examples", str(MAX_EXAMPLES),
                # One worker: generation is CPU-bound under the GIL anyway, and concurrent
                # `ast.parse` calls in Hypothesis can crash CPython 3.11 ("AST constructor
                # recursion depth mismatch"), seen here with 2 workers.
                "--workers", "1",
                "--request-timeout", "30",
                "--generation-database", "none",
                "--no-color",
            ]
            env = clean_environment({"SCHEMATHESIS_HOOKS": str(Path(__file__).resolve()),
                                     "TRANSFERD_SCHEMATHESIS_BLOB": blob})
            started = time.monotonic()
            # cwd: schemathesis keeps a crash cache and reports in the working directory.
            result = subprocess.run(argv, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                                    capture_output=True, text=True, timeout=900)
            elapsed = time.monotonic() - started
            output = result.stdout + result.stderr
            (tmp_path / "schemathesis.txt").write_text(output)
            print(output[-6000:])  # shown with `pytest -rP`: what was covered, and the warnings
            assert td.running, f"transferd died during the run:\n{td.output()[-5000:]}"
            assert result.returncode == 0, (
                f"schemathesis reported failures (exit {result.returncode}, {elapsed:.0f}s):\n{output[-20000:]}")
            assert "No issues found" in output or " passed" in output, output[-5000:]

    def test_a_far_future_begin_at_does_not_crash_the_service(start_transferd, api_token):
        td = start_transferd(api_token=api_token)
        assert td.put("/v1/sessions/far-future", json={"mode": "default"}).status_code == 201
        body = {"kind": "data", "begin_at": "2700-01-01T00:00:00Z", "request": {"url": "http://127.0.0.1:9/"}}
        try:
            response = td.post("/v1/sessions/far-future/tasks", json=body)
        except requests.ConnectionError:
            response = None
        time.sleep(0.5)
        assert td.running, "transferd died"
        assert response is not None and response.status_code in (201, 422), response
