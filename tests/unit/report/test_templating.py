"""The package's one template environment and its cache of compiled templates: a fresh environment
loads a template from the cache without compiling it, a changed template is compiled again, each
kind keeps its own copy, and a cache that is not the user's own or cannot be used changes nothing
but the time (the pages' bytes are the existing page tests')."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import jinja2
import pytest
from jinja2.bccache import bc_magic

from pytest_gaia2.report import run_facts, templating
from pytest_gaia2.report.templating import DOCUMENT, PAGE, TEMPLATES, environment

NO_FILTERS: dict[str, object] = {}
ANY_FILTERS = dict.fromkeys(["rate", "interval", "fraction", "seconds", "code", "usd", "design", "kappa", "cell", "href",
                             "percent_number", "amount", "started", "cost"], str)
"""Every filter the package's templates name (jinja2 checks at compile time that a filter exists)."""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The templates' cache folder under a user cache folder of the test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "pytest-gaia2" / templating.CACHE_FOLDER


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the templates jinja2 compiles from source while the test runs."""
    names: list[str] = []
    original = jinja2.Environment.compile

    def counting(self: jinja2.Environment, source: str, name: str | None = None, *args: object, **kwargs: object) -> object:
        names.append(name or "<string>")
        return original(self, source, name, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(jinja2.Environment, "compile", counting)
    yield names


def _folder(tmp_path: Path, text: str, name: str = "page.html.j2") -> Path:
    folder = tmp_path / "templates"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_a_fresh_environment_loads_every_package_template_from_the_cache(cache: Path, compiled: list[str]) -> None:
    names = sorted(path.name for path in TEMPLATES.glob("*.j2"))
    assert {"report.md.j2", "report.html.j2", "trace.html.j2", "index.html.j2", "runs.html.j2"} <= set(names)
    for kind in (DOCUMENT, PAGE):
        first = environment(kind, ANY_FILTERS)
        for name in names:
            first.get_template(name)
    assert sorted(compiled) == sorted(names * 2)  # once per kind: nothing was cached yet
    assert len(list(cache.glob("*.cache"))) == len(names) * 2
    compiled.clear()
    for kind in (DOCUMENT, PAGE):
        second = environment(kind, ANY_FILTERS)
        for name in names:
            second.get_template(name)
    assert compiled == []


def test_a_page_from_the_cache_is_the_page_compiled_from_source(tmp_path: Path, cache: Path,
                                                                compiled: list[str]) -> None:
    folder = _folder(tmp_path, "<p>{{ x | amount }} {{ y }}</p>\n")
    rendered = [environment(PAGE, {"amount": run_facts.amount}, folder).get_template("page.html.j2")
                .render(x=1234.5, y="<b>") for _ in range(2)]
    assert compiled == ["page.html.j2"]
    assert rendered[0] == rendered[1] == f"<p>{run_facts.amount(1234.5)} &lt;b&gt;</p>"


def test_a_changed_template_is_compiled_again_even_with_the_same_size_and_time(
    tmp_path: Path, cache: Path, compiled: list[str]
) -> None:
    folder = _folder(tmp_path, "<p>one</p>")
    path = folder / "page.html.j2"
    assert environment(PAGE, NO_FILTERS, folder).get_template("page.html.j2").render() == "<p>one</p>"
    times = path.stat()
    path.write_text("<p>two</p>", encoding="utf-8")
    os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))
    assert environment(PAGE, NO_FILTERS, folder).get_template("page.html.j2").render() == "<p>two</p>"
    assert compiled == ["page.html.j2", "page.html.j2"]
    assert environment(PAGE, NO_FILTERS, folder).get_template("page.html.j2").render() == "<p>two</p>"
    assert len(compiled) == 2  # the new text is cached in its turn


@pytest.mark.parametrize("order", [(DOCUMENT, PAGE), (PAGE, DOCUMENT)])
def test_each_kind_keeps_its_own_copy_of_a_template_both_include(
    tmp_path: Path, cache: Path, order: tuple[templating.Kind, templating.Kind]
) -> None:
    """wire.html.j2 is in report.html (a document: its trailing newline kept) and in index.html
    (a page: dropped); a copy compiled for one must never be loaded for the other."""
    folder = _folder(tmp_path, "<p>{{ x }}</p>\n")
    expected = {DOCUMENT: "<p>&amp;</p>\n", PAGE: "<p>&amp;</p>"}
    for _ in range(2):
        for kind in order:
            assert environment(kind, NO_FILTERS, folder).get_template("page.html.j2").render(x="&") == expected[kind]
    assert len(list(cache.glob("*.cache"))) == 2


def test_markdown_is_not_escaped_and_html_and_strings_are(tmp_path: Path, cache: Path) -> None:
    folder = _folder(tmp_path, "{{ x }}", "page.md.j2")
    env = environment(DOCUMENT, NO_FILTERS, folder)
    assert env.get_template("page.md.j2").render(x="<b>") == "<b>"
    assert env.from_string("{{ x }}").render(x="<b>") == "&lt;b&gt;"


@pytest.mark.parametrize("how", ["symlink", "world_writable"])
def test_a_cache_folder_not_the_users_own_is_not_used_and_pages_still_render(
    tmp_path: Path, cache: Path, compiled: list[str], how: str
) -> None:
    cache.parent.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    if how == "symlink":
        elsewhere.mkdir(mode=0o700)
        cache.symlink_to(elsewhere)
    else:
        cache.mkdir(mode=0o700)
        cache.chmod(0o777)
    folder = _folder(tmp_path, "<p>{{ x }}</p>")
    for _ in range(2):
        env = environment(PAGE, NO_FILTERS, folder)
        assert env.bytecode_cache is None
        assert env.get_template("page.html.j2").render(x="<") == "<p>&lt;</p>"
    assert compiled == ["page.html.j2", "page.html.j2"]
    assert list(cache.iterdir()) == []


def test_a_cache_that_cannot_be_written_costs_only_the_compile(tmp_path: Path, cache: Path,
                                                               compiled: list[str]) -> None:
    """The folder gone after the environment checked it (what a full or read-only disk does to
    jinja2's write, also for root, whom a mode does not stop), then read-only."""
    folder = _folder(tmp_path, "<p>{{ x }}</p>")
    env = environment(PAGE, NO_FILTERS, folder)
    assert env.bytecode_cache is not None
    cache.rmdir()
    assert env.get_template("page.html.j2").render(x=1) == "<p>1</p>"
    cache.mkdir(mode=0o500)
    try:
        assert environment(PAGE, NO_FILTERS, folder).get_template("page.html.j2").render(x=1) == "<p>1</p>"
    finally:
        cache.chmod(0o700)
    assert compiled == ["page.html.j2", "page.html.j2"]


@pytest.mark.parametrize("damage", [b"", b"j2", b"garbage", "cut", "no pickle after the magic"])
def test_a_damaged_cache_file_is_compiled_again(tmp_path: Path, cache: Path, compiled: list[str],
                                                damage: bytes | str) -> None:
    folder = _folder(tmp_path, "<p>{{ x }}</p>")
    assert environment(PAGE, NO_FILTERS, folder).get_template("page.html.j2").render(x=1) == "<p>1</p>"
    (kept,) = cache.glob("*.cache")
    whole = kept.read_bytes()
    damaged = {"cut": whole[: len(whole) // 2], "no pickle after the magic": bc_magic + b"\x00garbage"}
    kept.write_bytes(damaged[damage] if isinstance(damage, str) else damage)
    assert environment(PAGE, NO_FILTERS, folder).get_template("page.html.j2").render(x=1) == "<p>1</p>"
    assert compiled == ["page.html.j2", "page.html.j2"]
    assert kept.read_bytes() == whole  # written again whole


def test_a_cache_file_that_is_a_folder_is_no_error(tmp_path: Path, cache: Path, compiled: list[str]) -> None:
    folder = _folder(tmp_path, "<p>{{ x }}</p>")
    assert environment(PAGE, NO_FILTERS, folder).get_template("page.html.j2").render(x=1) == "<p>1</p>"
    (kept,) = cache.glob("*.cache")
    kept.unlink()
    kept.mkdir()
    assert environment(PAGE, NO_FILTERS, folder).get_template("page.html.j2").render(x=1) == "<p>1</p>"
    assert len(compiled) == 2


def test_the_renderers_import_jinja2_only_when_they_render() -> None:
    probe = ("import sys; import pytest_gaia2.report.trace_page, pytest_gaia2.report.document, "
             "pytest_gaia2.report.run_list, pytest_gaia2.report.pages; print('jinja2' in sys.modules)")
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "False"
