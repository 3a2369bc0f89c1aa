"""Reads the Kubernetes manifests in deploy/ and checks what both shapes (single-node and cluster)
must hold alike: the pod's hardening, the token file's Secret, selectors that select.

    resources = kubernetes_resources(REPO_ROOT / "deploy" / "kubernetes")
    pod, container = pod_container(resources["StatefulSet/transferd"], "transferd")
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from support.dockerfile import Image


def kubernetes_resources(directory: Path) -> dict[str, dict]:
    """Every resource in the directory's *.yaml files, by "Kind/name"."""
    resources = {}
    for path in sorted(directory.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document:
                resources[f"{document['kind']}/{document['metadata']['name']}"] = document
    return resources


def pod_labels(workload: dict) -> dict[str, str]:
    return workload["spec"]["template"]["metadata"]["labels"]


def pod_container(workload: dict, name: str) -> tuple[dict, dict]:
    """(pod spec, the named container) of a Deployment or StatefulSet."""
    pod = workload["spec"]["template"]["spec"]
    return pod, next(c for c in pod["containers"] if c["name"] == name)


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    """Whether a matchLabels-style selector selects pods with these labels."""
    return selector.items() <= labels.items()


def environment(container: dict) -> dict[str, dict]:
    """The container's env entries by name (each {"value": …} or {"valueFrom": …})."""
    return {variable["name"]: variable for variable in container.get("env", [])}


def seconds(duration: str) -> float:
    """A transferd duration as the manifests write them: 5s, 2m, 1h."""
    match = re.fullmatch(r"(\d+)(s|m|h)", duration)
    assert match, f"unexpected duration {duration!r}"
    return int(match.group(1)) * {"s": 1, "m": 60, "h": 3600}[match.group(2)]


def assert_hardened(pod: dict, container: dict, uid: int, gid: int) -> None:
    """Non-root as uid:gid, read-only root, no privilege escalation or capabilities, default
    seccomp, no service-account token, and requests and limits set."""
    security = {**pod["securityContext"], **container["securityContext"]}
    assert security["runAsNonRoot"] and security["readOnlyRootFilesystem"], security
    assert security["allowPrivilegeEscalation"] is False, security
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"], security
    assert security["seccompProfile"]["type"] == "RuntimeDefault", security
    assert (security["runAsUser"], security["runAsGroup"]) == (uid, gid), security
    assert pod["securityContext"]["fsGroup"] == gid, "the data volume must be writable by the image's user"
    assert pod["automountServiceAccountToken"] is False
    assert {"requests", "limits"} <= set(container["resources"]), container["resources"]


def assert_transferd_container(resources: dict[str, dict], pod: dict, container: dict, image: Image) -> None:
    """The transferd container as the image expects: its port, the probes, the hardening, /data
    the only writable mount, and the token file from a Secret that has that key."""
    port = int(image.env["TRANSFERD_LISTEN"].rsplit(":", 1)[1])
    assert [p["containerPort"] for p in container["ports"]] == [port]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert pod["enableServiceLinks"] is False, "service links would add TRANSFERD_* variables"
    assert_hardened(pod, container, image.uid, image.gid)

    mounts = container["volumeMounts"]
    writable = [m["mountPath"] for m in mounts if not m.get("readOnly")]
    assert writable == [image.env["TRANSFERD_DATA_DIR"]], "only the data directory is writable"

    token_dir, token_name = image.env["TRANSFERD_API_TOKEN_FILE"].rsplit("/", 1)
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    token_mount = next(m for m in mounts if m["mountPath"] == token_dir)
    secret_name = volumes[token_mount["name"]]["secret"]["secretName"]
    assert token_name in resources[f"Secret/{secret_name}"]["stringData"]


def data_mount(container: dict, image: Image) -> dict:
    return next(m for m in container["volumeMounts"] if m["mountPath"] == image.env["TRANSFERD_DATA_DIR"])
