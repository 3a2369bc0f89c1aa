"""The package's modules as the sources draw them: each target's `import` lines (Sources/ and
Tests/) and its dependencies in Package.swift, and the allowed graph in Sources/module-layers.txt.

Shared by Tests/integration/test_module_layers.py, which holds the three to one another, and
scripts/architecture-figures.py, which prints the graph for docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
LAYERS_FILE = REPO_ROOT / "Sources" / "module-layers.txt"

# `import X`, `@testable import X`, `@_spi(Generated) import X`, `package import X`, `import struct X.Y`.
IMPORT = re.compile(
    r"^[ \t]*(?:@\w+(?:\([^)]*\))?[ \t]+)*(?:(?:public|package|internal|fileprivate|private)[ \t]+)?"
    r"import[ \t]+(?:(?:struct|class|enum|protocol|typealias|func|var|let)[ \t]+)?(\w+)",
    re.MULTILINE,
)
TARGET = re.compile(r"\.(target|executableTarget|testTarget|systemLibrary)\(\s*name:\s*\"(\w+)\"")


@dataclass
class Target:
    name: str
    kind: str  # target, executableTarget, testTarget, systemLibrary
    # The package's own modules it depends on, and the products of other packages.
    dependencies: list[str] = field(default_factory=list)
    products: list[str] = field(default_factory=list)
    path: str | None = None

    @property
    def directory(self) -> Path:
        if self.path:
            return REPO_ROOT / self.path
        return REPO_ROOT / ("Tests" if self.kind == "testTarget" else "Sources") / self.name


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)
    return re.sub(r"//[^\n]*", "", text)


def _balanced(text: str, start: int, open_: str, close: str) -> str:
    """The text from `start` (just after an opening bracket) to its matching closing bracket."""
    depth = 1
    for i in range(start, len(text)):
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return text[start:i]
    raise ValueError("unbalanced brackets in Package.swift")


def package_targets(manifest: Path = REPO_ROOT / "Package.swift") -> dict[str, Target]:
    """The targets Package.swift declares, with their dependencies, read from its text."""
    text = _strip_comments(manifest.read_text())
    targets: dict[str, Target] = {}
    for match in TARGET.finditer(text):
        body = _balanced(text, text.index("(", match.start()) + 1, "(", ")")
        target = Target(name=match.group(2), kind=match.group(1))
        deps = re.search(r"dependencies:\s*\[", body)
        if deps:
            listed = _balanced(body, deps.end(), "[", "]")
            target.products = re.findall(r"\.product\(\s*name:\s*\"(\w+)\"", listed)
            without_products = re.sub(r"\.product\([^)]*\)", "", listed)
            target.dependencies = re.findall(r"\"(\w+)\"", without_products)
        path = re.search(r"path:\s*\"([^\"]+)\"", body)
        target.path = path.group(1) if path else None
        targets[target.name] = target
    return targets


def swift_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*.swift") if p.is_file())


def imports(target: Target) -> dict[str, list[str]]:
    """Every module `target`'s Swift files import, with where (path:line, from the repository root)."""
    found: dict[str, list[str]] = {}
    for path in swift_files(target.directory):
        text = path.read_text(errors="replace")
        for match in IMPORT.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.setdefault(match.group(1), []).append(f"{path.relative_to(REPO_ROOT)}:{line}")
    return found


@dataclass
class Layers:
    """Sources/module-layers.txt: the layers, lowest first, each a title and its modules with the
    modules each may import; and the modules of other packages and of the system, not checked."""

    outside: set[str]
    layers: list[tuple[str, dict[str, list[str]]]]

    @property
    def allowed(self) -> dict[str, list[str]]:
        return {m: deps for _, modules in self.layers for m, deps in modules.items()}

    @property
    def layer_of(self) -> dict[str, int]:
        return {m: i for i, (_, modules) in enumerate(self.layers) for m in modules}


def read_layers(path: Path = LAYERS_FILE) -> Layers:
    outside: set[str] = set()
    layers: list[tuple[str, dict[str, list[str]]]] = []
    continues_outside = False
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line:
            continues_outside = False
            continue
        if line.startswith("outside:") or (continues_outside and raw[:1].isspace()):
            outside.update(line.removeprefix("outside:").split())
            continues_outside = True
        elif line.startswith("layer "):
            layers.append((line.removeprefix("layer ").strip(), {}))
        else:
            if not layers:
                raise ValueError(f"{path.name}: {line!r} comes before any `layer` line")
            name, _, deps = line.partition(":")
            layers[-1][1][name.strip()] = deps.split()
    return Layers(outside=outside, layers=layers)
