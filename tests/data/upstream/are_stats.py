"""Run inside a throwaway virtualenv holding Meta's ``meta-agents-research-environments``: its own
statistics and schema for the rows on standard input, printed as JSON.

``report_stats.py`` is loaded by its path: the package's ``__init__`` imports the whole benchmark
runner (litellm, MCP, ...), which the report code does not need. ``create_hf_schema()`` needs the
``datasets`` library, so its field list is read from the source's syntax tree instead.
"""

import ast
import importlib.util
import json
import sys
from pathlib import Path

import are

BENCHMARK = Path(are.__file__).parent / "simulation" / "benchmark"
spec = importlib.util.spec_from_file_location("are_report_stats", BENCHMARK / "report_stats.py")
report_stats = importlib.util.module_from_spec(spec)
spec.loader.exec_module(report_stats)
pl = report_stats.pl


def schema_fields() -> list[list[str]]:
    tree = ast.parse((BENCHMARK / "hf_upload_utils.py").read_text(encoding="utf-8"))
    function = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "create_hf_schema")
    fields = next(n for n in ast.walk(function) if isinstance(n, ast.Assign) and n.targets[0].id == "schema_fields")
    return [[element.elts[0].value, element.elts[1].func.attr] for element in fields.value.elts]


def frame(runs: list[dict]) -> "pl.DataFrame":
    """Upstream's frame (``to_polars`` with the phase's metadata columns as strings)."""
    rows = [
        {
            "base_scenario_id": run["scenario_id"],
            "run_number": run["run_number"],
            "success_numeric": run.get("score"),
            "status": run["status"],
            "run_duration": run.get("run_duration"),
            "job_duration": run.get("job_duration"),
            "export_path": None,
            "has_exception": run["has_exception"],
            "exception_type": run.get("exception_type"),
            "exception_message": run.get("exception_message"),
            "rationale": run.get("rationale"),
            "phase_name": run["phase_name"],
            "config": run["config"],
            "a2a_app_prop": str(run["a2a_app_prop"]),
            "has_tool_augmentation": str(run["has_app_noise"]),
            "has_env_events": str(run["has_env_noise"]),
        }
        for run in runs
    ]
    return pl.DataFrame(rows, schema_overrides={"success_numeric": pl.Float64, "run_duration": pl.Float64,
                                                "job_duration": pl.Float64})


runs = json.load(sys.stdin)
df = frame(runs)
report = report_stats.generate_json_stats_report(df, "model-x", "provider-y")
print(json.dumps({
    "report": report,
    "rows": report_stats.build_trace_rows_polars(df),
    "schema": schema_fields(),
}, default=str))
