"""Package.swift declares, for every Swift target, exactly the modules its sources import (no
dependency left over after code moved, none used without being declared), and the tunnel engine's
dependency closure holds no Linux host module."""

import re

import harness as h

PACKAGE = (h.REPO / "Package.swift").read_text()
# System modules that need no declaration (the toolchain's own).
IMPLICIT = {"Glibc", "Dispatch", "Synchronization", "XCTest", "Foundation", "Testing", "PackageDescription"}
HOST_MODULES = {"SluiceHost", "CSluiceHostShims", "SluiceUp", "SluiceControl", "SluiceConfig"}


def targets() -> dict[str, dict]:
    found = {}
    for m in re.finditer(r'\.(target|testTarget|executableTarget|systemLibrary)\(\s*name:\s*"([^"]+)"(.*?)\)(?:,\s*$|\s*$)',
                         PACKAGE, re.S | re.M):
        kind, name, rest = m.groups()
        deps = re.search(r'dependencies:\s*\[([^\]]*)\]', rest)
        path = re.search(r'path:\s*"([^"]+)"', rest)
        found[name] = {
            "kind": kind,
            "deps": set(re.findall(r'"([^"]+)"', deps.group(1))) if deps else set(),
            "path": path.group(1) if path else ("Tests/" if kind == "testTarget" else "Sources/") + name,
        }
    return found


def imports(path: str) -> set[str]:
    names = set()
    for f in (h.REPO / path).rglob("*.swift"):
        for line in f.read_text().splitlines():
            m = re.match(r'\s*(?:@testable\s+|@_implementationOnly\s+)?import\s+(?:struct\s+|enum\s+|class\s+)?(\w+)', line)
            if m:
                names.add(m.group(1))
    return names - IMPLICIT


def test_declared_dependencies_are_the_imports():
    all_targets = targets()
    assert "SluiceTunnel" in all_targets and "sluice" in all_targets
    problems = []
    for name, t in all_targets.items():
        if t["kind"] == "systemLibrary":
            continue
        used = imports(t["path"])
        if used - t["deps"]:
            problems.append(f"{name} imports {sorted(used - t['deps'])} without declaring them")
        if t["deps"] - used:
            problems.append(f"{name} declares {sorted(t['deps'] - used)} but imports none of them")
    assert problems == []


def test_the_engine_depends_on_no_host_module():
    all_targets = targets()
    seen, todo = set(), ["SluiceTunnel"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += list(all_targets.get(name, {}).get("deps", ()))
    assert seen & HOST_MODULES == set(), f"SluiceTunnel reaches {sorted(seen & HOST_MODULES)}"
    tests = all_targets["SluiceTunnelTests"]["deps"]
    assert tests & HOST_MODULES == set(), "its tests run without the host layer too"
