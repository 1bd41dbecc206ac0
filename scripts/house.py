"""Print the package's shape from its own imports: rooms, arrows, floors, circles, docker importers.

Every import counts, function-level and ``TYPE_CHECKING`` ones included, because each is a
dependency a reader must follow. A floor is a room (a folder of the package) in the longest chain
of rooms importing rooms; the longest chain of modules is printed beside it. Run
``python scripts/house.py`` (``--check`` exits 1 when a goal is missed: at most 12 top-level
entries, at most 8 floors, no circle of modules or of rooms, only the engine room imports
``docker``, at most ``MAX_MOVES`` moves between rooms on the walk of one scenario).

The walk follows one parameter (by default ``item`` of ``ScenarioRunner.result_for``; ``--walk
FILE:QUALNAME:PARAM`` another, and prints the route) through the source, depth first, each
function visited once. In a function it follows the parameter, any attribute chain of it
(``item.split``) and every local name assigned from an expression that carries a followed name
(``where = scenario_dir(folder, item)``; a ``for`` or comprehension target too; a comparison, a
``not`` or an ``if`` test carries none). A call with an argument (positional or keyword) that
carries a followed name is entered when its target is a function or class of the package,
resolved through the module's definitions, its imports (``from pkg.x import f``, ``from pkg
import module``, ``import pkg.x as m``, re-exports), ``self.method`` and annotated names (a
parameter ``folder: RunFolder``, a class's annotated fields and properties, ``self.x = param`` in
``__init__``, a local assigned from a constructor or an annotated function); a class is entered
at its own ``__init__``. The matching parameter is followed there. The route lists each function
entered and each return to a caller that passes the value on again; a stay is a run of
consecutive steps in one module, a move a step from one room to another, a climb a move to a
room on a higher floor.

It cannot see dynamic dispatch (a method of a subclass, a protocol, ``getattr``), callbacks (a
function handed over and called later), a method called *on* the followed value (the receiver is
not an argument), a property (read as an attribute), attributes stored on ``self`` for later
methods, a dataclass's generated ``__init__``, or a receiver whose type no annotation names. It
is a static reading of the source, not a trace: a path taken only sometimes (a chained scenario's
checkpoint, a stored verdict) counts as if always taken.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "pytest_gaia2"
"""Its ``reference`` folder is the in-container image: standard-library code that never imports the host side."""
MAX_ENTRIES, MAX_FLOORS, MAX_MOVES = 12, 8, 20
DOCKER_ROOM = f"{PACKAGE}.engine"


def modules(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Every host-side module of the package, by dotted name."""
    found = {}
    island = f"{package}.reference"
    for path in sorted((root / package).rglob("*.py")):
        name = ".".join(path.relative_to(root).with_suffix("").parts)
        name = name.removesuffix(".__init__")
        if not (name == island or name.startswith(island + ".")):
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


def import_graph(known: dict[str, Path]) -> tuple[dict[str, set[str]], list[str]]:
    """Module -> the package modules it imports; and the modules that import ``docker``."""
    graph: dict[str, set[str]] = {}
    docker_importers = []
    for name, path in known.items():
        graph[name], docker = imports(name, path, known)
        if docker:
            docker_importers.append(name)
    # A package's __init__ that only re-exports does not make its room depend on itself.
    graph = {name: {t for t in targets if not name.startswith(t + ".")} for name, targets in graph.items()}
    return graph, docker_importers


def room_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Room (a top-level subpackage) -> the rooms its modules import."""
    rooms: dict[str, set[str]] = {}
    for name, targets in graph.items():
        if name.count(".") >= 1:
            room = name.split(".")[1]
            rooms.setdefault(room, set()).update(t.split(".")[1] for t in targets if t.count(".") >= 1)
    return {room: targets - {room} for room, targets in rooms.items()}


def room_floors(rooms: dict[str, set[str]]) -> Callable[[str], int]:
    """A room's floor: 1 + the highest floor of the rooms it imports (no circle among rooms)."""

    @cache
    def room_floor(room: str) -> int:
        return 1 + max((room_floor(t) for t in rooms.get(room, ())), default=0)

    return room_floor


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    parser.add_argument(
        "--walk", nargs="?", const=ENTRY, metavar="FILE:QUALNAME:PARAM", help=f"print the route too (default {ENTRY})"
    )
    args = parser.parse_args()
    known = modules()
    graph, docker_importers = import_graph(known)
    circles = _circles(graph)

    @cache
    def floor(name: str) -> int:
        return 1 + max((floor(t) for t in graph[name]), default=0)

    rooms = room_graph(graph)
    room_circles = _circles(rooms)
    room_floor = room_floors(rooms)
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
    stays, totals = walk_figures(known, room_floor, args.walk or ENTRY) if floors > 0 else ([], {})
    print(f"walk of {args.walk or ENTRY}: " + ", ".join(f"{n} {what}" for what, n in totals.items()))
    for number, (where, functions) in enumerate(stays if args.walk else [], start=1):
        print(
            f"  {number:2d}. {where.removeprefix(PACKAGE + '.')} (floor {room_floor(_room(where))}): {', '.join(functions)}"
        )
    missed = []
    if len(entries) > MAX_ENTRIES:
        missed.append(f"{len(entries)} top-level entries (goal <= {MAX_ENTRIES})")
    if floors < 0 or floors > MAX_FLOORS:
        missed.append(f"floors {floors} (goal <= {MAX_FLOORS})")
    if circles or room_circles:
        missed.append(f"{len(circles) + len(room_circles)} circle(s)")
    if any(not (d == DOCKER_ROOM or d.startswith(DOCKER_ROOM + ".")) for d in docker_importers):
        missed.append(f"docker imported outside {DOCKER_ROOM}")
    if (args.walk or ENTRY) == ENTRY and totals.get("moves", MAX_MOVES + 1) > MAX_MOVES:
        missed.append(f"the walk's moves between rooms {totals.get('moves', '?')} (goal <= {MAX_MOVES})")
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


# -- the walk of one scenario ------------------------------------------------------------------

ENTRY = f"{PACKAGE}/run/scenario_runs.py:ScenarioRunner.result_for:item"
Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


class Walk:
    """Follows one parameter through the package's calls, statically (see the module docstring)."""

    def __init__(self, known: dict[str, Path]) -> None:
        self.defs: dict[str, dict[str, Def]] = {}
        self.names: dict[str, dict[str, str]] = {}
        self.attrs: dict[str, str] = {}
        """``module.Class.attr`` -> the dotted type of ``self.attr`` (annotated fields, properties,
        ``self.attr = param`` in ``__init__``)."""
        for module, path in known.items():
            tree = ast.parse(path.read_text(encoding="utf-8"))
            defs: dict[str, Def] = {}
            names = {}
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom):
                    base = (
                        (node.module or "") if node.level == 0 else _resolve(module, node, path.name == "__init__.py")
                    )
                    names.update({a.asname or a.name: f"{base}.{a.name}" for a in node.names})
                elif isinstance(node, ast.Import):
                    names.update({a.asname: a.name for a in node.names if a.asname})
            for node in tree.body:
                if isinstance(node, Def):
                    defs[node.name] = node
                    names[node.name] = f"{module}.{node.name}"
                if isinstance(node, ast.ClassDef):
                    defs.update({f"{node.name}.{m.name}": m for m in node.body if isinstance(m, Def)})
            self.defs[module], self.names[module] = defs, names
        for module, defs in self.defs.items():
            for qual, node in defs.items():
                if isinstance(node, ast.ClassDef):
                    self._class_attrs(module, qual, node)

    def _class_attrs(self, module: str, qual: str, node: ast.ClassDef) -> None:
        prefix = f"{module}.{qual}."
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                self._set(prefix + item.target.id, self.annotation(module, item.annotation))
            elif isinstance(item, ast.FunctionDef) and any(
                _name_of(d).endswith("property") for d in item.decorator_list
            ):
                self._set(prefix + item.name, self.annotation(module, item.returns))
            elif isinstance(item, ast.FunctionDef) and item.name == "__init__":
                typed = {a.arg: self.annotation(module, a.annotation) for a in _params(item) if a.annotation}
                for stmt in ast.walk(item):
                    if isinstance(stmt, ast.Assign | ast.AnnAssign):
                        target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
                        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                            value = stmt.value
                            found = isinstance(value, ast.Name) and typed.get(value.id)
                            if isinstance(stmt, ast.AnnAssign):
                                found = self.annotation(module, stmt.annotation)
                            self._set(prefix + target.attr, found or None)

    def _set(self, key: str, value: str | None) -> None:
        if value is not None:
            self.attrs.setdefault(key, value)

    def annotation(self, module: str, node: ast.expr | None) -> str | None:
        """The dotted name of a package class an annotation names (``X | None`` counts as ``X``)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node = ast.parse(node.value, mode="eval").body
        if isinstance(node, ast.BinOp):
            return self.annotation(module, node.left) or self.annotation(module, node.right)
        dotted = self.dotted(module, node, {}) if isinstance(node, ast.Name | ast.Attribute) else None
        return dotted if dotted and self.lookup(dotted) else None

    def lookup(self, dotted: str, depth: int = 0) -> tuple[str, str] | None:
        """``(module, qualname)`` of a package function or class, through re-exports."""
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module, rest = ".".join(parts[:cut]), parts[cut:]
            if module in self.defs:
                qual = ".".join(rest)
                if qual in self.defs[module]:
                    return module, qual
                again = self.names[module].get(rest[0])
                if again and again != dotted and depth < 5:
                    return self.lookup(".".join([again, *rest[1:]]), depth + 1)
                return None
        return None

    def dotted(self, module: str, node: ast.expr, local: dict[str, str | None]) -> str | None:
        """What a call's target names: a dotted path through imports, local types and ``self``."""
        if isinstance(node, ast.Name):
            return local[node.id] if node.id in local else self.names[module].get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(module, node.value, local)
            return None if base is None else self.attrs.get(f"{base}.{node.attr}", f"{base}.{node.attr}")
        return None

    def route(self, module: str, qual: str, param: str) -> list[tuple[str, str, str]]:
        """The functions the parameter reaches, depth first, with each return to a caller that
        passes it on again: ``(module, qualname, names followed)``."""
        route: list[tuple[str, str, str]] = []
        seen: set[tuple[str, str]] = set()

        def visit(module: str, qual: str, followed: set[str]) -> None:
            seen.add((module, qual))
            node = self.defs[module][qual]
            assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            here = (module, qual, ", ".join(sorted(followed)))
            route.append(here)
            owner = qual.rpartition(".")[0]
            local: dict[str, str | None] = {a.arg: self.annotation(module, a.annotation) for a in _params(node)}
            if owner and _params(node) and not _static(node):
                local[_params(node)[0].arg] = f"{module}.{owner}"

            def mentions(expr: ast.AST) -> bool:
                """Whether the expression's value carries a followed name (a test or a comparison does not)."""
                if isinstance(expr, ast.Name):
                    return expr.id in followed
                if isinstance(expr, ast.Compare) or (isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not)):
                    return False
                if isinstance(expr, ast.IfExp):
                    return mentions(expr.body) or mentions(expr.orelse)
                return any(mentions(child) for child in ast.iter_child_nodes(expr))

            def call(node: ast.Call) -> None:
                target = self.dotted(module, node.func, local)
                found = self.lookup(target) if target else None
                if found is None:
                    return
                callee = self.defs[found[0]][found[1]]
                if isinstance(callee, ast.ClassDef):
                    found = (found[0], f"{found[1]}.__init__")
                    if found[1] not in self.defs[found[0]]:
                        return  # a generated __init__ (a dataclass) is no code of the package
                    callee = self.defs[found[0]][found[1]]
                assert isinstance(callee, ast.FunctionDef | ast.AsyncFunctionDef)
                params = _params(callee)
                bound = "." in found[1] and not _static(callee)
                passed = set()
                positional = params[1:] if bound else params
                for index, arg in enumerate(node.args):
                    if mentions(arg) and not isinstance(arg, ast.Starred) and index < len(positional):
                        passed.add(positional[index].arg)
                names = {a.arg for a in params}
                passed.update(k.arg for k in node.keywords if k.arg in names and mentions(k.value))
                if passed and found not in seen:
                    if route[-1] != here:
                        route.append(here)
                    visit(*found, passed)

            def walk(node: ast.AST) -> None:
                if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.For | ast.comprehension):
                    source = node.iter if isinstance(node, ast.For | ast.comprehension) else node.value
                    if source is not None:
                        walk(source)
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    stored = (n for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
                    for name in (n for n in stored if isinstance(n.ctx, ast.Store)):
                        local[name.id] = None
                        if source is not None and mentions(source):
                            followed.add(name.id)
                        if isinstance(source, ast.Call) and len(targets) == 1 and isinstance(targets[0], ast.Name):
                            local[name.id] = self._returns(module, source, local)
                    for child in getattr(node, "body", []) + getattr(node, "orelse", []) + getattr(node, "ifs", []):
                        walk(child)
                    return
                children = list(ast.iter_child_nodes(node))
                if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
                    children = [*node.generators, *children[: -len(node.generators)]]  # the loops come first
                for child in children:
                    walk(child)
                if isinstance(node, ast.Call):
                    call(node)

            for statement in node.body:
                walk(statement)

        visit(module, qual, {param})
        return route

    def _returns(self, module: str, node: ast.Call, local: dict[str, str | None]) -> str | None:
        """The package class a call returns: a constructor's, or its function's annotation."""
        target = self.dotted(module, node.func, local)
        found = self.lookup(target) if target else None
        if found is None:
            return None
        callee = self.defs[found[0]][found[1]]
        if isinstance(callee, ast.ClassDef):
            return f"{found[0]}.{found[1]}"
        return self.annotation(found[0], callee.returns)


def walk_figures(
    known: dict[str, Path], floor: Callable[[str], int], entry: str = ENTRY, root: Path = ROOT
) -> tuple[list[tuple[str, list[str]]], dict[str, int]]:
    """The stays of a walk (module, its functions) and its totals. ``entry`` is ``FILE:QUALNAME:PARAM``."""
    file, qual, param = entry.split(":")
    module = ".".join((root / file).resolve().relative_to(root).with_suffix("").parts).removesuffix(".__init__")
    stays: list[tuple[str, list[str]]] = []
    for where, function, followed in Walk(known).route(module, qual, param):
        if not stays or stays[-1][0] != where:
            stays.append((where, []))
        step = f"{function}({followed})"
        if not stays[-1][1] or stays[-1][1][-1] != step:
            stays[-1][1].append(step)
    rooms = [_room(where) for where, _ in stays]
    moves = [(a, b) for a, b in zip(rooms, rooms[1:], strict=False) if a != b]
    totals = {
        "stays": len(stays),
        "modules": len({where for where, _ in stays}),
        "rooms": len(set(rooms)),
        "moves": len(moves),
        "climbs": sum(floor(b) > floor(a) for a, b in moves),
    }
    return stays, totals


def _room(module: str) -> str:
    return module.split(".")[1] if "." in module else module


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    return [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]


def _name_of(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _static(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(_name_of(d) == "staticmethod" for d in node.decorator_list)


if __name__ == "__main__":
    sys.exit(main())
