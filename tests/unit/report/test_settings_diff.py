"""settings_diff on any run_config.json a run folder may hold: bounded, one line, inert, masked."""

from __future__ import annotations

import re
from typing import Any

from gaia2_testing import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_gaia2.report.settings_diff import MAX_VALUE, differences, shown

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


@settings(max_examples=examples(200), deadline=None)
@given(st.dictionaries(st.sampled_from(["provenance", "settings", "selection", "markexpr", "x"]), JSON, max_size=5),
       st.dictionaries(st.sampled_from(["provenance", "settings", "selection", "keyword"]), JSON, max_size=5))
def test_any_two_configs_give_short_inert_lines(first: dict[str, Any], second: dict[str, Any]) -> None:
    for name, values in differences([("A", first), ("B", second)]):
        assert not CONTROL.search(name)
        for _label, value in values:
            assert len(value) <= MAX_VALUE and not CONTROL.search(value)


def test_secret_looking_names_are_masked_and_key_settings_are_not() -> None:
    assert shown("settings.extra_env.OPENAI_API_KEY", "sk-1") == "***"
    assert shown("settings.api_key_env", "OPENAI_API_KEY") == "OPENAI_API_KEY"  # a variable's name, not a key
    assert shown("settings.api_key_env", "sk-live abc/def") == "***"  # not a name: could be a key
    assert shown("settings.judge_api_key_set", True) == "true"
    assert shown("selection.seed", None) == "-"
