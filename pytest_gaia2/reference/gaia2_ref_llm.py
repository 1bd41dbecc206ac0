"""The reference judge's model: an OpenAI-compatible chat endpoint asked for a verdict.

Used by the offline re-judge only (the daemon never calls a model, so in-container runs stay
model-free). Configured as gaia2-cli's judge is, from ``GAIA2_JUDGE_MODEL``,
``GAIA2_JUDGE_PROVIDER``, ``GAIA2_JUDGE_BASE_URL`` and ``GAIA2_JUDGE_API_KEY``; the reply
passes when it holds ``[[Success]]`` (or ``[[True]]``), as Gaia2's soft checkers read it.
A model that cannot be reached raises :class:`JudgeUnavailable`: the caller may retry,
a judged verdict is never made up. The key goes only into the Authorization header.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

PLACEHOLDER_MODELS = ("", "none")
"""Judge models that mean "no model" (pytest-gaia2's placeholder for the reference image)."""
DEFAULT_BASE_URL = "https://api.openai.com/v1"
TIMEOUT_S = 60.0

SYSTEM_PROMPT = (
    "You judge whether an AI assistant's action matches the expected (oracle) action of a task. "
    "Compare the meaning, not the wording: the agent's text passes if it conveys the same facts "
    "and intent as the oracle's. Answer with a short rationale, then exactly one of "
    "[[Success]] or [[Failure]]."
)


class JudgeUnavailable(Exception):
    """The model did not answer (network, HTTP error, malformed reply): retry later."""


def verdict_of(reply: str) -> bool | None:
    """``[[Success]]``/``[[True]]`` pass, ``[[Failure]]``/``[[False]]`` fail, else inconclusive."""
    if "[[Success]]" in reply or "[[True]]" in reply:
        return True
    if "[[Failure]]" in reply or "[[False]]" in reply:
        return False
    return None


class ChatJudge:
    """One model behind an OpenAI-compatible ``/chat/completions`` endpoint."""

    def __init__(self, base_url: str, model: str, api_key: str, timeout: float = TIMEOUT_S) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self._key = api_key
        self.timeout = timeout

    def __call__(self, tool: str, oracle: str, agent: Any) -> tuple[bool | None, str]:
        question = f"Tool: {tool}\nOracle: {oracle}\nAgent: {agent if isinstance(agent, str) else json.dumps(agent)}"
        body = {
            "model": self.model,
            "temperature": 0,
            "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}],
        }
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        request = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                data = json.loads(response.read())
            reply = str(data["choices"][0]["message"]["content"] or "")
        except urllib.error.HTTPError as exc:
            raise JudgeUnavailable(f"the judge model at {self.url} answered HTTP {exc.code}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise JudgeUnavailable(f"the judge model at {self.url} could not be reached: {reason}") from None
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise JudgeUnavailable(f"the judge model at {self.url} sent no chat completion: {exc!r}") from None
        return verdict_of(reply), reply


def from_env(env: Mapping[str, str] = os.environ) -> ChatJudge | None:
    """The configured model, or None when the judge is the deterministic one."""
    model = env.get("GAIA2_JUDGE_MODEL", "").strip()
    if model.lower() in PLACEHOLDER_MODELS:
        return None
    base_url = env.get("GAIA2_JUDGE_BASE_URL", "").strip() or DEFAULT_BASE_URL
    return ChatJudge(base_url, model, env.get("GAIA2_JUDGE_API_KEY", "").strip())
