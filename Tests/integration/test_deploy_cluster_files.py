"""Cluster mode's Kubernetes shape (deploy/kubernetes-cluster): the parts agree with one another,
with the image and with the binary — replicas on the database URL from a Secret that points at the
PostgreSQL shipped beside them, one ReadWriteMany data volume, the advertised address, a rolling
update and a disruption budget that keep two replicas serving, and NetworkPolicies that let the
replicas reach one another and PostgreSQL. Schema validation is test_deploy_files.py's.
"""

from __future__ import annotations

import re
import subprocess
from urllib.parse import urlsplit

import pytest

from support.dockerfile import final_stage
from support.manifests import (assert_hardened, assert_transferd_container, data_mount, environment,
                               kubernetes_resources, pod_container, pod_labels, seconds, selects)
from support.transferd import REPO_ROOT, binary_path

SHAPE = REPO_ROOT / "deploy" / "kubernetes-cluster"
IMAGE = final_stage(REPO_ROOT / "Dockerfile")
RESOURCES = kubernetes_resources(SHAPE)
DEPLOYMENT = RESOURCES["Deployment/transferd"]
POSTGRES = RESOURCES["StatefulSet/transferd-postgres"]
POD, CONTAINER = pod_container(DEPLOYMENT, "transferd")
POSTGRES_POD, POSTGRES_CONTAINER = pod_container(POSTGRES, "postgres")
PORT = int(IMAGE.env["TRANSFERD_LISTEN"].rsplit(":", 1)[1])
# The variables cluster mode adds to transferd's command line.
CLUSTER_VARIABLES = {"TRANSFERD_DATABASE", "TRANSFERD_LEASE_TIMEOUT", "TRANSFERD_ADVERTISE_ADDRESS"}


def secret_value(reference: dict) -> str:
    """The shipped value behind a secretKeyRef; fails when the Secret or the key is missing."""
    key_ref = reference["valueFrom"]["secretKeyRef"]
    return RESOURCES[f"Secret/{key_ref['name']}"]["stringData"][key_ref["key"]]


def port_named(container: dict, name: str) -> int:
    return next(p["containerPort"] for p in container["ports"] if p["name"] == name)


def test_replicas_run_as_the_image_expects_hardened_like_the_single_node_shape():
    assert DEPLOYMENT["spec"]["replicas"] == 3
    assert_transferd_container(RESOURCES, POD, CONTAINER, IMAGE)
    assert CONTAINER["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert selects(DEPLOYMENT["spec"]["selector"]["matchLabels"], pod_labels(DEPLOYMENT))


def test_every_replica_mounts_one_read_write_many_claim_as_the_data_directory():
    volumes = {v["name"]: v for v in POD["volumes"]}
    claim_name = volumes[data_mount(CONTAINER, IMAGE)["name"]]["persistentVolumeClaim"]["claimName"]
    claim = RESOURCES[f"PersistentVolumeClaim/{claim_name}"]["spec"]
    assert claim["accessModes"] == ["ReadWriteMany"], "a replica taking over continues another's partial files"


def test_replicas_set_the_cluster_variables():
    env = environment(CONTAINER)
    assert CLUSTER_VARIABLES <= set(env), set(env)
    assert int(env["TRANSFERD_LEASE_TIMEOUT"]["value"]) > 0
    # The advertised address is the pod's IP, from the downward API, and the API port; Kubernetes
    # expands $(POD_IP) only when POD_IP is defined earlier in the list.
    names = [variable["name"] for variable in CONTAINER["env"]]
    match = re.fullmatch(r"\[?\$\((\w+)\)\]?:(\d+)", env["TRANSFERD_ADVERTISE_ADDRESS"]["value"])
    assert match and int(match.group(2)) == PORT, env["TRANSFERD_ADVERTISE_ADDRESS"]
    pod_ip = env[match.group(1)]
    assert pod_ip["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    assert names.index(match.group(1)) < names.index("TRANSFERD_ADVERTISE_ADDRESS")


def test_the_variables_the_replicas_set_are_ones_the_binary_reads():
    help_text = subprocess.run([str(binary_path()), "--help"], capture_output=True, text=True, timeout=60).stdout
    if "--database" not in help_text:
        pytest.skip("this transferd has no cluster mode (no --database in --help)")
    known = set(re.findall(r"TRANSFERD_[A-Z_]+", help_text))
    used = {name for name in environment(CONTAINER) if name.startswith("TRANSFERD_")}
    assert used <= known, f"deployment.yaml sets variables transferd does not read: {used - known}"


def test_the_database_url_names_the_postgresql_shipped_beside_it():
    url = urlsplit(secret_value(environment(CONTAINER)["TRANSFERD_DATABASE"]))
    postgres_env = environment(POSTGRES_CONTAINER)
    assert url.scheme == "postgres"
    assert url.username == postgres_env["POSTGRES_USER"]["value"]
    assert url.path == "/" + postgres_env["POSTGRES_DB"]["value"]
    service = RESOURCES[f"Service/{url.hostname}"]["spec"]
    assert service.get("clusterIP") != "None", "a virtual IP: one address across the database pod's restarts"
    assert selects(service["selector"], pod_labels(POSTGRES))
    service_port = next(p for p in service["ports"] if p["port"] == url.port)
    assert port_named(POSTGRES_CONTAINER, service_port["targetPort"]) == url.port


def test_the_shipped_database_secret_starts_nothing():
    """Applied as is, the PostgreSQL image refuses to initialise without a password, so no
    database with a known password ever runs."""
    assert secret_value(environment(POSTGRES_CONTAINER)["POSTGRES_PASSWORD"]) == ""
    assert urlsplit(secret_value(environment(CONTAINER)["TRANSFERD_DATABASE"])).password is None


def test_every_secret_reference_names_a_shipped_secret_and_key():
    references = []
    for workload in (DEPLOYMENT, POSTGRES):
        pod = workload["spec"]["template"]["spec"]
        for container in pod["containers"]:
            references += [v["valueFrom"]["secretKeyRef"] for v in container.get("env", [])
                           if "secretKeyRef" in v.get("valueFrom", {})]
        for volume in pod.get("volumes", []):
            if "secret" in volume:
                keys = [item["key"] for item in volume["secret"].get("items", [])]
                secret = RESOURCES[f"Secret/{volume['secret']['secretName']}"]
                assert set(keys) <= set(secret["stringData"]), volume
    assert len(references) >= 2, references
    for reference in references:
        assert reference["key"] in RESOURCES[f"Secret/{reference['name']}"]["stringData"], reference


def test_postgresql_is_hardened_and_stops_fast():
    assert POSTGRES["spec"]["replicas"] == 1
    assert_hardened(POSTGRES_POD, POSTGRES_CONTAINER, 999, 999)
    writable = {m["mountPath"] for m in POSTGRES_CONTAINER["volumeMounts"]}
    assert environment(POSTGRES_CONTAINER)["PGDATA"]["value"].startswith("/var/lib/postgresql/data/")
    assert {"/var/lib/postgresql/data", "/var/run/postgresql", "/tmp"} <= writable
    claims = {c["metadata"]["name"]: c["spec"] for c in POSTGRES["spec"]["volumeClaimTemplates"]}
    assert claims["data"]["accessModes"] == ["ReadWriteOnce"]
    # SIGTERM alone is a smart shutdown, which waits for transferd's connections to close.
    assert "fast" in " ".join(POSTGRES_CONTAINER["lifecycle"]["preStop"]["exec"]["command"])
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert POSTGRES_CONTAINER[probe]["exec"]["command"][0] == "pg_isready"
    assert f"Service/{POSTGRES['spec']['serviceName']}" in RESOURCES


def test_updates_and_disruptions_take_one_replica_away_at_a_time():
    strategy = DEPLOYMENT["spec"]["strategy"]
    assert strategy["type"] == "RollingUpdate"
    assert strategy["rollingUpdate"] == {"maxUnavailable": 1, "maxSurge": 1}
    budget = RESOURCES["PodDisruptionBudget/transferd"]["spec"]
    assert budget.get("maxUnavailable") == 1 or budget.get("minAvailable") == DEPLOYMENT["spec"]["replicas"] - 1
    assert selects(budget["selector"]["matchLabels"], pod_labels(DEPLOYMENT))
    assert not selects(budget["selector"]["matchLabels"], pod_labels(POSTGRES))
    spread = POD["topologySpreadConstraints"]
    assert any(c["topologyKey"] == "kubernetes.io/hostname" and selects(c["labelSelector"]["matchLabels"],
                                                                         pod_labels(DEPLOYMENT)) for c in spread)


def test_the_grace_period_outlasts_the_drain():
    env = environment(CONTAINER)
    grace = seconds(env["TRANSFERD_SHUTDOWN_GRACE"]["value"])
    timeout = seconds(env["TRANSFERD_SHUTDOWN_TIMEOUT"]["value"])
    assert 0 < grace < timeout < POD["terminationGracePeriodSeconds"]


def test_the_service_reaches_the_replicas_only():
    service = RESOURCES["Service/transferd"]["spec"]
    assert selects(service["selector"], pod_labels(DEPLOYMENT))
    assert not selects(service["selector"], pod_labels(POSTGRES))
    assert [p["targetPort"] for p in service["ports"]] == [CONTAINER["ports"][0]["name"]]


def allows(rules: list[dict], peer_labels: dict[str, str], port: int, direction: str) -> bool:
    """Whether a rule admits pods with these labels (in this namespace) on this TCP port."""
    return any(
        any(selects(peer.get("podSelector", {}).get("matchLabels", {}), peer_labels) and "podSelector" in peer
            and "namespaceSelector" not in peer for peer in rule[direction])
        and any(p["port"] == port and p["protocol"] == "TCP" for p in rule["ports"])
        for rule in rules)


def test_network_policies_let_replicas_reach_one_another_and_postgresql_and_nothing_else_in():
    replicas, database = pod_labels(DEPLOYMENT), pod_labels(POSTGRES)
    postgres_port = port_named(POSTGRES_CONTAINER, "postgresql")
    policy = RESOURCES["NetworkPolicy/transferd"]["spec"]
    assert selects(policy["podSelector"]["matchLabels"], replicas)
    assert not selects(policy["podSelector"]["matchLabels"], database)
    assert allows(policy["ingress"], replicas, PORT, "from"), "forwarded calls from the other replicas"
    assert allows(policy["egress"], replicas, PORT, "to"), "forwarding to the other replicas"
    assert allows(policy["egress"], database, postgres_port, "to")

    guard = RESOURCES["NetworkPolicy/transferd-postgres"]["spec"]
    assert selects(guard["podSelector"]["matchLabels"], database)
    assert set(guard["policyTypes"]) == {"Ingress", "Egress"} and guard["egress"] == []
    assert allows(guard["ingress"], replicas, postgres_port, "from")
    assert all(selects(peer["podSelector"]["matchLabels"], replicas)
               for rule in guard["ingress"] for peer in rule["from"]), "only the replicas reach PostgreSQL"
