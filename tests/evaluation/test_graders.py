"""Graders: pass, fail, and "unreadable" kept apart from "wrong"."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rl_sessions_dagster.evaluation.dataset import EvalItem
from rl_sessions_dagster.evaluation.graders import Grade, resolve_grader


def item(expected, **fields):
    return EvalItem("1", ({"role": "user", "content": "q"},), expected, fields, 1)


@pytest.mark.parametrize(
    ("spec", "answer", "expected", "verdict"),
    [
        ("exact", "  Paris ", "paris", "pass"),
        ({"type": "exact", "case_sensitive": True}, "paris", "Paris", "fail"),
        ("exact", "Lyon", ["Paris", "Lyon"], "pass"),
        ("contains", "The capital is Paris.", "paris", "pass"),
        ("contains", "The capital is Rome.", "paris", "fail"),
        ("regex", "answer: 42", r"\b42\b", "pass"),
        ({"type": "regex", "pattern": r"^\d+$"}, "42", "ignored", "pass"),
        ("numeric", "The answer is 42.", 42, "pass"),
        ("numeric", "The answer is 41.", 42, "fail"),
        ("numeric", "I don't know", 42, "unreadable"),
        ("numeric", "1,234.5 apples", "1234.5", "pass"),
        ({"type": "numeric", "abs_tol": 0.01}, "3.141", 3.14, "pass"),
        ({"type": "numeric", "rel_tol": 0.1}, "105", 100, "pass"),
        ({"type": "numeric", "pick": "first"}, "7 then 8", 7, "pass"),
        ("numeric", "7 then 8", 7, "fail"),
        ({"type": "json_field", "path": "a.1.b"}, '{"a": [0, {"b": "x"}]}', "x", "pass"),
        ({"type": "json_field", "path": "v"}, 'Sure:\n```json\n{"v": 2.0}\n```', 2, "pass"),
        ({"type": "json_field", "path": "v"}, 'result {"v": 3} done', 2, "fail"),
        ({"type": "json_field", "path": "v"}, "no json here", 2, "unreadable"),
        ({"type": "json_field", "path": "w"}, '{"v": 2}', 2, "unreadable"),
    ],
)
def test_builtin_verdicts(spec, answer, expected, verdict):
    assert resolve_grader(spec).grade(answer, item(expected)).verdict == verdict


def check_length(answer, it):
    return len(answer) == it.fields["n"]


def returns_none(answer, it):
    return None


def raises(answer, it):
    raise KeyError("boom")


def half(answer, it):
    return 0.5


def test_function_graders_by_import_string():
    mod = __name__
    assert resolve_grader(f"{mod}:check_length").grade("abc", item("", n=3)).passed
    assert resolve_grader(f"{mod}:check_length").name == f"{mod}:check_length"
    assert resolve_grader(f"{mod}:half").grade("x", item("")).passed
    none = resolve_grader(f"{mod}:returns_none").grade("x", item(""))
    assert none.verdict == "unreadable"
    boom = resolve_grader(f"{mod}:raises").grade("x", item(""))
    assert boom.verdict == "unreadable" and "KeyError" in boom.detail


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("nope_module_xyz:fn", "cannot import"),
        (f"{__name__}:missing", "has no"),
        ("bogus", "type"),
        ({"type": "json_field"}, "needs path"),
        ({"type": "regex", "pattern": "("}, "pattern"),
        ({"type": "numeric", "abs_tol": -1}, "abs_tol"),
    ],
)
def test_bad_grader_specs_fail_at_build(spec, match):
    with pytest.raises(ValueError, match=match):
        resolve_grader(spec)


def test_check_refuses_items_a_grader_can_never_compare():
    assert "not a number" in resolve_grader("numeric").check(item("abc"))
    assert "valid regex" in resolve_grader("regex").check(item("("))
    assert resolve_grader("numeric").check(item("12")) is None
    assert resolve_grader("exact").check(item({"a": 1})) is not None


@given(st.integers(-(10**9), 10**9), st.text(alphabet="abc ,.:", max_size=20))
def test_numeric_reads_an_integer_among_words(n, words):
    answer = f"{words} {n}"
    assert resolve_grader("numeric").grade(answer, item(n)).verdict == "pass"
    assert resolve_grader("numeric").grade(answer, item(n + 1)).verdict == "fail"


@given(st.floats(-1e6, 1e6, allow_nan=False), st.floats(0.001, 1e3, allow_nan=False))
def test_numeric_within_abs_tol_passes_and_beyond_fails(x, tol):
    g = resolve_grader({"type": "numeric", "abs_tol": tol})
    assert g.grade(f"{x + tol / 2:.6f}", item(round(x, 6))).passed
    assert not g.grade(f"{x + tol * 2 + 1:.6f}", item(round(x, 6))).passed


@given(st.dictionaries(st.text("xyz", min_size=1, max_size=3), st.integers(), min_size=1))
def test_json_field_finds_every_top_level_key(doc):
    for key, value in doc.items():
        g = resolve_grader({"type": "json_field", "path": key})
        assert g.grade(json.dumps(doc), item(value)).passed


@given(st.text(max_size=40))
def test_no_grader_raises_on_any_answer(answer):
    for spec in ("exact", "contains", "numeric", {"type": "json_field", "path": "a"}):
        assert isinstance(resolve_grader(spec).grade(answer, item("1")), Grade)
