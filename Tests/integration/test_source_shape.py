"""The shape of the hand-written sources: no file over 400 lines, and no type spread over more
than six files of extensions — a type extended across many files is several types, and a long
file is several concepts. Reads Sources/ only (not the generated TransferdClient): no build.
"""

from __future__ import annotations

import re
from collections import defaultdict

from support.transferd import REPO_ROOT

MAX_LINES = 400
MAX_EXTENSION_FILES = 6
EXTENSION = re.compile(r"^\s*(?:(?:public|package|internal|fileprivate|private)\s+)?extension\s+([A-Z]\w*)\b", re.MULTILINE)


def hand_written():
    sources = REPO_ROOT / "Sources"
    return sorted(p for p in sources.rglob("*.swift") if p.relative_to(sources).parts[0] != "TransferdClient")


def test_no_file_is_over_the_line_limit():
    long = {str(p.relative_to(REPO_ROOT)): n for p in hand_written() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"files over {MAX_LINES} lines: {long}"


def test_no_type_is_spread_over_more_files_than_the_limit():
    files = defaultdict(set)
    for path in hand_written():
        for name in EXTENSION.findall(path.read_text()):
            files[name].add(str(path.relative_to(REPO_ROOT)))
    # Extensions of the standard library's and other packages' types are helpers, not a type we own.
    foreign = {"String", "Array", "Collection", "Sequence", "Int", "Int64", "UInt8", "Double", "Optional", "Result", "Substring"}
    spread = {name: sorted(paths) for name, paths in files.items() if name not in foreign and len(paths) > MAX_EXTENSION_FILES}
    assert not spread, f"types extended across more than {MAX_EXTENSION_FILES} files: {spread}"


def test_the_check_sees_extensions():
    # A guard against a pattern that silently matches nothing.
    assert EXTENSION.findall("extension TaskRunner {\npackage extension Foo: Bar {") == ["TaskRunner", "Foo"]
