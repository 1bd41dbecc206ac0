"""trace.html and index.html from synthetic attempt and run folders: the judge's matching shown
is daemon_judgments.jsonl, hostile content is escaped, caps hold, and no file can make
rendering raise."""

from __future__ import annotations

import dataclasses
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from pytest_gaia2.report import trace_page as trace_html
from pytest_gaia2.report.trace_page import (
    MAX_EVENTS,
    TEXT_CAP,
    PageBudget,
    shown,
    write_index,
    write_trace,
)
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.record import AttemptRecord

HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">"\'&'


class Tables(HTMLParser):
    """Cell texts (entities decoded) of every table row, by the table's class, and every href."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[str]]] = {}
        self.hrefs: list[str] = []
        self._table: list[list[str]] | None = None
        self._in_body = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "table":
            key = values.get("class") or values.get("id") or ""
            self._table = self.tables.setdefault(key, [])
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._table is not None and self._in_body:
            self._table.append([])
        elif tag == "td" and self._table is not None and self._in_body:
            self._cell = []
        elif tag == "a" and values.get("href"):
            self.hrefs.append(values["href"] or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self._table:
            self._table[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tbody":
            self._in_body = False
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def read_tables(path: Path) -> Tables:
    parser = Tables()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def record(folder: str, **values: Any) -> AttemptRecord:
    base: dict[str, Any] = {
        "scenario_id": "scenario_universe_21_abc", "success": False, "reward": 0.0, "num_agent_events": 3,
        "agent_response": "", "judged_in_container": True, "timed_out": False, "timeout_seconds": 600.0,
        "daemon_status": None, "scenario_file": "", "failure_reasons": ["wrong answer"], "error": None,
        "split": "search", "universe": "universe_21", "outcome": "failed", "folder": folder, "wall_time_s": 2.5,
    }
    return AttemptRecord(**{**base, **values})


def write_lines(path: Path, lines: list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


JUDGMENTS = [
    {"turn": 0, "success": True, "failure_reason": None,
     "agent_events": [{"id": "AGENT-Contacts.search-1", "tool": "Contacts__search", "args": {"q": "Ann"},
                       "args_summary": {"q": "Ann"}}],
     "oracle_events": [{"id": "Event-AGENT-1", "tool": "Contacts__search", "args": {"q": "Ann"},
                        "args_summary": {"q": "Ann"}}],
     "match_details": [{"oracle_id": "Event-AGENT-1", "oracle_tool": "Contacts__search", "matched": True,
                        "reason": "", "judge_output": ""}],
     "id_mapping": {"AGENT-Contacts.search-1": "Event-AGENT-1"}},
    {"turn": 1, "success": False, "failure_reason": f"Cannot match {HOSTILE}",
     "agent_events": [{"id": "AGENT-Email.send-2", "tool": "Email__send", "args": {"to": HOSTILE}}],
     "oracle_events": [{"id": "Event-AGENT-2", "tool": "Email__send", "args": {"to": "bob"},
                        "args_summary": {"to": "bob"}},
                       {"id": "Event-AGENT-3", "tool": "Email__send", "args": {"to": "eve"},
                        "args_summary": {"to": "eve"}}],
     "match_details": [{"oracle_id": "Event-AGENT-2", "oracle_tool": "Email__send", "matched": False,
                        "reason": f"to differs: {HOSTILE}", "judge_output": "[[Failure]]"},
                       {"oracle_id": "Event-AGENT-3", "oracle_tool": "Email__send", "matched": False,
                        "reason": "no agent event left", "judge_output": None}],
     "id_mapping": None},
]
EVENTS = [
    {"t": 100.0, "app": "AgentUserInterface", "fn": "send_message_to_agent", "args": {"content": f"Task {HOSTILE}"},
     "w": False, "ret": None},
    {"t": 101.0, "app": "Contacts", "fn": "search", "args": {"q": "Ann"}, "w": False, "ret": [{"name": "Ann"}]},
    {"t": 102.0, "app": "Email", "fn": "receive", "args": {}, "w": True, "ret": None, "event_id": "Event-ENV-7"},
    {"t": 103.0, "app": "AgentUserInterface", "fn": "send_message_to_user", "args": {"content": HOSTILE},
     "w": True, "ret": "Message sent."},
    {"t": 104.0, "app": "Email", "fn": "send", "args": {"to": HOSTILE}, "w": True, "ret": None},
    {"t": 110.0, "app": "AgentUserInterface", "fn": "send_message_to_user", "args": {"content": "Done."}, "w": True},
]


@pytest.fixture
def attempt(tmp_path: Path) -> Path:
    folder = tmp_path / "search" / "scenario_universe_21_abc"
    store.write_json(folder / "result.json", record("search/scenario_universe_21_abc").to_json())
    write_lines(folder / "events.jsonl", EVENTS)
    write_lines(folder / "daemon_judgments.jsonl", JUDGMENTS)
    store.write_json(folder / "daemon_status.json", {"status": "stopped", "judgment": {"success": False}})
    return folder


def expected_matching(judgments: list[dict[str, Any]]) -> list[list[str]]:
    """The matching rows as daemon_judgments.jsonl says them: oracle event and tool, its
    arguments, the agent event the judge mapped to it, matched, reason, judge output."""
    rows = []
    for line in judgments:
        mapping = {oracle: agent for agent, oracle in (line.get("id_mapping") or {}).items()}
        oracle_args = {event["id"]: event.get("args_summary", event.get("args")) for event in line["oracle_events"]}
        for detail in line.get("match_details") or []:
            rows.append([detail["oracle_id"], detail["oracle_tool"], shown(oracle_args.get(detail["oracle_id"])),
                         mapping.get(detail["oracle_id"], ""), "yes" if detail["matched"] else "no",
                         shown(detail["reason"]), shown(detail["judge_output"])])
    return rows


def test_judge_matching_shown_is_daemon_judgments(attempt: Path) -> None:
    page = read_tables(write_trace(attempt))
    judgments = store.read_jsonl(attempt / "daemon_judgments.jsonl")
    assert page.tables["matching"] == expected_matching(judgments)
    assert len(page.tables["matching"]) == 3
    counts = page.tables["counts"]
    assert counts == [["Contacts__search", "1", "1"], ["Email__send", "1", "2"]]


def test_the_attempts_cost_reads_as_money(tmp_path: Path) -> None:
    folder = tmp_path / "search" / "x"
    store.write_json(folder / "result.json", record("search/x", cost_usd=0.125).to_json())
    assert "<tr><td>cost</td><td>$0.12</td></tr>" in write_trace(folder).read_text(encoding="utf-8")  # not 0.125
    store.write_json(folder / "result.json", record("search/x", cost_usd=0.006).to_json())
    assert "<tr><td>cost</td><td>$0.0060</td></tr>" in write_trace(folder).read_text(encoding="utf-8")


def test_events_grouped_into_turns_in_order(attempt: Path) -> None:
    page = read_tables(write_trace(attempt))
    rows = page.tables["events"]
    assert [row[0] for row in rows] == [str(n) for n in range(1, len(EVENTS) + 1)]
    assert [row[3].split(" (")[0].split("\n")[0] for row in rows] == [
        "USER", "agent tool call", "ENV", "agent → user", "agent tool call", "agent → user"]
    assert rows[2][3].endswith("Event-ENV-7") and rows[1][6] == '[{"name": "Ann"}]'
    html = (attempt / "trace.html").read_text(encoding="utf-8")
    assert html.count("<h3>Turn ") == 2 + len(JUDGMENTS)  # two event turns, one heading per judgment
    assert html.count('class="mark ') == len(EVENTS)


def test_hostile_content_is_escaped(attempt: Path) -> None:
    store.write_json(attempt / "result.json", record(
        "search/x", scenario_id=f"id{HOSTILE}", failure_reasons=[HOSTILE], agent_response=HOSTILE).to_json())
    (attempt / 'javascript:alert(1)"x').write_text("x", encoding="utf-8")
    html = write_trace(attempt).read_text(encoding="utf-8")
    assert "<script>window" not in html and "<img src=x" not in html and 'onerror="' not in html
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
    hrefs = read_tables(attempt / "trace.html").hrefs
    assert "javascript%3Aalert%281%29%22x" in hrefs  # a relative path, not a scheme
    assert all(":" not in href and not href.startswith("/") for href in hrefs)
    assert read_tables(attempt / "trace.html").tables["matching"] == expected_matching(JUDGMENTS)


def test_pages_a_browser_would_run_are_named_never_linked(attempt: Path) -> None:
    """A container's evil.html opened from trace.html would run its script outside the page's
    content-security rule: such files are listed by name only."""
    (attempt / "state").mkdir(exist_ok=True)
    for name in ("evil.html", "pic.SVG", "x.htm.", "doc.xhtml"):
        (attempt / "state" / name).write_text("<script>fetch('https://evil.example')</script>", encoding="utf-8")
    (attempt / "state" / "notes.json").write_text("{}", encoding="utf-8")
    html = write_trace(attempt).read_text(encoding="utf-8")
    hrefs = read_tables(attempt / "trace.html").hrefs
    assert "state/notes.json" in hrefs and not [href for href in hrefs if "evil" in href or "pic" in href
                                                 or ".htm" in href]
    assert html.count("(not linked: a page the browser would run)") == 4


def test_the_containers_other_files_are_listed_from_their_archive_escaped_and_bounded(
        attempt: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The archive's members by name and size, short text shown escaped within the page's
    budget, binary and large members by name only, past the bound only counted."""
    from pytest_gaia2.engine.archive import Keeper
    from pytest_gaia2.store import kept

    monkeypatch.setattr(kept, "LISTED", 3)
    with Keeper(attempt / kept.CONTAINER_FILES) as keep:
        keep.add(["var", "gaia2", "state", f"{HOSTILE}.toml"], [HOSTILE.encode()])
        keep.add(["tmp", "blob.bin"], [b"\xff\x00\xfe"])
        keep.add(["tmp", "big.log"], [b"y" * (kept.SHOWN_BYTES + 1)])
        keep.add(["tmp", "later.txt"], [b"x"])
    html = write_trace(attempt).read_text(encoding="utf-8")
    assert "<script>window" not in html and "<img src=x" not in html
    rows = read_tables(attempt / "trace.html").tables["kept"]
    assert rows == [[f"var/gaia2/state/{HOSTILE}.toml{HOSTILE}", str(len(HOSTILE.encode()))], ["tmp/blob.bin", "3"],
                    ["tmp/big.log", str(kept.SHOWN_BYTES + 1)]]
    assert "1 more members are in the archive" in html and "y" * 100 not in html
    assert kept.CONTAINER_FILES in read_tables(attempt / "trace.html").hrefs


def test_a_damaged_archive_is_named_not_fatal(attempt: Path) -> None:
    from pytest_gaia2.store import kept

    (attempt / kept.CONTAINER_FILES).write_bytes(b"\0" * 100 + b"garbage")
    html = write_trace(attempt).read_text(encoding="utf-8")
    assert "could not be read to its end" in html and read_tables(attempt / "trace.html").tables["kept"] == []


def test_task_from_events_then_notifications_then_scenario(tmp_path: Path) -> None:
    folder = tmp_path / "a"
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps({"events": [{"event_type": "USER", "action": {
        "app": "AgentUserInterface", "function": "send_message_to_agent",
        "args": [{"name": "content", "value": "from the scenario sk-secret"}]}}]}), encoding="utf-8")
    store.write_json(folder / "result.json", record("a", scenario_file=str(scenario)).to_json())
    def redact(text: str) -> str:
        return text.replace("sk-secret", "***")

    assert "from the scenario ***" in write_trace(folder, redact).read_text(encoding="utf-8")
    write_lines(folder / "notifications.jsonl", [{"type": "user_message", "content": "from notifications"}])
    assert "from notifications" in write_trace(folder).read_text(encoding="utf-8")
    write_lines(folder / "events.jsonl", EVENTS[:1])
    assert "Task &lt;script&gt;" in write_trace(folder).read_text(encoding="utf-8")


@pytest.mark.parametrize("content", [
    b"", b"not json\n", b"[1, 2]\n", b"\xff\xfe\n", b"[" * 5000 + b"\n", b'{"t": "x", "args": "\\ud800"}\n',
    b'{"turn": {"x": 1}, "success": "yes", "match_details": "none", "id_mapping": [1], "agent_events": 3}\n',
    b'{"turn": 0, "match_details": [1, null, {"matched": "yes"}], "oracle_events": [{"id": {"a": 1}}]}\n',
])
def test_broken_files_never_raise(tmp_path: Path, content: bytes) -> None:
    folder = tmp_path / "a"
    folder.mkdir()
    for name in ("events.jsonl", "daemon_judgments.jsonl", "daemon_status.json", "notifications.jsonl",
                 "trace.jsonl", "result.json"):
        (folder / name).write_bytes(content)
    html = write_trace(folder).read_text(encoding="utf-8")
    assert "<h1>" in html and "could not be rendered" not in html


def test_empty_and_missing_folders(tmp_path: Path) -> None:
    html = write_trace(tmp_path).read_text(encoding="utf-8")
    assert "no result.json in this folder" in html and "No judgment" in html and "No events" in html
    gone = tmp_path / "gone"
    assert not write_trace(gone).exists() and not gone.exists()


def test_caps_bound_the_page(tmp_path: Path) -> None:
    big = "x" * (TEXT_CAP * 3)
    write_lines(tmp_path / "events.jsonl", [{"t": n, "app": "A", "fn": "f", "args": {"v": big}}
                                            for n in range(MAX_EVENTS + 50)])
    html = write_trace(tmp_path).read_text(encoding="utf-8")
    assert html.count('<tr class="k-tool">') == MAX_EVENTS
    assert "Only the first events are shown" in html and "more characters in the raw file" in html
    assert len(html) < trace_html.PAGE_BUDGET * 2


def test_budget_cuts_each_value_and_the_page() -> None:
    budget = PageBudget(total=10)
    assert budget.text("abcdef", cap=4).startswith("abcd… [cut: 2 more")
    assert budget.text({"k": 1}) == '{"k": 1}'[:6] + "… [cut: 2 more characters in the raw file]"
    assert budget.text("more").startswith("… [cut: 4 more")
    assert shown(None) == "" and shown(True) == "true" and shown("a") == "a"


def test_a_render_failure_gives_a_short_page(attempt: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(folder: Path, redact: Any = str) -> dict[str, Any]:
        raise RuntimeError("bug")

    monkeypatch.setattr(trace_html, "trace_context", broken)
    html = write_trace(attempt).read_text(encoding="utf-8")
    assert "could not be rendered (RuntimeError)" in html


def test_index_rows_equal_results_and_link_existing_traces(tmp_path: Path, attempt: Path) -> None:
    records = [
        record("search/scenario_universe_21_abc", cost_usd=0.0123, usage={"input_tokens": 10, "output_tokens": 5}),
        record("search/b", scenario_id="b", success=True, outcome="passed", failure_reasons=[], wall_time_s=10.0),
        record("malformed/c", scenario_id=f"c{HOSTILE}", split="malformed", success=None, outcome="error",
               error_category="invalid_scenario", error=HOSTILE, wall_time_s=None),
        record("../../outside", scenario_id="d", success=None, outcome="error", error_category="timeout"),
    ]
    records = [dataclasses.replace(r, image="gaia2/agent:1", model="m1") for r in records]
    (tmp_path / "outside").mkdir(exist_ok=True)
    (tmp_path.parent / "outside").mkdir(exist_ok=True)
    (tmp_path.parent / "outside" / "trace.html").write_text("x", encoding="utf-8")
    write_lines(tmp_path / "results.jsonl", [r.to_json() for r in records])
    write_trace(attempt)
    html_path = write_index(tmp_path)
    page = read_tables(html_path)
    rows = page.tables["sortable"]
    by_id = {row[0]: row for row in rows}
    assert set(by_id) == {r.scenario_id for r in records}
    for r in records:
        row = by_id[r.scenario_id]
        assert row[1:3] == [r.split, r.universe or ""] and row[5] == r.outcome
        assert row[6] == (r.error_category or ("judge" if r.outcome == "failed" else ""))
    assert by_id["scenario_universe_21_abc"][9:11] == ["$0.01", "15"]  # money as money (the sort key keeps every digit)
    counts = " ".join(re.sub(r"<[^>]+>", " ", html_path.read_text(encoding="utf-8").split('id="counts">')[1]
                                .split("</p>")[0]).split())
    assert counts.endswith("2 error — cost $0.01 — image gaia2/agent:1, model m1")  # one separator each
    assert page.hrefs == ["search/scenario_universe_21_abc/trace.html"]
    html = html_path.read_text(encoding="utf-8")
    assert "<script>window" not in html and "&lt;script&gt;window" in html


def test_index_of_an_empty_or_broken_run(tmp_path: Path) -> None:
    assert "0 of 0 planned scenarios done" in write_index(tmp_path).read_text(encoding="utf-8")
    (tmp_path / "results.jsonl").write_bytes(b'{"scenario_id": 1, "repeat": "x"}\nnot json\n')
    assert "<h1>" in write_index(tmp_path).read_text(encoding="utf-8")


def test_the_gateways_calls_are_shown_beside_the_trace_and_escaped(attempt: Path) -> None:
    wire = {"calls": 2, "trace_calls": 1, "trace_minus_wire_usd": -0.02, "unseen_calls": 0}
    store.write_json(attempt / "result.json", record("search/x", wire=wire).to_json())
    calls = [
        {"time": "2026-12-05T23:30:01.123+00:00", "route": "agent", "model": "m", "status": 200, "latency_ms": 812,
         "input_tokens": 10, "output_tokens": 5, "cost_usd": 0.02},
        {"time": "2026-12-05T23:30:02.000+00:00", "route": "agent", "model": HOSTILE, "status": 402,
         "latency_ms": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": None, "refused": "scenario_cap"},
    ]
    write_lines(attempt / "wire.jsonl", [*calls, "not an object"])
    html = write_trace(attempt).read_text(encoding="utf-8")
    rows = read_tables(attempt / "trace.html").tables["wire"]
    assert rows[0] == ["2026-12-05T23:30:01.123+00:00", "agent", "m", "200", "812", "10 / 5", "0.02", ""]
    assert rows[1][1:4] == ["agent", shown(HOSTILE), "402"] and rows[1][-1] == "scenario_cap"
    assert len(rows) == 2 and "<script>window" not in html
    assert "the agent left no priced trace: the wire&#39;s figure stands" in html


def test_no_wire_log_no_wire_section(attempt: Path) -> None:
    assert "Model calls on the wire" not in write_trace(attempt).read_text(encoding="utf-8")


def test_the_judges_audit_trail_is_shown_and_linked(attempt: Path) -> None:
    """gaia2-cli's TypeSafe judge writes judge_decisions.jsonl into the state folder: each model
    call's probability and threshold are on the page, hostile text escaped, the file linked."""
    decisions = [
        {"provider": "typesafe", "requested_model": "jev-latest", "model": "jev-1.13", "probability": 0.82,
         "threshold": 0.5, "passed": True, "input_sha256": "ab" * 32},
        {"provider": "typesafe", "requested_model": "jev-latest", "model": HOSTILE, "probability": 0.1,
         "threshold": 0.5, "passed": False, "input_sha256": "cd" * 32, "extra": "x"},
    ]
    write_lines(attempt / "state" / "judge_decisions.jsonl", decisions)
    page = read_tables(write_trace(attempt))
    assert page.tables["audit"] == [[shown(d[field]) for field in trace_html.AUDIT_FIELDS] for d in decisions]
    assert "state/judge_decisions.jsonl" in page.hrefs
    html = (attempt / "trace.html").read_text(encoding="utf-8")
    assert "<script>window" not in html and 'id="audit"' in html


def test_no_audit_section_without_an_audit_file(attempt: Path) -> None:
    assert 'id="audit"' not in write_trace(attempt).read_text(encoding="utf-8")
