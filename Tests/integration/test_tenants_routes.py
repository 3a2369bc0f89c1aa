"""Every route of openapi.yaml, called by principals that may not do what it does.

The walk fills each route's path parameters with another principal's real session, task, event and
blob, and calls it as
  (a) `alpha`, a write principal of another namespace: 404 for everything that names beta's session
      or blob, exactly the answer for one that does not exist (for `PUT /v1/sessions/{identifier}`:
      403 `namespace_not_allowed`, the same whether the session exists or not);
  (b) `reader`, a read principal over beta's namespace: 403 `forbidden` for every change — also on a
      session outside its namespaces, and on one that does not exist — and the resource for every
      read of beta's session (a blob is its owner's alone: 404).
Routes that name no resource are in `UNNAMED`, each with its own check. A route in openapi.yaml
that is neither walked nor in `UNNAMED` fails the test, so a route added without an authorisation
rule fails it; test_openapi.py makes sure openapi.yaml lists every route the server answers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

import pytest
import yaml

from support.api import assert_problem, assert_success, create_batch, create_session, data, download, wait_for
from support.events import read_events
from support.origin import Origin
from support.tenants import Principal, assert_hidden, comparable, write_auth_file
from support.transferd import REPO_ROOT, Caller, Transferd

SPEC_PATH = REPO_ROOT / "openapi.yaml"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
CHANGES = {"PUT", "POST", "PATCH", "DELETE"}

ALPHA = Principal("alpha", "write", ["com.alpha."])
BETA = Principal("beta", "write", ["com.beta."])
READER = Principal("reader", "read", ["com.beta."])
OPS = Principal("ops", "admin")

# Beta's resources the walk names, and names of the same shape that do not exist.
SESSION = "com.beta.walked"
MISSING_OWN = "com.alpha.absent"  # in alpha's namespace: the handler's own "does not exist"
MISSING_FOREIGN = "com.beta.absent"  # in beta's: what alpha may learn about beta's namespace
OUTSIDE = "org.elsewhere.walked"  # outside the reader's namespaces
MISSING_BLOB = "b_" + "0" * 20


@dataclass
class World:
    td: Transferd
    origin: Origin
    alpha: Caller
    beta: Caller
    reader: Caller
    ops: Caller
    blob: str  # beta's
    event: str  # an event of beta's session


@pytest.fixture(scope="module")
def spec() -> dict:
    with open(SPEC_PATH) as f:
        return yaml.safe_load(f)


@pytest.fixture(scope="module")
def world(transferd_binary, tmp_path_factory) -> World:
    auth = write_auth_file(tmp_path_factory.mktemp("walk-auth") / "auth.json", [ALPHA, BETA, READER, OPS])
    with Origin() as origin:
        td = Transferd("--auth-file", str(auth), binary=transferd_binary)
        try:
            td.start()
            beta = td.as_caller(BETA.token)
            assert beta.put(f"/v1/sessions/{SESSION}",
                            json={"mode": "default", "delegate": {"url": origin.url("/echo")}}).status_code == 201
            create_batch(beta, SESSION, [download(origin.url("/bytes/2048"), id="dl"),
                                         data(origin.url("/bytes/512"), id="data"),
                                         download(origin.url("/bytes/64"), id="held", start=False)])
            for task in ("dl", "data"):
                assert_success(beta.get(f"/v1/sessions/{SESSION}/tasks/{task}?wait=20", timeout=30).json())
            event = read_events(beta, SESSION, after=0, limit=1)["events"][0]["id"]
            blob = beta.post("/v1/blobs", data=b"beta's blob\n").json()["id"]
            yield World(td, origin, td.as_caller(ALPHA.token), beta, td.as_caller(READER.token),
                        td.as_caller(OPS.token), blob, event)
        finally:
            td.close()


# MARK: the operations of the document


@dataclass(frozen=True)
class Operation:
    method: str  # upper case
    path: str  # the template
    spec: dict

    @property
    def parameters(self) -> list[str]:
        return re.findall(r"\{(\w+)\}", self.path)

    @property
    def streams(self) -> bool:
        """Whether the 200 answer may be Server-Sent Events (asked for with Accept)."""
        return "text/event-stream" in (self.spec["responses"].get("200", {}).get("content") or {})


def operations(spec: dict) -> list[Operation]:
    return [Operation(method.upper(), path, item[method])
            for path, item in spec["paths"].items() for method in METHODS if method in item]


def resolve(spec: dict, node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        target = spec
        for part in node["$ref"][2:].split("/"):
            target = target[part]
        node = target
    return node


def example_body(spec: dict, op: Operation) -> Any:
    """A valid body for the operation, from the document's own examples, so that a handler's
    validation does not answer before the question of who may call it."""
    body = op.spec.get("requestBody")
    if not body:
        return None
    media = (body.get("content") or {}).get("application/json")
    if media is None:
        return None
    if "example" in media:
        return media["example"]
    if media.get("examples"):
        return next(iter(media["examples"].values()))["value"]
    examples = resolve(spec, media["schema"]).get("examples")
    if examples:
        return examples[0]
    assert not body.get("required"), f"{op.method} {op.path}: give its JSON body an example in openapi.yaml"
    return None


def fill(op: Operation, world: World, identifier: str = SESSION, blob: str | None = None) -> str:
    """The route's path with every parameter set to one of beta's resources."""
    values = {"identifier": identifier, "blob": blob or world.blob, "event": world.event,
              "task": "data" if op.path.endswith("/body") else "dl"}
    unknown = [name for name in op.parameters if name not in values]
    assert not unknown, f"{op.method} {op.path}: the walk does not know how to fill {unknown}"
    return re.sub(r"\{(\w+)\}", lambda m: values[m[1]], op.path)


def variants(op: Operation) -> list[tuple[str, dict[str, str]]]:
    """(method, headers) to call the route with: as documented, HEAD beside every GET (answered
    wherever GET is), and with `Accept: text/event-stream` where it streams."""
    found = [(op.method, {})]
    if op.method == "GET":
        found.append(("HEAD", {}))
    if op.streams:
        found.append(("GET", {"Accept": "text/event-stream"}))
    return found


# MARK: the walk


def walk_foreign(world: World, op: Operation, body: Any) -> None:
    """alpha, a write principal of another namespace."""
    for method, headers in variants(op):
        kwargs = {"json": body, "headers": headers, "timeout": 5}
        if "blob" in op.parameters:
            assert_hidden(world.alpha, method, fill(op, world), {world.blob: MISSING_BLOB}, **kwargs)
        elif op.method == "PUT" and op.path == "/v1/sessions/{identifier}":
            assert_hidden(world.alpha, method, fill(op, world), {SESSION: MISSING_FOREIGN}, 403,
                          "namespace_not_allowed", **kwargs)
        else:
            for missing in (MISSING_OWN, MISSING_FOREIGN):
                assert_hidden(world.alpha, method, fill(op, world), {SESSION: missing}, **kwargs)


def walk_reader(world: World, op: Operation, body: Any) -> None:
    """reader, a read principal over beta's namespace."""
    for method, headers in variants(op):
        path = fill(op, world)
        if method in CHANGES:
            refused = world.reader.request(method, path, json=body, timeout=5)
            assert_problem(refused, 403, "forbidden")
            # Whatever the path names: the role is decided first, so this tells nothing.
            for elsewhere in (fill(op, world, OUTSIDE, MISSING_BLOB), fill(op, world, MISSING_FOREIGN, MISSING_BLOB)):
                other = world.reader.request(method, elsewhere, json=body, timeout=5)
                assert comparable(other, {}) == comparable(refused, {}), (method, elsewhere)
        elif "blob" in op.parameters:
            assert_hidden(world.reader, method, path, {world.blob: MISSING_BLOB}, headers=headers)
        else:
            response = world.reader.request(method, path, headers=headers, stream=True, timeout=5)
            response.close()  # a stream does not end: its status and headers are the answer
            assert response.status_code == 200, (method, path, response.status_code)


def walk(world: World, spec: dict, op: Operation) -> None:
    body = example_body(spec, op)
    walk_foreign(world, op, body)
    walk_reader(world, op, body)


# MARK: routes that name no resource


def check_service_info(world: World) -> None:
    for caller in (world.alpha, world.reader):
        assert caller.get("/v1").json()["service"] == "transferd"


def check_whoami(world: World) -> None:
    assert world.alpha.get("/v1/whoami").json()["name"] == "alpha"
    assert world.reader.get("/v1/whoami").json()["name"] == "reader"


def check_session_list(world: World) -> None:
    listed = {caller: [s["identifier"] for s in caller.get("/v1/sessions").json()["sessions"]]
              for caller in (world.alpha, world.reader)}
    assert SESSION not in listed[world.alpha]
    assert SESSION in listed[world.reader]


def check_stats(world: World) -> None:
    alpha = world.alpha.get("/v1/stats").json()
    assert alpha["sessions"] == len(world.alpha.get("/v1/sessions").json()["sessions"])
    assert alpha["tasks"]["completed"] == 0 and alpha["tasks"]["suspended"] == 0, alpha
    reader = world.reader.get("/v1/stats").json()
    assert reader["sessions"] >= 1 and reader["tasks"]["completed"] >= 2, reader


def check_blob_creation(world: World) -> None:
    stored = world.alpha.post("/v1/blobs", data=b"alpha's\n")
    assert stored.status_code == 201, stored.text
    assert_hidden(world.beta, "GET", f"/v1/blobs/{stored.json()['id']}", {stored.json()["id"]: MISSING_BLOB})
    assert_problem(world.reader.post("/v1/blobs", data=b"reader's\n"), 403, "forbidden")


def check_operational(route: str) -> Callable[[World], None]:
    def check(world: World) -> None:
        assert world.td.get(route, token=None).status_code == 200, f"{route} wants a token"
    return check


UNNAMED: dict[tuple[str, str], Callable[[World], None]] = {
    ("GET", "/v1"): check_service_info,
    ("GET", "/v1/whoami"): check_whoami,
    ("GET", "/v1/sessions"): check_session_list,
    ("GET", "/v1/stats"): check_stats,
    ("POST", "/v1/blobs"): check_blob_creation,
    # Operational routes: never behind a token, the same for everyone.
    ("GET", "/healthz"): check_operational("/healthz"),
    ("GET", "/readyz"): check_operational("/readyz"),
    ("GET", "/metrics"): check_operational("/metrics"),
}


def beta_state(world: World) -> tuple[dict, dict]:
    """What of beta's a change could touch: the session (but its counters, which deliveries move)
    and its tasks."""
    session = world.beta.get(f"/v1/sessions/{SESSION}").json()
    kept = {key: session[key] for key in ("state", "mode", "configuration", "delegate", "acked_through", "tasks")}
    return kept, world.beta.get(f"/v1/sessions/{SESSION}/tasks").json()


def test_every_route_refuses_what_the_caller_may_not_do(world, spec):
    before = beta_state(world)
    walked, checked, unruled = set(), set(), []
    for op in operations(spec):
        key = (op.method, op.path)
        if "identifier" in op.parameters or "blob" in op.parameters:
            walk(world, spec, op)
            walked.add(key)
        elif key in UNNAMED:
            UNNAMED[key](world)
            checked.add(key)
        else:
            unruled.append(f"{op.method} {op.path}")
    assert not unruled, f"routes without an authorisation rule in the walk (name a resource, or add to UNNAMED): {unruled}"
    assert walked | checked == {(op.method, op.path) for op in operations(spec)}
    assert not set(UNNAMED) - checked, f"UNNAMED lists routes openapi.yaml does not have: {set(UNNAMED) - checked}"
    assert len(walked) >= 20, walked

    # Every change the walk tried was refused: beta's session, tasks and blob are as they were,
    # and no redelivery was queued (a redelivery is attempt 0).
    assert beta_state(world) == before
    assert world.beta.get(f"/v1/blobs/{world.blob}").status_code == 200
    attempts = wait_for(lambda: world.beta.get(f"/v1/sessions/{SESSION}/deliveries").json()["deliveries"])
    assert all(a["attempt"] != 0 for a in attempts), attempts


def test_reader_sees_the_walked_resources(world):
    """The read principal's reads of beta's session are real answers, not just 200s."""
    file = world.reader.get(f"/v1/sessions/{SESSION}/tasks/dl/file")
    assert file.content == Origin.expected_bytes(2048)
    assert world.reader.get(f"/v1/sessions/{SESSION}/tasks/data/body").content == Origin.expected_bytes(512)
    assert read_events(world.reader, SESSION, after=0)["events"][0]["id"] == world.event
