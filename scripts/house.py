"""Print the package's shape from its own imports: rooms, arrows, floors, circles, docker importers.

Every import counts, function-level and ``TYPE_CHECKING`` ones included, because each is a
dependency a reader must follow. A floor is a room (a folder of the package) in the longest chain
of rooms importing rooms; the longest chain of modules is printed beside it. Run
``python scripts/house.py`` (``--check`` exits 1 when a goal is missed: at most 12 top-level
entries, at most 8 floors, no circle of modules or of rooms, only the engine room imports
``docker``).
"""

from __future__ import annotations

import argparse
import ast
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "pytest_gaia2"
ISLAND = f"{PACKAGE}.reference"
"""The in-container reference image: standard-library code that never imports the host side."""
MAX_ENTRIES, MAX_FLOORS = 12, 8
DOCKER_ROOM = f"{PACKAGE}.engine"


def modules() -> dict[str, Path]:
    """Every host-side module of the package, by dotted name."""
    found = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        name = name.removesuffix(".__init__")
        if not (name == ISLAND or name.startswith(ISLAND + ".")):
            found[name] = path
    return found


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level > 1:
        base = base[: len(base) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def imports(name: str, path: Path, known: dict[str, Path]) -> tuple[set[str], bool]:
    """The package modules ``name`` imports, and whether it imports ``docker``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    targets: set[str] = set()
    docker = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                docker |= alias.name.split(".")[0] == "docker"
                targets.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                docker |= (node.module or "").split(".")[0] == "docker"
                base = node.module or ""
            else:
                base = _resolve(name, node, path.name == "__init__.py")
            targets.add(base)
            targets.update(f"{base}.{alias.name}" for alias in node.names)
    inside = {target for target in targets if target in known and target != name}
    return inside, docker


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    args = parser.parse_args()
    known = modules()
    graph: dict[str, set[str]] = {}
    docker_importers = []
    for name, path in known.items():
        graph[name], docker = imports(name, path, known)
        if docker:
            docker_importers.append(name)
    # A package's __init__ that only re-exports does not make its room depend on itself.
    for name in graph:
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}

    circles = _circles(graph)

    @cache
    def floor(name: str) -> int:
        return 1 + max((floor(t) for t in graph[name]), default=0)

    rooms: dict[str, set[str]] = {}
    for name, targets in graph.items():
        if name.count(".") >= 1:
            room = name.split(".")[1]
            rooms.setdefault(room, set()).update(t.split(".")[1] for t in targets if t.count(".") >= 1)
    rooms = {room: targets - {room} for room, targets in rooms.items()}
    room_circles = _circles(rooms)

    @cache
    def room_floor(room: str) -> int:
        return 1 + max((room_floor(t) for t in rooms[room]), default=0)

    floors = max(map(room_floor, rooms)) if not room_circles else -1
    chain_length = max(floor(name) for name in graph) if not circles else -1
    entries = sorted(
        p.name for p in (ROOT / PACKAGE).iterdir() if p.name not in ("__pycache__",) and not p.name.startswith(".")
    )
    arrows = sum(len(targets) for targets in graph.values())
    print(f"top-level entries of {PACKAGE}/ ({len(entries)}): {', '.join(entries)}")
    print(f"modules: {len(graph)}; import arrows: {arrows}")
    print(f"floors (longest chain of rooms): {floors if floors > 0 else 'undefined: rooms import each other'}")
    for room in sorted(rooms, key=room_floor, reverse=True) if floors > 0 else ():
        print(f"  floor {room_floor(room)}: {room} -> {', '.join(sorted(rooms[room])) or '-'}")
    print(f"longest chain of modules: {chain_length if chain_length > 0 else 'undefined: circles'}")
    if chain_length > 0:
        top = max(graph, key=floor)
        chain = [top]
        while graph[chain[-1]]:
            chain.append(max(graph[chain[-1]], key=floor))
        print("  longest chain: " + " -> ".join(chain))
    print(f"circles: {len(circles)}" + "".join(f"\n  {' -> '.join(c)}" for c in circles + room_circles))
    print(f"docker importers: {', '.join(docker_importers) or 'none'}")
    missed = []
    if len(entries) > MAX_ENTRIES:
        missed.append(f"{len(entries)} top-level entries (goal <= {MAX_ENTRIES})")
    if floors < 0 or floors > MAX_FLOORS:
        missed.append(f"floors {floors} (goal <= {MAX_FLOORS})")
    if circles or room_circles:
        missed.append(f"{len(circles) + len(room_circles)} circle(s)")
    if any(not (d == DOCKER_ROOM or d.startswith(DOCKER_ROOM + ".")) for d in docker_importers):
        missed.append(f"docker imported outside {DOCKER_ROOM}")
    for line in missed:
        print(f"goal missed: {line}")
    return 1 if (args.check and missed) else 0


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


if __name__ == "__main__":
    sys.exit(main())
