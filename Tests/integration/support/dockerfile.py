"""Reads what the repository's Dockerfile says about the image it builds, so the deployment tests
run transferd exactly as the image would and fail when the Dockerfile changes under them.

    image = final_stage(REPO_ROOT / "Dockerfile")
    image.entrypoint   # ["/usr/local/bin/transferd"]
    image.env          # {"TRANSFERD_LISTEN": "0.0.0.0:8080", ...}
    image.uid, image.gid, image.workdir, image.exposed_ports, image.volumes, image.healthcheck

Only the forms the Dockerfile uses are understood (JSON or shell-form ENTRYPOINT/CMD, `ENV k=v`
pairs, `USER uid:gid`); anything else raises instead of being guessed at.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Image:
    """The runtime configuration of one build stage, as `docker inspect` would show it."""

    base: str
    env: dict[str, str] = field(default_factory=dict)
    user: str | None = None
    workdir: str = "/"
    exposed_ports: list[int] = field(default_factory=list)
    volumes: list[str] = field(default_factory=list)
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)
    healthcheck: list[str] = field(default_factory=list)  # the CMD part, exec form
    stopsignal: str | None = None

    @property
    def uid(self) -> int:
        return int(self._user_parts()[0])

    @property
    def gid(self) -> int:
        parts = self._user_parts()
        return int(parts[1] if len(parts) > 1 else parts[0])

    def _user_parts(self) -> list[str]:
        if self.user is None or not all(part.isdigit() for part in self.user.split(":")):
            raise ValueError(f"USER must be numeric uid[:gid] (Kubernetes' runAsNonRoot checks it): {self.user!r}")
        return self.user.split(":")


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, with line continuations joined and comments dropped."""
    result: list[tuple[str, str]] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line.startswith("#") or (not line and not pending):
            continue  # a comment (also inside a continued instruction, as Docker does)
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        whole = (pending + line).strip()
        pending = ""
        if whole:
            keyword, _, arguments = whole.partition(" ")
            result.append((keyword.upper(), arguments.strip()))
    if pending:
        raise ValueError(f"{path}: the last instruction ends with a line continuation")
    return result


def _command(arguments: str) -> list[str]:
    """Exec form (a JSON array) as is; shell form the way Docker runs it."""
    if arguments.startswith("["):
        return json.loads(arguments)
    return ["/bin/sh", "-c", arguments]


def _env_pairs(arguments: str) -> dict[str, str]:
    words = shlex.split(arguments)
    if not all("=" in word for word in words):
        raise ValueError(f"only the ENV key=value form is understood: {arguments!r}")
    return dict(word.split("=", 1) for word in words)


def stages(path: Path) -> list[Image]:
    """Every build stage, in order."""
    result: list[Image] = []
    for keyword, arguments in instructions(path):
        if keyword == "FROM":
            result.append(Image(base=arguments.split()[0]))
            continue
        if not result:
            continue  # ARG before the first FROM
        image = result[-1]
        if keyword == "ENV":
            image.env.update(_env_pairs(arguments))
        elif keyword == "USER":
            image.user = arguments
        elif keyword == "WORKDIR":
            image.workdir = arguments if arguments.startswith("/") else f"{image.workdir.rstrip('/')}/{arguments}"
        elif keyword == "EXPOSE":
            image.exposed_ports += [int(port.split("/")[0]) for port in arguments.split()]
        elif keyword == "VOLUME":
            image.volumes += json.loads(arguments) if arguments.startswith("[") else arguments.split()
        elif keyword == "ENTRYPOINT":
            image.entrypoint = _command(arguments)
            image.cmd = []  # Docker: setting ENTRYPOINT resets a CMD set before it
        elif keyword == "CMD":
            image.cmd = _command(arguments)
        elif keyword == "HEALTHCHECK":
            match = re.search(r"(?:^|\s)CMD\s+(.*)$", arguments)
            image.healthcheck = _command(match.group(1)) if match else []
        elif keyword == "STOPSIGNAL":
            image.stopsignal = arguments
    return result


def final_stage(path: Path) -> Image:
    """The stage `docker build` produces: the last one."""
    return stages(path)[-1]
