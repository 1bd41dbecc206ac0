"""One-field damages of a results.jsonl record, each a wrong type or an out-of-range value:
the console command must refuse every one with one line naming the file, the line and the field."""

from __future__ import annotations

BAD_FIELDS: list[tuple[str, object]] = [
    ("repeats", "2"),
    ("outcome", "pwned"),
    ("scenario_id", ["a"]),
    ("split", None),
    ("usage", [1, 2]),
    ("cost_usd", "1.0"),
    ("wall_time_s", "fast"),
    ("folder", ["x"]),
    ("repeat", 0),
    ("attempt", True),
    ("success", "yes"),
    ("reward", 1e999),
    ("num_agent_events", -1),
    ("failure_reasons", "nope"),
    ("daemon_status", [1]),
    ("cost_usd", -1.0),
    ("scenario_sha256", 5),
    ("adapter_port", 70000),
]
"""(field, value): 18 variants; ``1e999`` is written by json.dumps as ``Infinity``, so the
hostile tests write it as the literal 1e999, which json reads as an infinite float."""
