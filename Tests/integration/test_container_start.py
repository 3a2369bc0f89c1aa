"""The image's start command, run the way a container runtime runs it — without a Docker engine.

Everything is read from the Dockerfile (and deploy/docker-compose.yml's `environment`), so the test
fails when they drift: the ENTRYPOINT and CMD, the ENV, the numeric USER, the WORKDIR, the data
VOLUME, the token file, the HEALTHCHECK command. bubblewrap builds the container's view of the
system: the host's /usr and /etc read-only (the image's runtime libraries are Debian 12's, as here),
the release binary at the ENTRYPOINT's path, the Swift runtime libraries it links, a writable data
directory at the VOLUME, the token file where TRANSFERD_API_TOKEN_FILE points, and nothing else
writable (as Kubernetes' readOnlyRootFilesystem). It has its own network namespace (so the image's
0.0.0.0:8080 is free and reachable only from inside), and its own PID namespace with transferd as
PID 1 under the image's uid with no capabilities (setpriv). Requests go in with nsenter.

Needs root (to mount and to switch users) and bwrap (`scripts/install-deps.sh test` installs it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from support.dockerfile import final_stage
from support.transferd import REPO_ROOT, binary_path

IMAGE = final_stage(REPO_ROOT / "Dockerfile")
COMPOSE = yaml.safe_load((REPO_ROOT / "deploy" / "docker-compose.yml").read_text())
COMPOSE_ENV = COMPOSE["services"]["transferd"].get("environment", {})
# What Docker sets when the image sets no PATH.
DOCKER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
TOKEN = "tdt_container-start-test-token"
PORT = int(IMAGE.env["TRANSFERD_LISTEN"].rsplit(":", 1)[1])
WAIT = 30.0

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to build the container's mounts and switch users")


def drop_privileges() -> list[str]:
    """The image's USER, as a runtime applies it: no supplementary groups, no capabilities."""
    return ["setpriv", f"--reuid={IMAGE.uid}", f"--regid={IMAGE.gid}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]


def library_directories(binary: Path) -> list[str]:
    """Directories outside /usr that hold libraries the binary loads (the Swift runtime): the
    Dockerfile copies the same ones into the image, found the same way."""
    output = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    assert "not found" not in output, output
    paths = [line.split("=>")[1].split("(")[0].strip() for line in output.splitlines() if "=> /" in line]
    return sorted({os.path.dirname(p) for p in paths if not p.startswith(("/usr/", "/lib"))})


def parents(path: str) -> list[str]:
    """bwrap options that create the directories above `path` searchable by everyone, as they are
    in an image (bwrap would create missing ones with mode 0700, closed to the image's user)."""
    options: list[str] = []
    for parent in reversed(Path(path).parents):
        if str(parent) != "/":
            options += ["--perms", "0755", "--dir", str(parent)]
    return options


class Container:
    """transferd started as the image's entrypoint inside a bubblewrap sandbox."""

    def __init__(self, workdir: Path, *, with_token: bool = True) -> None:
        self.data = workdir / "data"
        self.data.mkdir(mode=0o750)
        os.chown(self.data, IMAGE.uid, IMAGE.gid)
        self.token_file = None
        if with_token:
            # As Kubernetes mounts the Secret: mode 0440, group = fsGroup = the image's group.
            self.token_file = workdir / "api-token"
            self.token_file.write_text(TOKEN + "\n")
            os.chown(self.token_file, 0, IMAGE.gid)
            self.token_file.chmod(0o440)
        self.stderr_path = workdir / "stderr"
        self.info_path = workdir / "bwrap-info.json"
        self.environment = {"PATH": DOCKER_PATH, **IMAGE.env, **COMPOSE_ENV}
        self.process: subprocess.Popen | None = None
        self.pid = 0  # transferd's pid as seen from here; it is 1 inside

    def sandbox(self) -> list[str]:
        entrypoint = IMAGE.entrypoint[0]
        argv = [shutil.which("bwrap") or "bwrap", "--die-with-parent", "--unshare-net", "--unshare-pid",
                "--unshare-ipc", "--unshare-uts", "--as-pid-1",
                "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev"]
        for name in ("bin", "sbin", "lib", "lib32", "lib64"):  # Debian's merged /usr
            if os.path.islink(f"/{name}"):
                argv += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
        for directory in library_directories(binary_path()):
            argv += parents(directory) + ["--ro-bind", directory, directory]
        argv += ["--tmpfs", os.path.dirname(entrypoint), "--ro-bind", str(binary_path()), entrypoint,
                 "--remount-ro", os.path.dirname(entrypoint)]
        for volume in IMAGE.volumes:
            argv += ["--bind", str(self.data), volume]
        if self.token_file:
            target = IMAGE.env["TRANSFERD_API_TOKEN_FILE"]
            argv += parents(target) + ["--ro-bind", str(self.token_file), target]
        return argv + ["--remount-ro", "/", "--chdir", IMAGE.workdir]

    def start(self) -> "Container":
        # bwrap's --info-fd goes to a file: bwrap writes to it while running, and a pipe closed
        # early would kill it with SIGPIPE.
        with open(self.stderr_path, "wb") as stderr, open(self.info_path, "wb") as info:
            self.process = subprocess.Popen(
                self.sandbox() + ["--info-fd", str(info.fileno())] + drop_privileges() + IMAGE.entrypoint + IMAGE.cmd,
                env=self.environment, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
                pass_fds=(info.fileno(),))
        deadline = time.monotonic() + WAIT
        while (match := re.search(r'"child-pid":\s*(\d+)\D', self.info_path.read_text())) is None:
            assert self.process.poll() is None and time.monotonic() < deadline, \
                f"bwrap did not start the entrypoint: {self.output()}"
            time.sleep(0.02)
        self.pid = int(match.group(1))
        return self

    def output(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def enter(self, argv: list[str], *, as_image_user: bool = False, mounts: bool = False) -> subprocess.CompletedProcess:
        """Runs argv in the container's network namespace (and its file system, as `docker exec`
        does, when `mounts`), as root or as the image's user."""
        namespaces = ["--net", "--mount"] if mounts else ["--net"]
        command = ["nsenter", f"--target={self.pid}", *namespaces, "--"]
        command += (drop_privileges() if as_image_user else []) + argv
        return subprocess.run(command, env=self.environment, capture_output=True, text=True, timeout=WAIT)

    def request(self, method: str, path: str, *, token: str | None = None, body: bytes | None = None,
                content_type: str = "application/json") -> tuple[int, str]:
        """(status, body) of one request from inside the container's network namespace."""
        argv = ["curl", "--silent", "--show-error", "--noproxy", "*", "--max-time", "10", "--request", method,
                "--write-out", "\n%{http_code}", f"http://127.0.0.1:{PORT}{path}"]
        if token:
            argv += ["--header", f"Authorization: Bearer {token}"]
        if body is not None:
            argv += ["--header", f"Content-Type: {content_type}", "--data-binary", body.decode()]
        result = self.enter(argv)
        text, _, status = result.stdout.rpartition("\n")
        return (int(status) if status.isdigit() else 0), text

    def wait_ready(self) -> None:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            assert self.process and self.process.poll() is None, f"transferd exited: {self.output()}"
            if self.request("GET", "/readyz")[0] == 200:
                return
            time.sleep(0.1)
        raise AssertionError(f"/readyz did not answer 200 within {WAIT}s: {self.output()}")

    def status(self) -> dict[str, str]:
        """/proc/<pid>/status of transferd, as seen from outside."""
        lines = Path(f"/proc/{self.pid}/status").read_text().splitlines()
        return {key: value.strip() for key, _, value in (line.partition(":") for line in lines)}

    def listening(self) -> set[tuple[str, int]]:
        """(address, port) of the TCP sockets transferd listens on, from /proc/<pid>/net/tcp*,
        which shows the process's own network namespace."""
        sockets = set()
        for name, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
            for line in Path(f"/proc/{self.pid}/net/{name}").read_text().splitlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                if state == "0A":  # TCP_LISTEN
                    address, port = local.split(":")
                    # The kernel prints the address as 32-bit words in host byte order.
                    raw = b"".join(int(address[i:i + 8], 16).to_bytes(4, sys.byteorder) for i in range(0, len(address), 8))
                    sockets.add((socket.inet_ntop(family, raw), int(port, 16)))
        return sockets

    def close(self) -> None:
        """Kills the container. Killing bwrap is not enough: setpriv's change of user clears the
        parent-death signal --die-with-parent set, so the entrypoint would outlive it. SIGKILL to
        PID 1 of the PID namespace ends everything in it, and then bwrap."""
        if self.process is None or self.process.poll() is not None:
            return
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        else:
            self.process.kill()
        self.process.wait(timeout=WAIT)


@pytest.fixture
def container(tmp_path):
    started = Container(tmp_path)
    try:
        yield started.start()
    finally:
        started.close()


def test_entrypoint_starts_ready_as_pid_1_under_the_image_user_with_only_the_data_directory_writable(container):
    container.wait_ready()
    status, body = container.request("GET", "/readyz")
    assert status == 200 and json.loads(body)["status"] == "ready", body

    host, _, port = IMAGE.env["TRANSFERD_LISTEN"].rpartition(":")
    assert container.listening() == {(host.strip("[]"), int(port))}
    process = container.status()
    assert process["NSpid"].split()[-1] == "1", process["NSpid"]
    assert process["Uid"].split() == [str(IMAGE.uid)] * 4 and process["Gid"].split() == [str(IMAGE.gid)] * 4
    assert int(process["CapEff"], 16) == 0 and process["NoNewPrivs"] == "1"

    # The HEALTHCHECK, as Docker runs it: inside the container, as the image's user, its exit code.
    health = container.enter(IMAGE.healthcheck, as_image_user=True, mounts=True)
    assert health.returncode == 0, health.stdout + health.stderr

    # The token came from the file the image names; /v1 needs it.
    assert container.request("GET", "/v1")[0] == 401
    assert container.request("GET", "/v1", token=TOKEN)[0] == 200
    # The web console is compiled into the binary: the image, which copies the binary alone, serves it.
    status, page = container.request("GET", "/ui/")
    assert status == 200 and '<script type="module" src="main.js">' in page, page[:200]
    assert container.request("GET", "/ui/main.js")[0] == 200
    # Durable writes land in the data directory (the root file system is read-only).
    assert container.request("PUT", "/v1/sessions/com.example.container", token=TOKEN,
                             body=b'{"mode": "background"}')[0] == 201
    assert container.request("POST", "/v1/blobs", token=TOKEN, body=b"bytes for a later upload",
                             content_type="application/octet-stream")[0] == 201
    written = [p for p in container.data.rglob("*") if p.is_file()]
    assert any(p.name == "transferd.sqlite" for p in written), written
    assert all(p.stat().st_uid == IMAGE.uid for p in written), [(p, p.stat().st_uid) for p in written]
    # Read-only even for root: nothing but the data directory could have been written.
    probe = container.enter(["touch", "/probe"], mounts=True)
    assert probe.returncode != 0 and "Read-only file system" in probe.stderr, probe.stderr


def test_sigterm_to_pid_1_stops_transferd_cleanly(container):
    container.wait_ready()
    os.kill(container.pid, signal.SIGTERM)
    assert container.process.wait(timeout=WAIT) == 0, container.output()
    assert '"signal received"' in container.output()


def test_without_the_token_secret_the_image_refuses_to_start(tmp_path):
    container = Container(tmp_path, with_token=False)
    try:
        assert container.start().process.wait(timeout=WAIT) == 2, container.output()
    finally:
        container.close()
    assert "TRANSFERD_API_TOKEN_FILE" in container.output(), container.output()
