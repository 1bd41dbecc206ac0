"""The dotenv syntax people write: comments, export, quotes, inline comments."""

from __future__ import annotations

from pathlib import Path

from pytest_gaia2.config import envfile


def test_plain_assignments_comments_and_blank_lines() -> None:
    parsed = envfile.parse(
        "# keys for the run\n"
        "\n"
        "ANTHROPIC_API_KEY=sk-ant-123\n"
        "   # indented comment\n"
        "MODEL = claude-sonnet-4-6  \n"
    )
    assert parsed.values == {"ANTHROPIC_API_KEY": "sk-ant-123", "MODEL": "claude-sonnet-4-6"}
    assert parsed.bad_lines == ()


def test_export_prefix() -> None:
    assert envfile.parse("export OPENAI_API_KEY=sk-1\n  export\tX=2").values == {
        "OPENAI_API_KEY": "sk-1",
        "X": "2",
    }


def test_inline_comment_needs_whitespace_before_hash() -> None:
    parsed = envfile.parse("A=value # comment\nB=val#ue\nC= # only a comment\n")
    assert parsed.values == {"A": "value", "B": "val#ue", "C": ""}


def test_single_quotes_are_literal() -> None:
    parsed = envfile.parse("A='a # not a comment $HOME \\n'  # trailing\nB='it\\'s'\n")
    assert parsed.values == {"A": "a # not a comment $HOME \\n", "B": "it's"}


def test_double_quotes_decode_escapes_and_span_lines() -> None:
    parsed = envfile.parse('A="line1\\nline2 \\"q\\" \\\\"\nB="multi\nline"\nC=after\n')
    assert parsed.values == {"A": 'line1\nline2 "q" \\', "B": "multi\nline", "C": "after"}


def test_bare_key_is_empty_and_last_assignment_wins() -> None:
    assert envfile.parse("A\nB=1\nB=2\n").values == {"A": "", "B": "2"}


def test_unreadable_lines_are_reported_by_number_and_skipped() -> None:
    parsed = envfile.parse('GOOD=1\n1BAD=2\nA="unterminated\nKEY junk\nLAST=3')
    # the unterminated quote swallows nothing: its line is skipped and parsing continues
    assert parsed.values == {"GOOD": "1", "LAST": "3"}
    assert parsed.bad_lines == (2, 3, 4)


def test_load_reads_utf8_with_bom(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("\ufeffKEY=välue\n", encoding="utf-8")
    assert envfile.load(path).values == {"KEY": "välue"}
