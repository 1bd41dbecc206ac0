"""Allure results for Gaia2 scenarios, active when allure-pytest's ``--alluredir`` is given.

Per test, in the process that ran it (each xdist worker writes its own Allure results):
the scenario id as title, the run's image, model, provider and judge as parameters, and
the run's files as attachments, each cut to ``ATTACHMENT_CAP``. Suite labels come from the
``allure_label`` marks every item carries (``ItemPlan.marks``). Per run, on the controller
at the very end (``--clean-alluredir`` empties the folder at start-up):
``environment.properties`` from run_config.json, and ``categories.json`` built from
``verdict.CATEGORIES``, so judge failures (failed) and each infrastructure error category
(broken, matched by the ``[category]`` prefix of ``Gaia2InfraError``) get their own group.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import allure
import pytest
from allure_commons.types import AttachmentType, ParameterMode

from . import artifacts, settings as settings_mod
from .redact import MASK
from .verdict import CATEGORIES

if TYPE_CHECKING:
    from .session import Gaia2Session, ItemPlan

ATTACHMENT_CAP = 256 * 1024
"""Bytes kept of each attached file: a runaway log must not bloat the report."""

# The run's files in reading order; the result record itself is attached as result.json.
FILES: tuple[str, ...] = (
    "agent_response.txt", "events.jsonl", "daemon_status.json", "daemon_judgments.jsonl",
    "entrypoint.log", "eventd.log", "adapter.log", "openclaw.log", "container.log", "trace.jsonl",
)
PLAN_PARAMETER = "gaia2_plan"
JUDGE_FAILURES = "Judge failures"
INFRA_PREFIX = "Infrastructure error: "
_SETUP_STARTED = pytest.StashKey[float]()


def enabled(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "allure_report_dir", None))


def _plan(item: pytest.Item) -> ItemPlan | None:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get(PLAN_PARAMETER) if callspec is not None else None


def _size(count: int) -> str:
    if count >= 2**20:
        return f"{count / 2**20:.1f} MiB"
    return f"{count / 1024:.0f} KiB" if count >= 1024 else f"{count} B"


def read_capped(path: Path, *, keep_end: bool, cap: int = ATTACHMENT_CAP) -> tuple[bytes, int]:
    """At most ``cap`` bytes of a file (its end or its start) and its size; the rest is never read."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        if keep_end and size > cap:
            handle.seek(size - cap)
        return handle.read(cap), size


def capped_text(data: bytes, size: int, where: str, *, keep_end: bool,
                cap: int = ATTACHMENT_CAP) -> tuple[str, bool]:
    """At most ``cap`` bytes of a file of ``size`` bytes as text; when cut, a first line states
    the cap and where the whole file is, so a reader sees it before the text.

    Logs keep their end (where the error is), everything else its start.
    """
    kept = data[-cap:] if keep_end else data[:cap]
    text = kept.decode("utf-8", errors="replace")
    if size <= cap:
        return text, False
    part = "last" if keep_end else "first"
    note = (f"[pytest-gaia2: attachment cut to the {part} {_size(cap)} of {_size(size)} "
            f"({size} bytes); the whole file is {where}]")
    return f"{note}\n{text}", True


def parameters(settings: Mapping[str, Any], image_id: str | None) -> list[tuple[str, str, ParameterMode | None]]:
    """(name, value, mode) per parameter, from ``settings.public_dict`` (keys already masked).

    A ``--gaia2-env`` value whose name looks secret is shown as ``***`` and marked MASKED.
    """
    judge = "/".join(str(settings.get(key) or "none") for key in ("judge_provider", "judge_model"))
    shown: list[tuple[str, str, ParameterMode | None]] = [
        ("image", str(settings.get("image")), None),
        ("image id", image_id or "unknown", None),
        ("model", str(settings.get("model") or "none"), None),
        ("provider", str(settings.get("provider") or "none"), None),
        ("judge", judge, None),
    ]
    for name, value in (settings.get("extra_env") or {}).items():
        shown.append((f"env {name}", str(value), ParameterMode.MASKED if value == MASK else None))
    return shown


class AllureGaia2:
    """Registered by the plugin when ``--alluredir`` is given; one per process."""

    def __init__(self, session: Gaia2Session) -> None:
        self.session = session

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Parameters before allure-pytest adds its own: it skips names already present,
        so the plan parameter stays hidden instead of showing a long repr."""
        plan = _plan(item)
        if plan is None:
            return
        item.stash[_SETUP_STARTED] = time.time()
        allure.dynamic.parameter(PLAN_PARAMETER, plan.test_id, mode=ParameterMode.HIDDEN)
        public = settings_mod.public_dict(self.session.settings)
        for name, value, mode in parameters(public, self.session.image_id()):
            # The image id changes with every rebuild: keep it out of Allure's history id.
            allure.dynamic.parameter(name, value, excluded=True if name == "image id" else None, mode=mode)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        """On the report that carries the verdict (setup for errors, call otherwise): title,
        attachments and the test's real duration. Errors are raised in setup, so attaching
        here is what puts the files on broken tests too."""
        report = yield
        record = getattr(report, "gaia2_result", None)
        plan = _plan(item)
        if record is not None and plan is not None:
            title = plan.name if plan.repeat == 1 else f"{plan.name} (run {plan.run})"
            function = getattr(item, "originalname", item.name)
            allure.dynamic.title(title if function == "test_scenario" else f"{function}: {title}")
            self._attach(plan, record)
            self._set_duration(item)
        return report

    def _attach(self, plan: ItemPlan, record: Mapping[str, Any]) -> None:
        suffix = f" (attempt {record['attempt']})" if (record.get("attempt") or 1) > 1 else ""
        folder = self.session.folder(plan)
        body = json.dumps(record, indent=2, ensure_ascii=False, default=str).encode("utf-8")
        files = [("result.json", body, len(body), str(folder / artifacts.RESULT_FILE))]
        for name in FILES:
            path = folder / name
            if path.is_file():
                files.append((name, *read_capped(path, keep_end=name.endswith(".log")), str(path)))
        for name, data, size, where in files:
            text, cut = capped_text(data, size, where, keep_end=name.endswith(".log"))
            kind = AttachmentType.JSON if name.endswith(".json") and not cut else AttachmentType.TEXT
            allure.attach(self.session.redactor.redact(text), name=f"{name}{suffix}", attachment_type=kind)

    def _set_duration(self, item: pytest.Item) -> None:
        """allure-pytest times only the call phase, but a scenario runs in its setup fixtures;
        the test's span in the report should be the scenario's. (allure-pytest internals.)"""
        listener = item.config.pluginmanager.get_plugin("allure_listener")
        reporter = getattr(listener, "allure_logger", None)
        test = reporter.get_test(None) if reporter is not None else None
        if test is not None:
            test.start = int(item.stash[_SETUP_STARTED] * 1000)
            test.stop = int(time.time() * 1000)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        gaia2 = self.session
        if gaia2.is_worker or not gaia2.prepared:
            return
        run_config = artifacts.read_json(gaia2.output / "run_config.json")
        write_run_files(Path(session.config.option.allure_report_dir),
                        run_config if isinstance(run_config, dict) else {})


def environment(run_config: Mapping[str, Any]) -> dict[str, str]:
    """The report's Environment widget, from run_config.json (which never holds a secret)."""
    settings = run_config.get("settings") or {}
    image = run_config.get("image") or {}
    engine = run_config.get("engine") or {}
    values = {
        "image": settings.get("image") or image.get("name"),
        "image.id": image.get("id"),
        "engine.version": engine.get("version"),
        "profile": settings.get("profile"),
        "model": settings.get("model"),
        "provider": settings.get("provider"),
        "judge": "/".join(str(settings.get(key) or "none") for key in ("judge_provider", "judge_model")),
        "network": settings.get("network"),
        "workers": run_config.get("workers"),
        "plugin.version": run_config.get("plugin_version"),
        "run.id": run_config.get("run_id"),
        "run.started": run_config.get("started_at"),
    }
    return {key: "none" if value is None else str(value) for key, value in values.items()}


def _property(value: str) -> str:
    """A Java properties value (read as Latin-1): backslashes, line breaks and non-ASCII escaped."""
    escaped = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return "".join(char if ord(char) < 128 else f"\\u{ord(char):04x}" for char in escaped)


def categories() -> list[dict[str, Any]]:
    """One group for judge failures, one per infrastructure error category (README's table)."""
    groups: list[dict[str, Any]] = [{
        "name": JUDGE_FAILURES,
        "description": "the in-container judge rejected the run, or it ran past its declared duration",
        "matchedStatuses": ["failed"],
    }]
    for category, (what, where) in CATEGORIES.items():
        groups.append({
            "name": f"{INFRA_PREFIX}{category}",
            "description": f"{what}; look at {where}",
            "matchedStatuses": ["broken"],
            "messageRegex": rf"(?s).*\[{category}\].*",
        })
    return groups


def write_run_files(alluredir: Path, run_config: Mapping[str, Any]) -> None:
    alluredir.mkdir(parents=True, exist_ok=True)
    lines = [f"{key}={_property(value)}" for key, value in environment(run_config).items()]
    artifacts.write_text(alluredir / "environment.properties", "\n".join(lines) + "\n")
    artifacts.write_json(alluredir / "categories.json", categories())
