"""Runs the transferctl binary for the integration tests, in pipes or in a pseudo-terminal.

The binary is `$TRANSFERCTL_BINARY`, or `.build/release/transferctl` under the repository root.
`ctl_environment(td)` points it at a running `Transferd` (URL and token) with a clean environment;
`run_ctl` runs it with pipes; `PtyCtl` runs it with stdin, stdout and stderr on one pseudo-terminal
of a given size, collecting everything it draws.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path
from typing import Mapping, Sequence

from support.transferd import REPO_ROOT, Transferd, clean_environment


def ctl_binary() -> Path:
    configured = os.environ.get("TRANSFERCTL_BINARY")
    path = Path(configured) if configured else REPO_ROOT / ".build" / "release" / "transferctl"
    return path if path.is_absolute() else REPO_ROOT / path


def ctl_environment(td: Transferd | None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for transferctl talking to `td`; NO_COLOR and TERM removed unless given."""
    env = clean_environment()
    env.pop("NO_COLOR", None)
    env["TERM"] = "xterm-256color"
    if td is not None:
        env["TRANSFERD_URL"] = f"http://127.0.0.1:{td.port}"
        if td.token:
            env["TRANSFERD_TOKEN"] = td.token
    env.update(extra or {})
    return env


def run_ctl(td: Transferd | None, *args: str, env: Mapping[str, str] | None = None,
            cwd: str | os.PathLike | None = None, timeout: float = 20) -> subprocess.CompletedProcess:
    """transferctl with its output in pipes (so not a terminal), stdin from /dev/null."""
    try:
        return subprocess.run([str(ctl_binary()), *args], env=ctl_environment(td, env), cwd=cwd,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as timeout_expired:
        raise AssertionError(f"transferctl {' '.join(args)} did not exit; stderr: {timeout_expired.stderr}") from None


class PtyCtl:
    """transferctl on a pseudo-terminal (its stdin, stdout and stderr), `columns` wide."""

    def __init__(self, td: Transferd | None, *args: str, env: Mapping[str, str] | None = None,
                 cwd: str | os.PathLike | None = None, columns: int = 100, rows: int = 30) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.process = subprocess.Popen([str(ctl_binary()), *args], env=ctl_environment(td, env), cwd=cwd,
                                        stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                                        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(slave)
        self.output = b""

    def read_until(self, needle: bytes, timeout: float = 30) -> bytes:
        """Reads until `needle` has appeared (or the process ended); returns everything so far."""
        deadline = time.monotonic() + timeout
        while needle not in self.output and time.monotonic() < deadline:
            if not self._read(0.2) and self.process.poll() is not None:
                break
        return self.output

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def resize(self, columns: int, rows: int = 30) -> None:
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        os.killpg(self.process.pid, signal.SIGWINCH)

    def wait(self, timeout: float = 60) -> int:
        """Reads until the process exits; its exit code."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            self._read(0.2)
        while self._read(0.05):
            pass
        try:
            return self.process.wait(timeout=max(0.1, deadline - time.monotonic()))
        finally:
            os.close(self.master)

    def settings(self) -> list:
        return termios.tcgetattr(self.master)

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: the other side closed
            return False
        self.output += chunk
        return bool(chunk)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
