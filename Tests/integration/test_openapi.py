"""openapi.yaml: a valid OpenAPI 3.1 document that agrees with the running server — every route the
server answers is documented, every documented operation is answered as documented (status,
security, body schema, headers), errors use the Problem schema, and every problem `code` the
sources use is documented, under the status it comes with. (Test_schemathesis.py then explores the
whole API from the document.)"""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path

import jsonschema
import pytest
import yaml
from openapi_spec_validator import validate

from support.api import wait_for
from support.origin import Origin
from support.transferd import REPO_ROOT

SPEC_PATH = REPO_ROOT / "openapi.yaml"
PROBLEM_REF = "#/components/schemas/Problem"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")

# Every route without path parameters the server answers today.
SERVER_ROUTES = ["/healthz", "/readyz", "/metrics", "/v1", "/v1/whoami", "/v1/sessions", "/v1/stats"]
SOURCES = REPO_ROOT / "Sources"

# Routes and problem codes of work in progress that the document does not cover yet, as
# ("GET", "/v1/…") and (409, "code"). Remove entries as they are documented.
PENDING_ROUTES: set[tuple[str, str]] = set()
PENDING_CODES: set[tuple[int, str]] = set()
# The web console's page and files (ConsoleRoutes.swift): HTML for a browser, not part of the API
# the document describes (docs/CONSOLE.md).
CONSOLE_ROUTES = {("GET", "/ui"), ("GET", "/ui/"), ("GET", "/ui/{asset}")}


@pytest.fixture(scope="module")
def spec() -> dict:
    with open(SPEC_PATH) as f:
        return yaml.safe_load(f)


def resolve(spec: dict, node: dict) -> dict:
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), f"only local references are used: {ref}"
        target = spec
        for part in ref[2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


def operations(spec: dict):
    for path, item in spec["paths"].items():
        for method in METHODS:
            if method in item:
                yield path, method, item[method]


def schema_validator(spec: dict, schema: dict) -> jsonschema.Validator:
    """A JSON Schema 2020-12 validator for `schema` whose local `$ref`s resolve in the document."""
    root = dict(schema)
    root["components"] = spec["components"]
    return jsonschema.Draft202012Validator(root, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def media_type(content_type: str) -> str:
    return content_type.split(";")[0].strip().lower()


def documented_content(spec: dict, response_spec: dict, content_type: str) -> dict | None:
    for key, value in (response_spec.get("content") or {}).items():
        if media_type(key) == media_type(content_type):
            return value
    return None


# MARK: the document


def test_openapi_document_is_valid(spec):
    assert spec["openapi"] == "3.1.0"
    validate(spec)


def test_document_basics(spec):
    assert spec["info"]["title"] == "transferd"
    assert "http://127.0.0.1:8080" in [server["url"] for server in spec["servers"]]
    scheme = spec["components"]["securitySchemes"]["bearerAuth"]
    assert scheme["type"] == "http" and scheme["scheme"].lower() == "bearer"
    problem = spec["components"]["schemas"]["Problem"]
    assert set(problem["required"]) >= {"type", "title", "status", "detail", "code"}
    assert set(problem["properties"]) >= {"type", "title", "status", "detail", "code"}


def test_every_operation_has_a_unique_operation_id(spec):
    ids = [op.get("operationId") for _, _, op in operations(spec)]
    assert all(ids), "operation without operationId"
    assert len(ids) == len(set(ids)), ids


def test_error_responses_use_the_problem_schema(spec):
    checked = 0
    for path, method, op in operations(spec):
        for status, response in op["responses"].items():
            if not (str(status).startswith("4") or status == "default"):
                continue
            resolved = resolve(spec, response)
            content = resolved.get("content") or {}
            assert "application/problem+json" in content, f"{method.upper()} {path} {status} is not problem+json"
            assert content["application/problem+json"]["schema"] == {"$ref": PROBLEM_REF}, (path, method, status)
            if str(status) == "401":
                assert "WWW-Authenticate" in resolved.get("headers", {}), f"{path} 401 without WWW-Authenticate"
            checked += 1
    for name, response in spec["components"]["responses"].items():
        content = response.get("content") or {}
        assert content.get("application/problem+json", {}).get("schema") == {"$ref": PROBLEM_REF}, name
    assert checked, "no error responses documented at all"
    statuses = {str(s) for _, _, op in operations(spec) for s in op["responses"]}
    assert "401" in statuses


def test_v1_operations_require_the_bearer_token_and_operational_ones_do_not(spec):
    for path, method, op in operations(spec):
        security = op.get("security", spec.get("security", []))
        needs_token = any("bearerAuth" in requirement for requirement in security)
        if path == "/v1" or path.startswith("/v1/"):
            assert needs_token, f"{method.upper()} {path} does not require bearerAuth"
            assert {} not in security, f"{method.upper()} {path} allows anonymous access"
            assert "401" in op["responses"], f"{method.upper()} {path} does not document 401"
        else:
            assert not needs_token, f"{method.upper()} {path} should not need a token"


def refusal_statuses(text: str) -> dict[str, int]:
    """The HTTP status of each `Refusal.Reason`, read from the one table in the API that maps them
    (`case .invalid: 422`)."""
    return {reason: int(status) for reason, status in re.findall(r'case \.(\w+): (\d{3})', text)}


def source_problems() -> set[tuple[int, str]]:
    """Every (status, code) a problem in the sources is made with: `HTTPProblem(status, "code"…`,
    `Refusal(.reason, "code"…` (its status from the API's table), `Refusal.invalid(…)` (422
    `validation_failed`, or its `code:`), `Refusal.notFound` (404 `not_found`) and `HTTPProblem.bad`
    (400 `bad_request`)."""
    text = "\n".join(path.read_text() for path in SOURCES.rglob("*.swift"))
    statuses = refusal_statuses(text)
    found = {(int(status), code) for status, code in
             re.findall(r'HTTPProblem\(\s*(\d{3})\s*,\s*"([a-z0-9_]+)"', text)}
    for reason, code in re.findall(r'Refusal\(\s*\.(\w+)\s*,\s*"([a-z0-9_]+)"', text):
        assert reason in statuses, f"Refusal.Reason.{reason} has no HTTP status in the API"
        found.add((statuses[reason], code))
    for call in re.findall(r'Refusal\.invalid\((.*)', text):
        named = re.search(r'code:\s*"([a-z0-9_]+)"', call)
        found.add((422, named.group(1) if named else "validation_failed"))
    if "Refusal.notFound(" in text or "static func notFound" in text:
        found.add((404, "not_found"))
    if "HTTPProblem.bad(" in text or "static func bad(" in text:
        found.add((400, "bad_request"))
    return found


def documented_descriptions(spec: dict) -> dict[str, str]:
    """The descriptions of every documented response, joined per status ("default" included)."""
    texts: dict[str, list[str]] = {}
    for _, _, op in operations(spec):
        for status, response in op["responses"].items():
            texts.setdefault(str(status), []).append(resolve(spec, response).get("description", ""))
    return {status: "\n".join(parts) for status, parts in texts.items()}


def test_problem_codes_cover_every_code_in_the_sources(spec):
    problems = source_problems()
    codes = {code for _, code in problems}
    assert {"not_found", "unauthorized", "method_not_allowed", "validation_failed", "unknown_field",
            "mode_conflict", "task_exists", "range_not_satisfiable"} <= codes, codes
    validator = schema_validator(spec, {"$ref": "#/components/schemas/KnownProblemCode"})
    pending = {code for _, code in PENDING_CODES}
    undocumented = sorted(code for code in codes - pending if not validator.is_valid(code))
    assert not undocumented, f"problem codes used in Sources but not in openapi.yaml: {undocumented}"
    assert not validator.is_valid("no_such_code")


def test_every_problem_code_is_documented_under_its_status(spec):
    """A code must be named in the description of a response of its status (or of `default`, which
    lists what the HTTP layer answers), so a client reading one operation knows what to expect."""
    descriptions = documented_descriptions(spec)
    missing = []
    for status, code in sorted(source_problems()):
        if (status, code) in PENDING_CODES:
            continue
        named = re.compile(rf"`{re.escape(code)}`")
        if not (named.search(descriptions.get(str(status), "")) or
                re.search(rf"{status}\s+`{re.escape(code)}`", descriptions.get("default", ""))):
            missing.append(f"{status} {code}")
    assert not missing, f"problem codes not documented under their status: {missing}"


def swift_routes() -> set[tuple[str, str]]:
    """(method, pattern) of every `table.add` (or `addStreamed`) in the sources; an interpolated segment such as
    `\\(action)` is expanded from the `for (action, …) in [("reset", …), …]` loop around it."""
    routes = set()
    for path in SOURCES.rglob("*.swift"):
        text = path.read_text()
        for method, pattern in re.findall(r'table\.add(?:Streamed)?\(\s*"([A-Z]+)"\s*,\s*"([^"]+)"', text):
            patterns = [pattern]
            while any("\\(" in p for p in patterns):
                expanded = []
                for p in patterns:
                    match = re.search(r"\\\((\w+)\)", p)
                    if not match:
                        expanded.append(p)
                        continue
                    loop = re.search(r"for\s*\(\s*" + match.group(1) + r"\b[^)]*\)\s*in\s*\[(.*?)\]", text, re.S)
                    assert loop, f"{path.name}: cannot expand {p}"
                    values = re.findall(r'\(\s*"([^"]+)"', loop.group(1))
                    assert values, f"{path.name}: no values for {match.group(0)}"
                    expanded += [p.replace(match.group(0), value, 1) for value in values]
                patterns = expanded
            routes.update((method, p) for p in patterns)
    return routes


def test_every_route_in_the_sources_is_documented_and_nothing_else(spec):
    routes = swift_routes()
    assert ("GET", "/v1") in routes and ("PUT", "/v1/sessions/{identifier}") in routes, routes
    documented = {(method.upper(), path) for path, method, _ in operations(spec)}
    assert CONSOLE_ROUTES <= routes, "the console's routes moved: update CONSOLE_ROUTES"
    undocumented = sorted(routes - documented - PENDING_ROUTES - CONSOLE_ROUTES)
    assert not undocumented, f"routes the server answers that openapi.yaml does not document: {undocumented}"
    # HEAD is answered wherever GET is, so a documented HEAD needs a GET route.
    served = routes | {("HEAD", path) for method, path in routes if method == "GET"}
    unserved = sorted(documented - served)
    assert not unserved, f"operations openapi.yaml documents that no route serves: {unserved}"


def test_examples_match_their_schemas(spec):
    """Every example in the document is valid against the schema it illustrates."""
    checked = 0
    for path, method, op in operations(spec):
        for media in (op.get("requestBody", {}).get("content") or {}).values():
            validator = schema_validator(spec, media["schema"])
            samples = [media["example"]] if "example" in media else []
            samples += [example["value"] for example in (media.get("examples") or {}).values()]
            for sample in samples:
                validator.validate(sample)
                checked += 1
        for status, response in op["responses"].items():
            for media in (resolve(spec, response).get("content") or {}).values():
                if "example" in media and "schema" in media:
                    schema_validator(spec, media["schema"]).validate(media["example"])
                    checked += 1
    for name, parameter in spec["components"]["parameters"].items():
        if "example" in parameter:
            schema_validator(spec, parameter["schema"]).validate(parameter["example"])
            checked += 1
    for name, schema in spec["components"]["schemas"].items():
        for sample in schema.get("examples", []):
            schema_validator(spec, {"$ref": f"#/components/schemas/{name}"}).validate(sample)
            checked += 1
    assert checked >= 10, checked


def test_schemas_refuse_what_the_server_refuses(spec):
    """Spot checks of the request schemas against the server's validation rules."""
    creation = schema_validator(spec, {"$ref": "#/components/schemas/TaskCreation"})
    ok = {"kind": "data", "request": {"url": "http://127.0.0.1:9/x"}}
    assert creation.is_valid(ok)
    assert creation.is_valid({**ok, "id": "a.b_c-1", "description": None, "priority": None})
    upload = {"kind": "upload", "request": {"url": "http://a/"}, "upload": {"from_blob": "b_1"}}
    assert creation.is_valid(upload)
    assert creation.is_valid({**upload, "upload": None, "request": {"url": "http://a/", "body": {"blob": "b_1"}},
                              "multipart": {"fields": {"a": "b"}}})
    # Rules between members (a body for upload tasks, download-only members…) are prose in the
    # document, for code generators; test_what_the_schema_refuses_the_server_refuses holds the
    # server to them.
    for bad in ({**upload, "upload": {}}, {**upload, "upload": {"from_blob": "b_1", "from_task": "t"}},
                {**upload, "multipart": {"mime_type": "image"}},
                {**ok, "id": ".."}, {**ok, "id": "a/b"}, {**ok, "priority": 1.5},
                {**ok, "checksum": {"sha256": "ab"}},
                {**ok, "request": {"url": "file:///etc/passwd"}}, {**ok, "request": {"url": "http://a:65536/"}},
                {**ok, "request": {"url": "http://a/", "headers": {"Host": "b"}}},
                {**ok, "request": {"url": "http://a/", "headers": {"X": "a\r\nB: c"}}},
                {**ok, "request": {"url": "http://a/", "body": {"text": "a", "base64": "YQ=="}}},
                {**ok, "request": {"url": "http://a/", "body": {"base64": "YQ="}}},
                {**ok, "begin_at": "tomorrow"}, {**ok, "unknown": 1}):
        assert not creation.is_valid(bad), bad
    configuration = schema_validator(spec, {"$ref": "#/components/schemas/SessionConfiguration"})
    assert configuration.is_valid({"credentials": [{"host": "h", "scheme": "bearer", "token": "t"}],
                                   "tls": {"client_cert_file": "/c", "client_key_file": "/k"}, "proxy": None})
    for bad in ({"credentials": [{"host": "h", "scheme": "bearer", "token": "t", "username": "u"}]},
                {"credentials": [{"host": "h", "scheme": "basic", "username": "u"}]},
                {"tls": {"client_cert_file": "c"}}, {"tls": {"pinned_public_key": "abc"}},
                {"proxy": {"url": "ftp://p"}}, {"max_connections_per_host": 0}, {"retry": {"max_attempts": 1.5}},
                {"cookies": {"accept": "sometimes"}}, {"timeout_request_s": 0.5}, {"unknown": True}):
        assert not configuration.is_valid(bad), bad


# MARK: the document against the running server


@pytest.mark.parametrize("route", SERVER_ROUTES)
def test_every_server_route_is_documented(spec, transferd, route):
    response = transferd.get(route)
    assert response.status_code == 200, f"the server does not answer {route}"
    assert route in spec["paths"], f"{route} is not in openapi.yaml"
    assert "get" in spec["paths"][route], f"GET {route} is not in openapi.yaml"


def test_every_documented_operation_is_answered_as_documented(spec, transferd):
    for path, method, op in operations(spec):
        if "{" in path:
            continue  # templated paths are exercised by the tests of their resource
        response = transferd.request(method.upper(), path)
        status = str(response.status_code)
        assert status in op["responses"] or "default" in op["responses"], (path, method, status)
        assert response.status_code != 404, f"{method.upper()} {path} is documented but not served"
        assert response.status_code < 400, f"{method.upper()} {path} -> {status}: {response.text}"
        documented = resolve(spec, op["responses"].get(status, op["responses"].get("default")))
        content = documented_content(spec, documented, response.headers.get("Content-Type", ""))
        assert content is not None, f"{method.upper()} {path}: {response.headers.get('Content-Type')} not documented"
        if media_type(response.headers["Content-Type"]).endswith("json"):
            schema_validator(spec, content["schema"]).validate(response.json())
        for name in documented.get("headers", {}):
            assert name in response.headers, f"{method.upper()} {path}: documented header {name} missing"


def test_documented_security_matches_the_server(spec, transferd):
    for path, method, op in operations(spec):
        if "{" in path:
            continue
        security = op.get("security", spec.get("security", []))
        needs_token = any("bearerAuth" in requirement for requirement in security)
        response = transferd.request(method.upper(), path, token=None)
        if needs_token:
            assert response.status_code == 401, f"{method.upper()} {path} answered {response.status_code} without a token"
            documented = resolve(spec, op["responses"]["401"])
            schema_validator(spec, documented["content"]["application/problem+json"]["schema"]).validate(response.json())
        else:
            assert response.status_code != 401, f"{method.upper()} {path} wants a token but documents none"


def test_server_problems_match_the_problem_schema(spec, transferd):
    validator = schema_validator(spec, {"$ref": PROBLEM_REF})
    for response in (transferd.get("/v1", token=None), transferd.get("/v1", token="wrong"),
                     transferd.get("/no/such/path"), transferd.get("/v1/no/such/path"),
                     transferd.post("/healthz"), transferd.get("/metrics?" + "x" * 9000)):
        assert response.status_code >= 400
        assert media_type(response.headers["Content-Type"]) == "application/problem+json"
        validator.validate(response.json())


# MARK: templated operations, answered as documented


def find_operation(spec: dict, method: str, url_path: str) -> tuple[str, dict]:
    """The documented operation a concrete request path belongs to (literal segments win)."""
    segments = url_path.split("?")[0].split("/")
    best = None
    for template, item in spec["paths"].items():
        parts = template.split("/")
        if len(parts) != len(segments):
            continue
        if method.lower() not in item and not (method == "HEAD" and "get" in item):
            continue  # HEAD is answered wherever GET is
        literals = 0
        for part, segment in zip(parts, segments):
            if part.startswith("{") and part.endswith("}"):
                continue
            if part != segment:
                break
            literals += 1
        else:
            if best is None or literals > best[0]:
                best = (literals, template, item.get(method.lower()) or item["get"])
    assert best, f"{method} {url_path} matches no documented operation"
    return best[1], best[2]


def media_matches(documented: str, actual: str) -> bool:
    documented, actual = media_type(documented), media_type(actual)
    if documented == "*/*" or documented == actual:
        return True
    return documented.endswith("/*") and actual.startswith(documented[:-1])


def key_of(documented: dict, media: dict) -> str:
    return next(key for key, value in documented["content"].items() if value is media)


class Checker:
    """Sends requests and checks each response against openapi.yaml: its status is documented for
    the operation, its body matches the documented schema for its media type, the documented
    required headers are present and every documented header present matches its schema, and a
    problem's `code` is one the response's description names."""

    def __init__(self, spec: dict, td):
        self.spec, self.td = spec, td
        self.seen: set[tuple[str, str, int]] = set()

    def __call__(self, method: str, path: str, expect: int, code: str | None = None, **kwargs):
        response = self.td.request(method, path, **kwargs)
        template, op = find_operation(self.spec, method, path)
        where = f"{method} {path} -> {response.status_code}"
        assert response.status_code == expect, f"{where} (expected {expect}): {response.text[:500]}"
        status = str(response.status_code)
        assert status in op["responses"], f"{where}: status not documented for {method} {template}"
        documented = resolve(self.spec, op["responses"][status])
        for name, header in documented.get("headers", {}).items():
            header = resolve(self.spec, header)
            if header.get("required"):
                assert name in response.headers, f"{where}: documented header {name} missing"
            if name in response.headers:
                jsonschema.validate(response.headers[name], header["schema"])
        content_type = response.headers.get("Content-Type")
        if method != "HEAD" and response.content:
            assert content_type, f"{where}: a body without Content-Type"
            media = next((value for key, value in (documented.get("content") or {}).items()
                          if media_matches(key, content_type)), None)
            assert media is not None, f"{where}: {content_type} is not documented"
            if media_type(content_type).endswith("json") and media_type(key_of(documented, media)).endswith("json"):
                schema_validator(self.spec, media["schema"]).validate(response.json())
        else:
            assert not documented.get("content") or method == "HEAD" or status == "204" or expect == 200, where
        if response.status_code >= 400 and method != "HEAD":
            problem = response.json()
            assert problem["status"] == response.status_code, where
            assert f"`{problem['code']}`" in documented["description"], (
                f"{where}: code {problem['code']} is not named in the documented {status} response")
            if code:
                assert problem["code"] == code, f"{where}: {problem}"
        self.seen.add((method, template, response.status_code))
        return response


def test_sessions_and_tasks_are_answered_as_documented(spec, transferd):
    check = Checker(spec, transferd)
    sid, other = "com.example.openapi", "com.example.openapi.other"
    session = f"/v1/sessions/{sid}"
    with Origin() as origin:
        # sessions
        check("PUT", session, 201, json={"mode": "default", "configuration": {
            "credentials": [{"host": "h.example", "scheme": "basic", "username": "u", "password": "p"}],
            "retry": {"on_http_status": [503]}, "tls": {"ca_file": None}, "proxy": None}})
        echoed = check("PUT", session, 200).json()  # a re-attach without configuration keeps it
        assert echoed["configuration"]["credentials"][0]["host"] == "h.example"
        reattached = check("PUT", session, 200, json={"configuration": {
            "credentials": [{"host": "h.example", "scheme": "bearer", "token": "t"}]}}).json()
        assert reattached["configuration"]["credentials"][0]["token"] == "<redacted>"
        check("PUT", session, 409, "mode_conflict", json={"mode": "ephemeral"})
        check("PUT", "/v1/sessions/" + urllib.parse.quote("not valid!"), 422, "validation_failed")
        check("PUT", session, 422, "unknown_field", json={"mood": "default"})
        check("PUT", session, 422, "validation_failed", json={"configuration": {"max_concurrent_tasks": 0}})
        check("PUT", session, 400, "invalid_json", data=b"{", headers={"Content-Type": "application/json"})
        check("PUT", session, 415, "unsupported_media_type", data=b"<x/>", headers={"Content-Type": "application/xml"})
        check("PUT", f"/v1/sessions/{other}", 201, json={"mode": "ephemeral"})
        page = check("GET", "/v1/sessions?limit=1", 200).json()
        assert page["next"] and len(page["sessions"]) == 1
        assert check("GET", f"/v1/sessions?limit=1&after={page['next']}", 200).json()["sessions"][0]["identifier"] == other
        check("GET", "/v1/sessions?limit=0", 400, "invalid_parameter")
        check("GET", "/v1/sessions?page=2", 422, "unknown_parameter")
        check("GET", session, 200)
        check("GET", "/v1/sessions/no.such.session", 404, "not_found")
        check("POST", f"{session}/reset", 200)
        check("POST", f"{session}/flush", 200)
        delegated = check("PUT", f"/v1/sessions/{other}", 200, json={
            "mode": "ephemeral", "delegate": {"url": origin.url("/echo"), "events": ["task.completed"]}}).json()
        assert delegated["delegate"]["secret"].startswith("whsec_"), delegated
        assert "secret" not in check("GET", f"/v1/sessions/{other}", 200).json()["delegate"]
        check("PUT", f"/v1/sessions/{other}", 422, "validation_failed",
              json={"mode": "ephemeral", "delegate": {"url": origin.url("/echo"), "secret": "whsec_c2hvcnQ="}})
        check("PUT", f"/v1/sessions/{other}", 422, "unsupported_url",
              json={"mode": "ephemeral", "delegate": {"url": "ftp://hooks.example/"}})
        assert check("PUT", f"/v1/sessions/{other}", 200, json={"mode": "ephemeral", "delegate": None}).json()["delegate"] is None

        # blobs
        blob = check("POST", "/v1/blobs", 201, data=b"x" * 1000,
                     headers={"Content-Type": "application/octet-stream"}).json()
        assert blob["size"] == 1000
        check("GET", f"/v1/blobs/{blob['id']}", 200)
        check("HEAD", f"/v1/blobs/{blob['id']}", 200)
        check("GET", "/v1/blobs/b_nosuchblob", 404, "not_found")
        empty = check("POST", "/v1/blobs", 201).json()
        check("DELETE", f"/v1/blobs/{empty['id']}", 204)
        check("DELETE", f"/v1/blobs/{empty['id']}", 404, "not_found")

        # tasks
        tasks = f"{session}/tasks"
        download = {"kind": "download", "request": {"url": origin.url("/bytes/10000")}}
        created = check("POST", tasks, 201, json={**download, "id": "dl"}, headers={"Idempotency-Key": "k-1"})
        assert created.headers["Location"] == f"{tasks}/dl" and "Idempotent-Replayed" not in created.headers
        replayed = check("POST", tasks, 201, json={**download, "id": "dl"}, headers={"Idempotency-Key": "k-1"})
        assert replayed.headers["Idempotent-Replayed"] == "true" and replayed.json()["id"] == "dl"
        check("POST", tasks, 422, "idempotency_key_reused", json={**download, "id": "dl2"}, headers={"Idempotency-Key": "k-1"})
        check("POST", tasks, 400, "invalid_idempotency_key", json=download, headers={"Idempotency-Key": "a b"})
        check("POST", tasks, 409, "task_exists", json={**download, "id": "dl"})
        check("POST", tasks, 422, "unsupported_url", json={"kind": "data", "request": {"url": "gopher://x/"}})
        check("POST", tasks, 422, "bad_url", json={"kind": "data", "request": {"url": "not a url"}})
        check("POST", tasks, 422, "unknown_field", json={**download, "colour": "red"})
        check("POST", tasks, 403, "path_not_allowed", json={**download, "download": {"destination": "/etc/x"}})
        check("POST", "/v1/sessions/no.such.session/tasks", 404, "not_found", json=download)
        check("POST", tasks, 201, json={"id": "data", "kind": "data", "request": {
            "url": origin.url("/echo"), "method": "POST", "headers": {"X-A": "1"}, "body": {"base64": "aGk="}}})
        check("POST", tasks, 201, json={"id": "held", "kind": "download", "start": False,
                                        "request": {"url": origin.url("/bytes/100")}})
        batch = check("POST", f"{tasks}:batch", 201, json={"tasks": [download, {**download, "priority": 0.1}]}).json()
        assert len(batch["tasks"]) == 2
        problem = check("POST", f"{tasks}:batch", 422, "validation_failed",
                        json={"tasks": [download, {**download, "priority": 2}]}).json()
        assert problem["field"] == "tasks[1].priority"
        check("POST", f"{tasks}:batch", 422, "validation_failed", json={"tasks": []})
        uploaded = check("POST", tasks, 201, json={
            "id": "up", "kind": "upload", "request": {"url": origin.url("/upload"), "method": "POST"},
            "upload": {"from_blob": blob["id"]}, "multipart": {"field": "f", "fields": {"k": "v"}}}).json()
        assert uploaded["request"]["body"] == {"blob": blob["id"]} and uploaded["multipart"]["field"] == "f"
        check("POST", tasks, 201, json={"id": "up-held", "kind": "upload", "start": False,
                                        "request": {"url": origin.url("/upload"), "body": {"blob": blob["id"]}}})
        check("DELETE", f"/v1/blobs/{blob['id']}", 409, "blob_in_use")
        check("POST", tasks, 422, "blob_not_found", json={"kind": "upload", "request": {"url": origin.url("/upload")},
                                                          "upload": {"from_blob": "b_nosuchblob"}})
        check("POST", tasks, 422, "task_not_found", json={"kind": "upload", "request": {"url": origin.url("/upload")},
                                                          "upload": {"from_task": "nope"}})
        check("POST", tasks, 403, "path_not_allowed", json={"kind": "upload", "request": {"url": origin.url("/upload")},
                                                            "upload": {"from_file": "/etc/hostname"}})
        check("POST", tasks, 422, "validation_failed", json={"kind": "upload", "request": {"url": origin.url("/upload")}})

        done = check("GET", f"{tasks}/dl?wait=20", 200).json()
        assert done["state"] == "completed" and done["result"]["size"] == 10000, done
        assert check("GET", f"{tasks}/data?wait=20", 200).json()["state"] == "completed"
        check("GET", f"{tasks}/dl?wait=601", 422, "validation_failed")
        check("GET", f"{tasks}/nope", 404, "not_found")
        listed = check("GET", f"{tasks}?limit=2", 200).json()
        assert len(listed["tasks"]) == 2 and listed["next"]
        check("GET", f"{tasks}?limit=2&after={listed['next']}&kind=download&state=completed", 200)
        check("GET", f"{tasks}?state=sleeping", 422, "validation_failed")
        check("GET", f"{tasks}?after=-1", 400, "invalid_parameter")

        # content
        check("GET", f"{tasks}/dl/file", 200)
        check("HEAD", f"{tasks}/dl/file", 200)
        ranged = check("GET", f"{tasks}/dl/file", 206, headers={"Range": "bytes=10-19"})
        assert ranged.headers["Content-Range"] == "bytes 10-19/10000" and len(ranged.content) == 10
        check("HEAD", f"{tasks}/dl/file", 206, headers={"Range": "bytes=-5"})
        refused = check("GET", f"{tasks}/dl/file", 416, "range_not_satisfiable", headers={"Range": "bytes=10000-"})
        assert refused.headers["Content-Range"] == "bytes */10000"
        check("GET", f"{tasks}/dl/body", 409, "not_a_data_task")
        check("GET", f"{tasks}/data/body", 200)
        check("GET", f"{tasks}/data/body", 206, headers={"Range": "bytes=0-0"})
        check("GET", f"{tasks}/data/file", 409, "not_a_download")
        check("GET", f"{tasks}/up?wait=20", 200)
        check("GET", f"{tasks}/up/body", 200)
        check("POST", tasks, 422, "file_not_available", json={"kind": "upload", "request": {"url": origin.url("/upload")},
                                                              "upload": {"from_task": "data"}})
        check("POST", tasks, 201, json={"kind": "upload", "request": {"url": origin.url("/upload")},
                                        "upload": {"from_task": "dl"}})
        check("GET", f"{tasks}/held/file", 409, "file_not_available")

        # changes and actions
        check("PATCH", f"{tasks}/dl", 200, json={"priority": 1, "description": "first"})
        check("PATCH", f"{tasks}/dl", 200, json={"description": None})
        check("PATCH", f"{tasks}/dl", 422, "validation_failed", json={"priority": "high"})
        check("PATCH", f"{tasks}/dl", 400, "invalid_json")
        check("POST", f"{tasks}/held/resume?now=1", 422, "unknown_parameter")
        check("POST", f"{tasks}/held/suspend", 200)
        check("POST", f"{tasks}/held/cancel", 422, "unknown_field", json={"produce": True})
        cancelled = check("POST", f"{tasks}/held/cancel", 200, json={"produce_resume_data": True}).json()
        assert cancelled["state"] == "completed" and cancelled["error"]["code"] == "cancelled", cancelled
        check("POST", f"{tasks}/held/resume", 200)
        check("GET", f"{tasks}/held/body", 409, "not_a_data_task")
        check("DELETE", f"{tasks}/held", 204)
        check("DELETE", f"{tasks}/held", 404, "not_found")
        check("GET", "/v1/stats", 200)
        check("GET", "/v1/stats?x=1", 422, "unknown_parameter")

        # events and deliveries
        events = f"{session}/events"
        page = check("GET", f"{events}?after=0&limit=3", 200).json()
        assert [e["seq"] for e in page["events"]] == [1, 2, 3] and page["next"] == "3"
        first = page["events"][0]["id"]
        assert check("GET", f"{events}?after=1000000&wait=0.2", 200).json()["events"] == []
        check("GET", f"{events}?wait=601", 422, "validation_failed")
        check("GET", f"{events}?since=1", 422, "unknown_parameter")
        assert check("POST", f"{events}/ack", 200, json={"through": 2}).json()["acked_through"] == 2
        check("POST", f"{events}/ack", 422, "validation_failed", json={})
        check("POST", f"{events}/ack", 422, "unknown_field", json={"through": 2, "until": 3})
        check("POST", f"{events}/ack", 400, "invalid_json", data=b"{", headers={"Content-Type": "application/json"})
        check("POST", f"{events}/{first}/redeliver", 409, "no_delegate")
        check("GET", f"{session}/deliveries", 200)
        check("GET", f"{session}/deliveries?after=x", 400, "invalid_parameter")
        hooked = "com.example.openapi.hooked"
        check("PUT", f"/v1/sessions/{hooked}", 201, json={"mode": "default", "delegate": {"url": origin.url("/echo")}})
        check("POST", f"/v1/sessions/{hooked}/tasks", 201, json={**download, "start": False})
        created = check("GET", f"/v1/sessions/{hooked}/events?after=0", 200).json()["events"][0]
        check("POST", f"/v1/sessions/{hooked}/events/{created['id']}/redeliver", 202)
        check("POST", f"/v1/sessions/{hooked}/events/evt_nope/redeliver", 404, "not_found")
        attempts = wait_for(lambda: check("GET", f"/v1/sessions/{hooked}/deliveries?limit=1", 200).json()["deliveries"])
        assert attempts[0]["event"] == created["id"]

        # invalidation: a running task keeps the session `invalidating`; new tasks are refused
        check("POST", tasks, 201, json={"id": "slow", "kind": "data",
                                        "request": {"url": origin.url("/bytes/100000?rate=2000")}})
        check("DELETE", f"{session}?mode=later", 422, "validation_failed")
        assert check("DELETE", session, 202).json()["state"] == "invalidating"
        check("POST", tasks, 409, "session_invalidated", json=download)
        check("PUT", session, 409, "session_invalidated")
        check("DELETE", f"{session}?mode=cancel", 202)
        check("DELETE", "/v1/sessions/no.such.session", 404, "not_found")
        # An invalidated session's event stream ends after its last event.
        wait_for(lambda: check("GET", session, 200).json()["state"] == "invalidated")
        stream = check("GET", f"{events}?after=0", 200, headers={"Accept": "text/event-stream"}, stream=True)
        assert stream.text.rstrip().endswith('"data":{}}') and "event: session.invalidated" in stream.text

    statuses = {status for _, _, status in check.seen}
    assert {200, 201, 202, 204, 206, 400, 403, 404, 409, 415, 416, 422} <= statuses, statuses


REFUSED = {
    "begin_at not a date-time": {"begin_at": "next tuesday"},
    "begin_at month 13": {"begin_at": "2026-13-01T00:00:00Z"},
    "begin_at 31 February": {"begin_at": "2026-02-31T00:00:00Z"},
    "begin_at 29 February of a common year": {"begin_at": "2100-02-29T00:00:00Z"},
    "priority above 1": {"priority": 1.01},
    "id with a slash": {"id": "a/b"},
    "header with CR LF": {"request": {"url": "http://127.0.0.1:9/", "headers": {"X-A": "1\r\nX-B: 2"}}},
    "reserved header": {"request": {"url": "http://127.0.0.1:9/", "headers": {"Content-Length": "1"}}},
    "method not a token": {"request": {"url": "http://127.0.0.1:9/", "method": "GE T"}},
    "two body sources": {"request": {"url": "http://127.0.0.1:9/", "body": {"text": "a", "base64": "YQ=="}}},
    "bad base64": {"request": {"url": "http://127.0.0.1:9/", "body": {"base64": "YQ="}}},
}
# Refused by rules between members, which the document states in prose (see TaskCreation).
REFUSED_BY_PROSE = {
    "checksum on a data task": {"checksum": {"sha256": "a" * 64}},
    "download members on a data task": {"download": {"destination": "/tmp/x"}},
    "multipart without a body": {"multipart": {}},
    "an upload without a body": {"kind": "upload"},
    "a body from both request.body and upload": {
        "kind": "upload", "request": {"url": "http://127.0.0.1:9/", "body": {"text": "x"}}, "upload": {"from_blob": "b_1"}},
    "no request and no resume data": {"request": None},
}


@pytest.mark.parametrize("change", [*REFUSED.values(), *REFUSED_BY_PROSE.values()],
                         ids=[*REFUSED.keys(), *REFUSED_BY_PROSE.keys()])
def test_what_the_schema_refuses_the_server_refuses(spec, transferd, change):
    """The other direction of test_schemas_refuse_what_the_server_refuses, on the live server."""
    body = {"kind": "data", "start": False, "request": {"url": "http://127.0.0.1:9/"}, **change}
    if change not in REFUSED_BY_PROSE.values():
        assert not schema_validator(spec, {"$ref": "#/components/schemas/TaskCreation"}).is_valid(body)
    assert transferd.put("/v1/sessions/refusals", json={}).status_code in (200, 201)
    response = transferd.post("/v1/sessions/refusals/tasks", json=body)
    assert response.status_code == 422, response.text
