"""A small tmpfs for tests that need a file system to run out of space for real.

    with tmpfs(tmp_path / "small", "4m") as mountpoint:
        ...

Mounting needs the right to (root in the test container); without it the test is skipped.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def tmpfs(mountpoint: Path, size: str) -> Iterator[Path]:
    mountpoint.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mountpoint)], check=False,
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        # Lazily: transferd may still hold the root open.
        subprocess.run(["umount", "-l", str(mountpoint)], check=False)
