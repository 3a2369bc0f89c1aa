"""openapi.yaml: a valid OpenAPI 3.1 document that agrees with the running server — every route the
server answers is documented, every documented operation is answered as documented (status,
security, body schema), and errors use the Problem schema."""

from __future__ import annotations

import re
from pathlib import Path

import jsonschema
import pytest
import yaml
from openapi_spec_validator import validate

from support.transferd import REPO_ROOT

SPEC_PATH = REPO_ROOT / "openapi.yaml"
PROBLEM_REF = "#/components/schemas/Problem"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")

# Every route the server answers today (the operational endpoints and the /v1 root).
SERVER_ROUTES = ["/healthz", "/readyz", "/metrics", "/v1"]


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


def test_problem_codes_cover_every_code_in_the_sources(spec):
    sources = "\n".join(p.read_text() for p in (REPO_ROOT / "Sources").rglob("*.swift"))
    codes = set(re.findall(r'HTTPProblem\(\s*\d{3}\s*,\s*"([a-z0-9_]+)"', sources))
    if "HTTPProblem.bad(" in sources or ".bad(" in sources:
        codes.add("bad_request")
    assert {"not_found", "unauthorized", "method_not_allowed"} <= codes, codes
    validator = schema_validator(spec, {"$ref": "#/components/schemas/ProblemCode"})
    undocumented = sorted(code for code in codes if not validator.is_valid(code))
    assert not undocumented, f"problem codes used in Sources but not in openapi.yaml: {undocumented}"
    assert not validator.is_valid("no_such_code")


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
