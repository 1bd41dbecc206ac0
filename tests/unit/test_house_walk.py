"""scripts/house.py's walk of one scenario: what it follows and how it counts, on small packages.

Each package is written to tmp_path with two rooms, ``top`` (importing ``low``) and ``low``, so
``top`` is on floor 2 and ``low`` on floor 1: a move from ``low`` back to ``top`` is a climb.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from gaia2_testing import module_from_file

ROOT = Path(__file__).resolve().parents[2]


HOUSE = module_from_file(ROOT / "scripts" / "house.py")

LOW = """
class Box:
    def __init__(self, value):
        self.check(value)

    def check(self, value):
        return helper(value)

    def put(self, value):
        return value

def helper(value):
    return value

def f(value):
    return value

def g(value):
    return value

def two(unrelated, value):
    helper(value)
    g(unrelated)
"""


def walk(tmp_path: Path, top: str, entry: str = "entry:x") -> tuple[list[tuple[str, list[str]]], dict[str, int]]:
    """The stays and totals of the walk from ``pkg/top/a.py:<entry>``."""
    for room in ("top", "low"):
        (tmp_path / "pkg" / room).mkdir(parents=True, exist_ok=True)
        (tmp_path / "pkg" / room / "__init__.py").write_text("")
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "low" / "b.py").write_text(LOW)
    (tmp_path / "pkg" / "top" / "a.py").write_text(textwrap.dedent(top))
    known = HOUSE.modules(tmp_path, "pkg")
    graph, _ = HOUSE.import_graph(known)
    floor = HOUSE.room_floors(HOUSE.room_graph(graph))
    assert (floor("top"), floor("low")) == (2, 1)
    return HOUSE.walk_figures(known, floor, f"pkg/top/a.py:{entry}", root=tmp_path)


def test_one_module_is_one_stay(tmp_path: Path) -> None:
    stays, totals = walk(
        tmp_path,
        """
        from pkg.low import b

        def entry(x):
            mine(x)

        def mine(y):
            return y
        """,
    )
    assert stays == [("pkg.top.a", ["entry(x)", "mine(y)"])]
    assert totals == {"stays": 1, "modules": 1, "rooms": 1, "moves": 0, "climbs": 0}


def test_attribute_and_derived_names_are_followed_down_and_back(tmp_path: Path) -> None:
    stays, totals = walk(
        tmp_path,
        """
        from pkg.low.b import f, g

        def entry(x):
            f(x.split)
            y = x.name
            mine(y)
            g(value=y)
            f(x)

        def mine(y):
            return y
        """,
    )
    assert [where for where, _ in stays] == ["pkg.top.a", "pkg.low.b", "pkg.top.a", "pkg.low.b"]
    assert stays[2][1] == ["entry(x)", "mine(y)", "entry(x)"]
    assert totals == {"stays": 4, "modules": 2, "rooms": 2, "moves": 3, "climbs": 1}


def test_calls_without_the_name_and_visited_functions_are_not_entered(tmp_path: Path) -> None:
    _, totals = walk(
        tmp_path,
        """
        from pkg.low import b as store

        def entry(x, other):
            store.f(other)
            x.put(1)
            store.two(other, x)
            store.two(x, other)
            store.helper(x)
        """,
    )
    # two(unrelated=other, value=x): helper is followed, g is not; the second two() was visited.
    assert totals == {"stays": 2, "modules": 2, "rooms": 2, "moves": 1, "climbs": 0}


def test_constructor_self_method_and_annotated_receiver(tmp_path: Path) -> None:
    stays, totals = walk(
        tmp_path,
        """
        from pkg.low.b import Box

        def entry(x, box: Box):
            Box(x)
            step(x)
            box.put(x)

        def step(x):
            return x
        """,
    )
    assert stays == [
        ("pkg.top.a", ["entry(x)"]),
        ("pkg.low.b", ["Box.__init__(value)", "Box.check(value)", "helper(value)"]),
        ("pkg.top.a", ["entry(x)", "step(x)", "entry(x)"]),
        ("pkg.low.b", ["Box.put(value)"]),
    ]
    assert totals["moves"] == 3 and totals["climbs"] == 1


def test_the_walk_of_the_real_package(tmp_path: Path) -> None:
    known = HOUSE.modules()
    graph, _ = HOUSE.import_graph(known)
    floor = HOUSE.room_floors(HOUSE.room_graph(graph))
    stays, totals = HOUSE.walk_figures(known, floor)
    assert stays[0] == ("pytest_gaia2.run.scenario_runs", ["ScenarioRunner.result_for(item)"] + stays[0][1][1:])
    assert 0 < totals["moves"] <= HOUSE.MAX_MOVES
    assert totals["stays"] == len(stays) and totals["climbs"] <= totals["moves"] < totals["stays"]


def test_loop_targets_carry_the_value_and_tests_do_not(tmp_path: Path) -> None:
    stays, totals = walk(
        tmp_path,
        """
        from pkg.low.b import f, g

        def entry(x):
            flag = x is None
            f(flag)
            for part in x.parts if flag else ():
                g(part)
        """,
    )
    assert stays == [("pkg.top.a", ["entry(x)"]), ("pkg.low.b", ["g(value)"])]
    assert totals["moves"] == 1
