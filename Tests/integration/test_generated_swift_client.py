"""The Swift client (Sources/TransferdClient/Generated) is generated from today's openapi.yaml:
`make client` records the digest of the document and the generator's settings it generated from,
and this test fails when they changed since (run `make client` and commit). Comparing digests
keeps swift-openapi-generator out of every build, CI run and image; TransferdClientTests runs the
committed client against a real transferd."""

from __future__ import annotations

import hashlib

from support.transferd import REPO_ROOT

SWIFT_CLIENT = REPO_ROOT / "clients" / "swift"


def test_the_committed_swift_client_was_generated_from_this_openapi_yaml():
    digest = hashlib.sha256((REPO_ROOT / "openapi.yaml").read_bytes() +
                            (SWIFT_CLIENT / "openapi-generator-config.yaml").read_bytes()).hexdigest()
    recorded = (SWIFT_CLIENT / "openapi.sha256").read_text().strip()
    assert recorded == digest, "Sources/TransferdClient/Generated is stale: run `make client` and commit it"
    generated = {path.name for path in (REPO_ROOT / "Sources" / "TransferdClient" / "Generated").glob("*.swift")}
    assert {"Client.swift", "Types.swift"} <= generated, generated
