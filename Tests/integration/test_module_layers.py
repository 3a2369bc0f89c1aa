"""The module graph holds to Sources/module-layers.txt, the one place it is written down: layers
that point one way, every `import` in Sources/ and Tests/ allowed there, and Package.swift
declaring exactly the dependencies listed, each of them used.

Reads the sources only: no transferd process, no build.
"""

from __future__ import annotations

import sys

import pytest

from support.transferd import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "scripts"))
import module_graph  # noqa: E402  (found through the path above)


@pytest.fixture(scope="module")
def layers() -> module_graph.Layers:
    return module_graph.read_layers()


@pytest.fixture(scope="module")
def targets() -> dict[str, module_graph.Target]:
    return module_graph.package_targets()


def test_every_target_stands_in_one_layer(layers, targets):
    listed = [m for _, modules in layers.layers for m in modules]
    twice = sorted({m for m in listed if listed.count(m) > 1})
    assert not twice, f"listed in more than one place in module-layers.txt: {twice}"
    assert sorted(set(targets) - set(listed)) == [], "targets of Package.swift missing from module-layers.txt"
    assert sorted(set(listed) - set(targets)) == [], "modules of module-layers.txt that Package.swift does not declare"
    assert not layers.outside & set(listed), "a module of this package is listed as outside"


def test_layers_point_down(layers):
    layer_of = layers.layer_of
    wrong = [f"{module} (layer {layer_of[module]}) → {dep} ({'layer ' + str(layer_of[dep]) if dep in layer_of else 'not a module'})"
             for module, deps in layers.allowed.items() for dep in deps
             if dep not in layer_of or layer_of[dep] >= layer_of[module]]
    assert not wrong, "dependencies that do not point to a lower layer:\n" + "\n".join(wrong)


def test_package_declares_the_listed_dependencies(layers, targets):
    allowed = layers.allowed
    wrong = []
    for name, target in sorted(targets.items()):
        declared, listed = set(target.dependencies), set(allowed.get(name, []))
        if declared != listed:
            wrong.append(f"{name}: Package.swift also has {sorted(declared - listed)}, lacks {sorted(listed - declared)}")
    assert not wrong, "Package.swift and module-layers.txt disagree:\n" + "\n".join(wrong)


def test_modules_import_only_what_they_may(layers, targets):
    allowed = layers.allowed
    wrong = []
    for name, target in sorted(targets.items()):
        if target.kind == "systemLibrary":
            continue
        for module, places in sorted(module_graph.imports(target).items()):
            if module in layers.outside or module in allowed.get(name, []):
                continue
            why = "an import it must not have" if module in allowed else "a module module-layers.txt does not know"
            wrong.append(f"{name} imports {module}, {why}: {', '.join(places[:3])}")
    assert not wrong, "imports outside the allowed graph:\n" + "\n".join(wrong)


def test_every_listed_dependency_is_imported(layers, targets):
    wrong = []
    for name, deps in sorted(layers.allowed.items()):
        target = targets.get(name)
        if target is None or target.kind == "systemLibrary":
            continue
        imported = module_graph.imports(target)
        for dep in deps:
            # A test may need a program built without importing it (it runs the binary).
            built_only = target.kind == "testTarget" and targets.get(dep) and targets[dep].kind == "executableTarget"
            if dep not in imported and not built_only:
                wrong.append(f"{name} never imports {dep}")
    assert not wrong, "dependencies nothing uses:\n" + "\n".join(wrong)
