"""Reading `/metrics` (Prometheus text format 0.0.4) in the tests, and checking it with promtool.

promtool comes with Debian's `prometheus` package, which `scripts/install-deps.sh test` installs;
`promtool()` installs it when it is missing (as root, or with sudo).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Callable

import pytest

from .api import wait_for
from .transferd import Transferd

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

Samples = list[tuple[str, dict[str, str], float]]


def parse_metrics(text: str) -> tuple[Samples, dict[str, str]]:
    """Prometheus text format: the samples, and the declared `# TYPE` of each family."""
    samples, types = [], {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(None, 3)
            types[name] = kind.strip()
            continue
        if not line or line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        assert match, f"not a Prometheus sample line: {line!r}"
        name, labels, value = match.groups()
        samples.append((name, dict(LABEL.findall(labels or "")), float(value)))
    return samples, types


def metrics_text(td: Transferd) -> str:
    response = td.get("/metrics", token=None)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    return response.text


def scrape(td: Transferd) -> tuple[Samples, dict[str, str]]:
    return parse_metrics(metrics_text(td))


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of the samples of `name` whose labels include `labels`."""
    return sum(v for n, l, v in samples if n == name and all(l.get(k) == w for k, w in labels.items()))


def wait_metric(td: Transferd, check: Callable[[Samples], bool], message: str, timeout: float = 10.0) -> Samples:
    """Scrapes until `check` holds: what a response or a completion counts may trail it a moment."""
    def checked() -> Samples | None:
        samples = scrape(td)[0]
        return samples if check(samples) else None

    return wait_for(checked, timeout=timeout, message=message)


def promtool() -> str:
    """The path of promtool, installing Debian's `prometheus` package first when it is missing."""
    path = shutil.which("promtool")
    if path is None:
        sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        install = sudo + ["apt-get", "install", "-y", "-q", "--no-install-recommends", "prometheus"]
        if subprocess.run(install, capture_output=True, env=env, timeout=600).returncode != 0:
            subprocess.run(sudo + ["apt-get", "update", "-q"], capture_output=True, env=env, timeout=600)
            subprocess.run(install, capture_output=True, env=env, timeout=600)
        path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool is not installed and could not be: run scripts/install-deps.sh test", pytrace=False)
    return path
