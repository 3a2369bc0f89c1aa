"""Large downloads written with O_DIRECT (`--direct-writes`, on by default; README "Configuration",
docs/PERFORMANCE.md): from 16 MiB on, a download's bytes go from aligned chunks straight to the
device, and its digests are computed from those chunks — every algorithm still matches an
independent implementation, across a resume at an unaligned offset and across a `kill -9`.
`--direct-writes off` keeps every download in the page cache. The O_DIRECT descriptor is seen
where it lives, in /proc/<pid>/fdinfo."""

from __future__ import annotations

import hashlib
import os

from support.api import (assert_success, create_session, create_task, download, get_task, wait_for,
                         wait_progress, wait_task)
from support.origin import Origin
from test_digests import ALGORITHMS, expected

MiB = 1 << 20
O_DIRECT = 0o40000  # x86_64 and aarch64 differ; this suite runs on x86_64 (fdinfo prints octal flags)
QUICK = {"backoff_initial_s": 0.2, "backoff_max_s": 0.5}


def direct_descriptors(pid: int) -> list[str]:
    """What transferd's descriptors opened with O_DIRECT point at."""
    found = []
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as info:
                flags = next(line for line in info if line.startswith("flags:")).split()[1]
            if int(flags, 8) & O_DIRECT:
                found.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except (FileNotFoundError, StopIteration):
            continue  # closed meanwhile
    return found


def test_a_large_download_is_written_direct_with_every_digest_right(transferd, origin, tmp_path):
    sid = create_session(transferd, mode="background")
    size = 40 * MiB + 12_345
    task = create_task(transferd, sid, download(origin.url(f"/bytes/{size}?seed=dw&rate={16 * MiB}"),
                                                download={"digests": ALGORITHMS}))
    wait_progress(transferd, sid, task["id"], 4 * MiB)
    assert direct_descriptors(transferd.pid), "no O_DIRECT descriptor while the download runs"
    done = assert_success(wait_task(transferd, sid, task["id"], timeout=60))
    content = Origin.expected_bytes(size, "dw")
    assert done["result"]["digests"] == expected(content)
    with open(done["result"]["location"], "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == expected(content)["sha256"]
    assert direct_descriptors(transferd.pid) == [], "the O_DIRECT descriptor outlived its download"


def test_direct_writes_off_keeps_downloads_in_the_page_cache(start_transferd, api_token, origin):
    td = start_transferd("--direct-writes", "off", api_token=api_token)
    sid = create_session(td, mode="background")
    size = 24 * MiB
    task = create_task(td, sid, download(origin.url(f"/bytes/{size}?seed=do&rate={12 * MiB}"),
                                         download={"digests": ["sha256", "crc32c"]}))
    wait_progress(td, sid, task["id"], 4 * MiB)
    assert direct_descriptors(td.pid) == []
    done = assert_success(wait_task(td, sid, task["id"], timeout=60))
    want = expected(Origin.expected_bytes(size, "do"))
    assert done["result"]["digests"] == {"sha256": want["sha256"], "crc32c": want["crc32c"]}


def test_a_reset_download_continues_direct_from_an_unaligned_offset(transferd, origin):
    """The connection resets after an odd number of bytes: the retry continues there with Range,
    writes up to the next 4 KiB boundary through the page cache and the rest direct, and the
    hasher reads the first part back from the file."""
    sid = create_session(transferd, mode="background", configuration={"retry": QUICK})
    size, cut = 40 * MiB, 23 * MiB + 12_345
    task = create_task(transferd, sid, download(origin.url(f"/bytes/{size}?seed=du&reset_after={cut}"),
                                                download={"digests": ALGORITHMS}))
    done = assert_success(wait_task(transferd, sid, task["id"], timeout=60))
    assert done["result"]["digests"] == expected(Origin.expected_bytes(size, "du"))
    assert done["metrics"]["attempts"] == 2, done["metrics"]
    assert origin.requests[-1].headers.get("range") == f"bytes={cut}-"


def test_a_direct_download_killed_mid_way_continues_from_what_reached_the_file(transferd, origin):
    sid = create_session(transferd, mode="background")
    size = 48 * MiB + 3
    task = create_task(transferd, sid, download(origin.url(f"/bytes/{size}?seed=dk&rate={12 * MiB}"),
                                                download={"digests": ["sha512", "md5", "crc32c"]}))
    wait_progress(transferd, sid, task["id"], 20 * MiB)
    transferd.kill9()
    transferd.restart()
    done = assert_success(wait_task(transferd, sid, task["id"], timeout=60))
    want = expected(Origin.expected_bytes(size, "dk"))
    assert done["result"]["digests"] == {k: want[k] for k in ("sha512", "md5", "crc32c")}
    resumed = origin.requests[-1].headers.get("range")
    assert resumed and resumed.startswith("bytes="), origin.requests[-1].headers
    assert int(resumed[len("bytes="):-1]) >= 16 * MiB, resumed
    assert get_task(transferd, sid, task["id"])["result"]["size"] == size
    wait_for(lambda: direct_descriptors(transferd.pid) == [], 5, message="no O_DIRECT descriptor left")
