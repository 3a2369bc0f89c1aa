#!/usr/bin/env python3
"""Prints the figures docs/ARCHITECTURE.md shows, from the sources as they are (never kept by
hand): the module graph as a Mermaid block from the `import` lines, the executors created (with
file:line), the counts of `@unchecked Sendable`, locks and confinement checks, and the types
extended across the most files.

Reads Sources/ only, without the generated Sources/TransferdClient. Sites are counted, not
instances: one `EventLoop(name:)` in a loop over the cores counts once.

    scripts/architecture-figures.py [--root DIR]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import module_graph  # noqa: E402  (found through the path above)

GENERATED = {"TransferdClient"}

# Where work runs: each kind of executor by the code that creates one.
EXECUTORS = {
    "dispatch queue": re.compile(r"\bDispatchQueue\((?:label:\s*)?(\"[^\"]*\")?"),
    "event loop": re.compile(r"\bEventLoop\(name:\s*(\"[^\"]*\")?"),
    "grouping thread": re.compile(r"\bGroupingThread(?:<[^>]*>)?\(name:\s*(\"[^\"]*\")?"),
    "thread": re.compile(r"(?<!func )\bstartThread\(named:\s*(\"[^\"]*\")?"),
    "global pool": re.compile(r"\bDispatchQueue\.(?:global\(|concurrentPerform)()"),
}

COUNTS = {
    "`@unchecked Sendable`": re.compile(r"@unchecked\s+Sendable"),
    "`.locked {` calls": re.compile(r"\.locked\s*\{"),
    "`locked(` calls": re.compile(r"(?<!func )\blocked\("),
    "`.withLock` calls": re.compile(r"\.withLock\b"),
    "locks made (`Lock()`, `Locked(`, `Mutex(`)": re.compile(r"\bLock\(\)|\bLocked(?:<[^>]*>)?\(|\bMutex(?:<[^>]*>)?\("),
    "`dispatchPrecondition`": re.compile(r"\bdispatchPrecondition\("),
}
LOCK_HELD_COMMENT = re.compile(r"//.*\(lock held\)")
EXTENSION = re.compile(r"^\s*(?:(?:public|package|internal|fileprivate|private)\s+)?extension\s+([A-Z]\w*)\b", re.MULTILINE)


def code_of(line: str) -> str:
    """The line without its `//` comment (a `//` inside a string literal is rare enough here)."""
    quoted = False
    for i, c in enumerate(line):
        if c == '"':
            quoted = not quoted
        elif not quoted and line.startswith("//", i):
            return line[:i]
    return line


def source_files(root: Path) -> list[Path]:
    sources = root / "Sources"
    return sorted(p for p in sources.rglob("*.swift") if p.relative_to(sources).parts[0] not in GENERATED)


def mermaid(root: Path) -> str:
    module_graph.REPO_ROOT = root
    targets = module_graph.package_targets(root / "Package.swift")
    swift = {n: t for n, t in targets.items()
             if t.kind in ("target", "executableTarget") and t.directory.parent == root / "Sources"
             and not n.startswith("Fuzz") and n != "CCRC32C"}
    lines = ["```mermaid", "graph BT",
             "    %% Swift modules of Sources/ (not the fuzzers); an arrow points to what a module imports."]
    for name in sorted(swift):
        deps = sorted(m for m in module_graph.imports(swift[name]) if m in swift)
        for dep in deps:
            lines.append(f"    {name} --> {dep}")
        if not deps:
            lines.append(f"    {name}")
    lines.append("```")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=module_graph.REPO_ROOT, help="the repository (default: this one)")
    root = parser.parse_args().root.resolve()

    executors: dict[str, list[str]] = defaultdict(list)
    counts: dict[str, int] = defaultdict(int)
    per_module: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    extended_in: dict[str, set[str]] = defaultdict(set)
    lines_of: dict[str, int] = {}
    for path in source_files(root):
        where = str(path.relative_to(root))
        module = path.relative_to(root / "Sources").parts[0]
        text = path.read_text(errors="replace")
        lines_of[where] = text.count("\n")
        for type_name in set(EXTENSION.findall(text)):
            extended_in[type_name].add(where)
        for number, line in enumerate(text.splitlines(), 1):
            if LOCK_HELD_COMMENT.search(line):
                counts["\"(lock held)\" comments"] += 1
                per_module[module]["\"(lock held)\" comments"] += 1
            code = code_of(line)
            if re.match(r"\s*(public |package )?func startThread", code):
                continue
            for kind, pattern in EXECUTORS.items():
                for match in pattern.finditer(code):
                    label = f" {match.group(1)}" if match.group(1) else ""
                    executors[kind].append(f"{where}:{number}{label}")
            for name, pattern in COUNTS.items():
                n = len(pattern.findall(code))
                counts[name] += n
                per_module[module][name] += n

    print("## Module graph\n")
    print(mermaid(root))

    total = sum(len(sites) for sites in executors.values())
    print(f"\n## Executors: {total} sites\n")
    for kind in EXECUTORS:
        print(f"- {kind}: {len(executors[kind])}")
        for site in executors[kind]:
            print(f"  - {site}")

    print("\n## Shared state\n")
    names = list(COUNTS) + ["\"(lock held)\" comments"]
    for name in names:
        print(f"- {name}: {counts[name]}")
    print("\n| module | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for module in sorted(per_module):
        row = [per_module[module][n] for n in names]
        if any(row):
            print(f"| {module} | " + " | ".join(str(v) for v in row) + " |")

    print("\n## Types extended across the most files\n")
    print("| type | files with `extension` | lines of those files |")
    print("|---|---|---|")
    ranked = sorted(extended_in.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    for type_name, files in ranked[:10]:
        print(f"| {type_name} | {len(files)} | {sum(lines_of[f] for f in files)} |")


if __name__ == "__main__":
    main()
