"""The Allure output: labels, title, description, parameters, capped attachments, categories,
merged environment; and, without an engine, what allure-pytest writes with the plugin object."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import WITH_ALLURE

from pytest_gaia2.plan.items import PlannedItem
from pytest_gaia2.plan.scenarios import Scenario
from pytest_gaia2.plugin.allure import (
    ALLURE_MISSING,
    Parameter,
    capped_text,
    description,
    marks,
    oracle_answer,
    parameters,
    read_capped,
    read_oracle_answer,
    title,
    write_run_files,
)
from pytest_gaia2.report.allure_categories import (
    CATEGORIES_FILE,
    INFRA_PREFIX,
    JUDGE_KINDS,
    JUDGE_OTHER,
    JUDGE_PREFIX,
    categories,
    category_of,
    matches,
)
from pytest_gaia2.report.allure_environment import (
    ENVIRONMENT_FILE,
    environment,
    format_properties,
    merge_environment,
    parse_properties,
)
from pytest_gaia2.store.record import CATEGORIES

FAILED_TRACE = "AssertionError: {}\n(files: search/scenario_universe_22_ygzpjz)"


def _judge(reason: str) -> tuple[str, str, str]:
    """A judge failure as allure-pytest reports it: (status, message, trace)."""
    return "failed", f"AssertionError: {reason}", FAILED_TRACE.format(reason)


def _infra(category: str, status: str = "broken", exception: str = "pytest_gaia2.run.verdict.Gaia2InfraError",
           detail: str = "last log lines:\nline one\n[eventd] line two") -> tuple[str, str, str]:
    """An error as allure-pytest reports it: the exception's text, and the plugin's longrepr."""
    return status, f"{exception}: [{category}] {detail}", f"[{category}] {detail}"


MATCH = "Cannot match Chats__send_message (Event-AGENT-{})"
EXAMPLES: dict[str, list[tuple[str, str, str]]] = {
    f"{JUDGE_PREFIX}SMU count mismatch": [
        _judge("SMU count mismatch: agent=0, oracle=1, allowed_extra=1"),
        _judge("SMU count mismatch: agent=3, oracle=1, allowed_extra=1"),
    ],
    f"{JUDGE_PREFIX}tool count mismatch": [
        _judge("Tool count mismatch: agent={}, oracle={'ContactsApp__search_contacts': 1}"),
        _judge("Tool count mismatch: agent={'Emails__send_email': 2}, oracle={'Emails__send_email': 1}"),
    ],
    f"{JUDGE_PREFIX}oracle action never attempted": [
        _judge(f"{MATCH.format('1a2b')}: no candidates"),
        _judge("Cannot match Calendar__add_calendar_event (Event-AGENT-77): no candidates"),
    ],
    f"{JUDGE_PREFIX}arguments differ": [
        _judge(f"{MATCH.format('1a2b')}: AGENT-Chats.send_message-9f8e7d6c: arg content differs "
               "(agent='Hi', oracle='Hello; see you: 5pm')"),
        _judge(f"{MATCH.format('ff')}: AGENT-Chats.send_message-01: arg user_id differs (agent='a', oracle='b'); "
               "AGENT-Chats.send_message-02: time check failed (agent_relative=90s, oracle_relative=10s)"),
    ],
    f"{JUDGE_PREFIX}rejected by a checker": [
        _judge("Cannot match EmailClientV2__send_email (Event-AGENT-9f1c): AGENT-EmailClientV2.send_email-1a2b3c4d: "
               "email_checker (agent_args={'subject': 'Dinner'})"),
    ],
    f"{JUDGE_PREFIX}causality violation": [
        _judge(f"{MATCH.format('c3')}: AGENT-Chats.send_message-5e: causality violation "
               "(parent Event-AGENT-b1 not matched before it)"),
    ],
    f"{JUDGE_PREFIX}timing": [
        _judge(f"{MATCH.format('d4')}: AGENT-Chats.send_message-6f: time check failed "
               "(agent_relative=400s, oracle_relative=180s)"),
    ],
    f"{JUDGE_PREFIX}declared duration exceeded": [
        _judge("ran past the scenario's declared duration (1800 s; timeout 1860 s) without a judgment "
               "(last daemon status: running)"),
    ],
    f"{JUDGE_PREFIX}no reason given": [
        _judge("judge rejected the run (no reason given)"),
        _judge("judge rejected the run"),
    ],
    JUDGE_OTHER: [
        _judge("some future judge wording"),
        ("failed", "AssertionError: assert 0.0 == 1.0", "def test_reward(gaia2_result):\n>       assert 0.0 == 1.0"),
        _judge("Cannot match Chats__send_message (Event-AGENT-1): AGENT-x: llm judge abstained"),
    ],
    **{f"{INFRA_PREFIX}{category}": [_infra(category)] for category in CATEGORIES},
}
# The same category whatever raised it, and in status failed (pytest-timeout's hard bound).
EXAMPLES[f"{INFRA_PREFIX}harness_error"].append(
    _infra("harness_error", exception="docker.errors.APIError", detail="the harness failed before any attempt"))
EXAMPLES[f"{INFRA_PREFIX}interrupted"].append(
    ("failed", "Failed: Timeout (>1860.0s) from pytest-timeout.", "[interrupted] stopped by pytest-timeout"))


# -- categories ------------------------------------------------------------------------------

def test_every_group_of_categories_json_matches_its_examples_and_no_others(tmp_path: Path) -> None:
    write_run_files(tmp_path, {})
    groups = json.loads((tmp_path / CATEGORIES_FILE).read_text(encoding="utf-8"))
    assert [group["name"] for group in groups] == list(EXAMPLES)
    for name, examples in EXAMPLES.items():
        for status, message, trace in examples:
            matching = [group["name"] for group in groups if matches(group, status, message, trace)]
            assert matching == [name], message
            assert category_of(status, message, trace) == name


def test_groups_cover_every_judge_kind_and_error_category() -> None:
    names = {group["name"] for group in categories()}
    assert names == {f"{JUDGE_PREFIX}{kind}" for kind, _, _ in JUDGE_KINDS} | {JUDGE_OTHER} | {
        f"{INFRA_PREFIX}{category}" for category in CATEGORIES}
    for group in categories():
        judged = group["name"].startswith(JUDGE_PREFIX)
        assert group["matchedStatuses"] == (["failed"] if judged else ["broken", "failed"])


def test_passed_tests_and_unknown_errors_have_no_group() -> None:
    assert category_of("passed", None, None) is None
    assert category_of("broken", "KeyError: 'x'", "Traceback ...\nKeyError: 'x'") is None


def test_regexes_hold_no_ids_or_paths() -> None:
    for group in categories():
        for key in ("messageRegex", "traceRegex"):
            assert not re.search(r"Event-|AGENT-|/|universe_\d", group.get(key, "")), group["name"]


# -- labels, title, description, parameters ----------------------------------------------------

SCENARIO = Scenario("scenario_universe_21_7kww6e", "search", Path("/data/search/x.json"), task="Find Ann.",
                    tags=("contacts", "chats"))


def _labels(item: PlannedItem) -> list[tuple[str, tuple[Any, ...]]]:
    return [(mark.kwargs["label_type"], mark.args) for mark in marks(item)]


def test_labels_suites_behaviours_and_tags() -> None:
    item = PlannedItem("search", SCENARIO.scenario_id, scenario=SCENARIO)
    assert all(mark.name == "allure_label" for mark in marks(item))
    assert _labels(item) == [
        ("parentSuite", ("Gaia2",)), ("suite", ("search",)), ("subSuite", ("universe_21",)),
        ("feature", ("search",)), ("story", ("universe_21",)), ("tag", ("contacts", "chats")),
    ]
    assert _labels(PlannedItem("malformed", "not_json")) == [
        ("parentSuite", ("Gaia2",)), ("suite", ("malformed",)), ("subSuite", ("no universe",)),
        ("feature", ("malformed",)), ("story", ("no universe",)),
    ]


def test_title_names_the_repeat_and_a_users_test() -> None:
    assert title(PlannedItem("search", "s1"), "test_scenario") == "s1"
    assert title(PlannedItem("search", "s1", repeat=2, repeats=3), "test_scenario") == "s1 (run 2)"
    assert title(PlannedItem("search", "s1"), "test_reward") == "test_reward: s1"


def _smu(content: Any, event_type: str = "AGENT") -> dict[str, Any]:
    args = [{"name": "content", "value": content}]
    return {"event_type": event_type,
            "action": {"app": "AgentUserInterface", "function": "send_message_to_user", "args": args}}


def test_oracle_answer_is_the_last_message_to_the_user() -> None:
    events = [
        {"event_type": "USER", "action": {"app": "AgentUserInterface", "function": "send_message_to_agent",
                                          "args": [{"name": "content", "value": "Find Ann."}]}},
        {"event_type": "CONDITION"},
        _smu("First turn done."),
        {"event_type": "AGENT", "action": {"app": "Contacts", "function": "search_contacts", "args": []}},
        _smu("Ann's number is 555."),
        _smu("not the oracle's", event_type="ENV"),
    ]
    assert oracle_answer({"events": events}) == "Ann's number is 555."
    legacy = {"action": {"app": "AgentUserInterface", "function_name": "send_message_to_user",
                         "args": {"content": "legacy form"}}}
    assert oracle_answer({"events": [legacy]}) == "legacy form"
    assert oracle_answer({"events": [events[0]]}) is None
    assert oracle_answer({"events": "not a list"}) is None


def test_oracle_answer_read_bounded_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"events": [_smu("Done.")]}), encoding="utf-8")
    assert read_oracle_answer(path) == "Done."
    assert read_oracle_answer(tmp_path / "gone.json") is None
    path.write_text("[[[", encoding="utf-8")
    assert read_oracle_answer(path) is None


def test_description_shows_scenario_text_as_plain_text() -> None:
    text = description("Send <img src=x onerror=alert(1)> to **Ann**\n\n1. then [call](http://x)", "Done_now")
    task = text.split("\n\n", 1)[1].rsplit("\n\n**Expected answer**", 1)[0]
    assert re.findall(r"(?<!\\)[<>\[\]()*_`.]", task) == []  # nothing Markdown or HTML would act on
    assert text.startswith("**Task**\n\nSend \\<img src\\=x onerror\\=alert\\(1\\)\\> to \\*\\*Ann\\*\\*  \n  \n1\\. ")
    assert text.endswith("**Expected answer** (the oracle's last message to the user)\n\nDone\\_now")
    assert description("", None).endswith("_The oracle sends no message to the user._")
    assert description("t", "a", intro="Checks the reward.").startswith("Checks the reward\\.\n\n**Task**")


def test_parameters_mask_secret_env_and_keep_image_id_out_of_history() -> None:
    shown = parameters({"image": "img", "judge_provider": "none", "extra_env": {"MY_TOKEN": "***", "MODE": "1"}},
                       "sha256:1")
    assert Parameter("image id", "sha256:1", excluded=True) in shown
    assert Parameter("env MY_TOKEN", "***", masked=True) in shown
    assert Parameter("env MODE", "1") in shown
    assert Parameter("judge", "in-image, no model configured") in shown  # the placeholder: no model, never none/none


# -- attachments -----------------------------------------------------------------------------

def test_small_file_is_attached_whole() -> None:
    data = "naïve\n".encode()
    assert capped_text(data, len(data), "/out/x.log", keep_end=True, cap=100) == ("naïve\n", False)


def test_cut_keeps_start_or_end_and_says_so_first(tmp_path: Path) -> None:
    data = b"".join(f"line {n}\n".encode() for n in range(1000))
    (tmp_path / "eventd.log").write_bytes(data)
    assert read_capped(tmp_path / "eventd.log", keep_end=True, cap=64) == (data[-64:], len(data))
    assert read_capped(tmp_path / "eventd.log", keep_end=False, cap=64) == (data[:64], len(data))
    head, cut = capped_text(data[:64], len(data), "/out/events.jsonl", keep_end=False, cap=64)
    note, *rest = head.splitlines()
    assert cut and rest[0] == "line 0"
    assert note == f"[pytest-gaia2: attachment cut to the first 64 B of 9 KiB ({len(data)} bytes); " \
                   "the whole file is /out/events.jsonl]"
    tail, _ = capped_text(data[-64:], len(data), "/out/eventd.log", keep_end=True, cap=64)
    assert tail.splitlines()[0].startswith("[pytest-gaia2: attachment cut to the last")
    assert tail.endswith("line 999\n")
    assert len(tail.splitlines()[1:]) < 10


# -- environment -----------------------------------------------------------------------------

def _run_config(run_id: str, model: str, engine: str = "27.0") -> dict[str, Any]:
    return {
        "run_id": run_id, "plugin_version": "0.1.0", "started_at": f"2026-01-0{run_id[-1]}T00:00:00+00:00",
        "workers": 2, "image": "img:1", "engine": {"version": engine},
        "provenance": {"image_id": "sha256:123", "model": model},
        "settings": {"image": "img:1", "profile": "openclaw", "model": model, "provider": "openai-compat",
                     "judge_provider": "anthropic", "judge_model": "claude", "network": "host"},
    }


def test_environment_from_run_config() -> None:
    values = environment(_run_config("run1", "qwen3"))
    assert values == {
        "image": "img:1", "image.id": "sha256:123", "engine.version": "27.0", "profile": "openclaw",
        "model": "qwen3", "provider": "openai-compat", "judge": "anthropic/claude", "network": "host",
        "workers": "2", "plugin.version": "0.1.0", "run.id": "run1", "run.started": "2026-01-01T00:00:00+00:00",
    }
    assert set(environment({}).values()) == {"none"}
    for judge in ({"judge_provider": "none", "judge_model": "none"}, {"judge_provider": "", "judge_model": None}):
        assert environment({"settings": judge})["judge"] == "in-image, no model configured"
    assert environment({"settings": {"judge_model": "claude"}})["judge"] == "none/claude"


def test_merge_keeps_every_distinct_value_in_order_and_foreign_keys() -> None:
    merged = merge_environment({"model": "qwen3", "run.id": "run1", "ci.job": "42"},
                               {"model": "llama3", "run.id": "run2", "image": "img:1"})
    assert merged == {"model": "qwen3, llama3", "run.id": "run1, run2", "ci.job": "42", "image": "img:1"}
    assert merge_environment(merged, {"model": "qwen3", "run.id": "run3"})["model"] == "qwen3, llama3"
    assert merge_environment({}, {"model": "a, b"}) == {"model": "a, b"}


def test_properties_escape_and_read_back() -> None:
    values = {"model": "qwen\\3 ü 🙂", "note": " leading\nbreak", "odd key=1": "x"}
    text = format_properties(values)
    assert text.isascii()
    assert "model=qwen\\\\3 \\u00fc \\ud83d\\ude42\n" in text
    assert parse_properties(text) == values
    assert parse_properties("# comment\n! other\n\nkey : value\nspaced value\n") == {"key": "value", "spaced": "value"}


def test_runs_sharing_a_results_folder_merge_their_environment(tmp_path: Path) -> None:
    (tmp_path / ENVIRONMENT_FILE).write_text("ci.job=42\n", encoding="latin-1")
    write_run_files(tmp_path, _run_config("run1", "qwen3"))
    write_run_files(tmp_path, _run_config("run2", "llama3", engine="28.1"))
    values = parse_properties((tmp_path / ENVIRONMENT_FILE).read_text(encoding="latin-1"))
    assert values["ci.job"] == "42"
    assert values["model"] == "qwen3, llama3" and values["engine.version"] == "27.0, 28.1"
    assert values["run.id"] == "run1, run2" and values["image"] == "img:1"


# -- without allure-pytest -------------------------------------------------------------------

FALLBACK_CONFTEST = """
from pytest_gaia2.plugin.allure import alluredir_fallback


def pytest_addoption(parser):
    alluredir_fallback(parser)
"""


def test_alluredir_without_allure_pytest_names_the_extra(pytester: pytest.Pytester) -> None:
    """As when allure-pytest is not installed: its plugin is off and the fallback adds the option."""
    pytester.makeconftest(FALLBACK_CONFTEST)
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    without = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:allure_pytest")
    without.assert_outcomes(passed=1)
    used = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:allure_pytest", "--alluredir=allure")
    assert used.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {ALLURE_MISSING}" in used.errlines
    assert not (pytester.path / "allure").exists()


# -- with allure-pytest, no engine -----------------------------------------------------------

SECRET = "allure-unit-secret-5f3a9c"
PROJECT_CONFTEST = f'''
import json
from pathlib import Path

import pytest

from pytest_gaia2.config import options
from pytest_gaia2.plugin import allure as allure_report
from pytest_gaia2.store.redact import Redactor
from pytest_gaia2.config.settings import RunSettings
from pytest_gaia2.store.folder import RunFolder


class Context:
    """What the Allure plugin object reads of the run."""

    is_worker = False
    prepared = True
    run_id = "r" * 32

    def __init__(self, root):
        self.folder = RunFolder(root / "run")
        self.redactor = Redactor(["{SECRET}"])
        values = options.resolve({{"image": "img:1", "env": ["MY_TOKEN={SECRET}", "MODE=fast"]}}, {{}}, {{}})
        self.settings = RunSettings.from_options(values, rootdir=root, environ={{}}, reference_image="img:1")

    def image_id(self):
        return "sha256:feed"


def pytest_configure(config):
    allure_report.register(config, Context(config.rootpath))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Stands in for the plugin's wrapper (registered before the Allure object, as the plugin is):
    the record on the final report, and an error's longrepr as the plugin writes it."""
    report = yield
    planned = allure_report.planned_item(item)
    if planned is not None and (report.when == "call" or (report.when == "setup" and report.failed)):
        if report.failed and report.when == "setup":
            report.longrepr = "[daemon_error] the in-container daemon ended with status 'error'"
        folder = f"search/{{planned.name}}" + ("/attempt_2" if planned.universe else "")
        report.gaia2_record = {{"scenario_id": planned.name, "attempt": 2 if planned.universe else 1,
                               "folder": folder, "outcome": "failed", "note": "{SECRET}"}}
    return report
'''
PROJECT_TEST = '''
from pathlib import Path

import pytest

from pytest_gaia2.plugin import allure as allure_report
from pytest_gaia2.run.verdict import Gaia2InfraError
from pytest_gaia2.plan.items import PlannedItem
from pytest_gaia2.plan.scenarios import Scenario

HERE = Path(__file__).parent
JUDGED = Scenario("scenario_universe_21_abc", "search", HERE / "judged.json", task="Find <b>Ann</b>.",
                  tags=("contacts",))
BROKEN = Scenario("scenario_broken", "search", HERE / "missing.json", task="Unused.")
ITEMS = [PlannedItem("search", JUDGED.scenario_id, 2, 2, scenario=JUDGED),
         PlannedItem("search", BROKEN.scenario_id, scenario=BROKEN)]


@pytest.fixture(autouse=True)
def daemon(request):
    if request.node.callspec.params["gaia2_item"].universe is None:
        raise Gaia2InfraError("daemon_error", "the in-container daemon ended with status 'error'")


@pytest.mark.parametrize("gaia2_item", [pytest.param(item, id=item.param_id, marks=allure_report.marks(item))
                                        for item in ITEMS])
def test_scenario(gaia2_item):
    raise AssertionError("Tool count mismatch: agent={}, oracle={'Chats__send_message': 1}")
'''


@pytest.fixture
def allure_run(pytester: pytest.Pytester) -> Path:
    """One run of two items through allure-pytest: a judge failure (attempt 2, repeat 2 of 2)
    and a daemon error; the Allure results folder."""
    pytester.makeconftest(PROJECT_CONFTEST)
    pytester.makepyfile(test_gaia2=PROJECT_TEST)
    (pytester.path / "judged.json").write_text(json.dumps({"events": [_smu("Ann's number is <b>555</b>.")]}))
    judged = pytester.path / "run" / "search" / "scenario_universe_21_abc" / "attempt_2"
    judged.mkdir(parents=True)
    line = json.dumps({"event": "x" * 200}) + "\n"
    (judged / "trace.jsonl").write_text(line * (256 * 1024 // len(line) + 50))
    (judged / "eventd.log").write_text(f"token {SECRET} seen\n")
    broken = pytester.path / "run" / "search" / "scenario_broken"
    broken.mkdir()
    (broken / "container.log").write_text("exited 1\n")
    (pytester.path / "run" / "run_config.json").write_text(json.dumps(_run_config("run2", "llama3")))
    (pytester.path / "allure").mkdir()
    (pytester.path / "allure" / ENVIRONMENT_FILE).write_text("model=qwen3\nrun.id=run1\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *WITH_ALLURE, "--alluredir=allure")
    result.assert_outcomes(failed=1, errors=1)
    return pytester.path / "allure"


def test_allure_results_without_an_engine(allure_run: Path) -> None:
    results = {}
    for path in allure_run.glob("*-result.json"):
        result = json.loads(path.read_text(encoding="utf-8"))
        results[result["name"]] = result
    assert set(results) == {"scenario_universe_21_abc (run 2)", "scenario_broken"}
    judged, broken = results["scenario_universe_21_abc (run 2)"], results["scenario_broken"]

    # Statuses as allure-pytest reports them land in the intended groups.
    assert (judged["status"], broken["status"]) == ("failed", "broken")
    for result, group in ((judged, f"{JUDGE_PREFIX}tool count mismatch"), (broken, f"{INFRA_PREFIX}daemon_error")):
        details = result["statusDetails"]
        assert category_of(result["status"], details.get("message"), details.get("trace")) == group

    labels = {(label["name"], label["value"]) for label in judged["labels"]}
    assert {("parentSuite", "Gaia2"), ("suite", "search"), ("subSuite", "universe_21"), ("feature", "search"),
            ("story", "universe_21"), ("tag", "contacts")} <= labels
    assert "Find \\<b\\>Ann\\<\\/b\\>\\." in judged["description"]
    assert "Ann\\'s number is \\<b\\>555\\<\\/b\\>\\." in judged["description"]
    assert broken["description"].endswith("_The oracle sends no message to the user._")

    params = {param["name"]: param for param in judged["parameters"]}
    assert params["gaia2_item"]["mode"] == "hidden"
    assert params["image"]["value"] == repr("img:1")
    assert params["image id"]["excluded"] is True
    assert params["env MY_TOKEN"]["mode"] == "masked" and params["env MY_TOKEN"]["value"] == repr("***")

    attachments = {item["name"]: (allure_run / item["source"]).read_text(encoding="utf-8")
                   for item in judged["attachments"]}
    assert set(attachments) == {"result.json (attempt 2)", "trace.jsonl (attempt 2)", "eventd.log (attempt 2)"}
    assert attachments["trace.jsonl (attempt 2)"].startswith("[pytest-gaia2: attachment cut to the first 256 KiB")
    assert len(attachments["trace.jsonl (attempt 2)"]) < 256 * 1024 + 1024
    assert json.loads(attachments["result.json (attempt 2)"])["note"] == "***"
    assert attachments["eventd.log (attempt 2)"] == "token *** seen\n"
    assert {item["name"] for item in broken["attachments"]} == {"result.json", "container.log"}

    leaks = [path.name for path in allure_run.iterdir() if SECRET.encode() in path.read_bytes()]
    assert leaks == []
    environment_values = parse_properties((allure_run / ENVIRONMENT_FILE).read_text(encoding="latin-1"))
    assert environment_values["model"] == "qwen3, llama3" and environment_values["run.id"] == "run1, run2"
    assert [group["name"] for group in json.loads((allure_run / CATEGORIES_FILE).read_text())] == list(EXAMPLES)
