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


def test_fuzz_build_knows_each_fuzzed_modules_imports():
    """scripts/fuzz.sh builds the fuzzed modules itself, in rounds, each after the modules its DEPS
    names: a module that gains an import must gain it there too, or `make fuzz-check` (part of
    `make test`) fails to compile it."""
    script = (h.REPO / "scripts" / "fuzz.sh").read_text()
    deps = {name: set(listed.split()) for name, listed in
            re.findall(r'\[(\w+)\]="([^"]*)"', re.search(r'declare -A DEPS=\((.*?)\)\n', script, re.S).group(1))}
    rounds = [r.split() for r in re.findall(r'"([^"]+)"', re.search(r'ROUNDS=\((.*?)\)\n', script, re.S).group(1))]
    place = {module: i for i, r in enumerate(rounds) for module in r}
    for module in place:
        if module.startswith("C"):
            continue  # C shims: clang, no Swift imports
        wanted = {m for m in imports(f"Sources/{module}") if not m.startswith(("CSodium", "CGcrypt"))}
        assert wanted == deps.get(module, set()), f"fuzz.sh DEPS[{module}] should be {sorted(wanted)}"
        for dep in wanted:
            assert place.get(dep, 99) < place[module], f"fuzz.sh builds {dep} in a round after {module}, which imports it"
