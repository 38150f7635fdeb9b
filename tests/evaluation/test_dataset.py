"""Datasets fail early and say where: file and line (or inline item), and what is wrong."""

import json

import pytest

from rl_sessions_dagster.evaluation import EvaluationSpec
from rl_sessions_dagster.evaluation.dataset import DatasetError, load_dataset


def write(tmp_path, lines):
    path = tmp_path / "eval.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_jsonl_messages_prompt_and_template(tmp_path):
    path = write(
        tmp_path,
        [
            json.dumps({"messages": [{"role": "user", "content": "hi"}], "expected": "hello"}),
            "",
            json.dumps({"id": "q2", "prompt": "What is 2 + 2?", "expected": 4}),
            json.dumps({"a": 3, "b": 5, "expected": 8}),
        ],
    )
    ds = load_dataset(path, prompt_template="What is {a} + {b}?", system_prompt="Be brief.")
    assert [i.id for i in ds.items] == ["1", "q2", "4"]
    assert [i.line for i in ds.items] == [1, 3, 4]
    assert ds.items[2].prompt == "What is 3 + 5?" and ds.items[2].fields == {"a": 3, "b": 5}
    assert all(i.messages[0] == {"role": "system", "content": "Be brief."} for i in ds.items)
    assert ds.source == str(path) and len(ds.digest) == 16


def test_relative_path_is_read_from_base_dir(tmp_path):
    write(tmp_path, [json.dumps({"prompt": "x", "expected": 1})])
    assert len(load_dataset("eval.jsonl", base_dir=tmp_path)) == 1


def test_digest_changes_with_content():
    one = load_dataset(items=[{"prompt": "a", "expected": 1}])
    two = load_dataset(items=[{"prompt": "a", "expected": 2}])
    assert one.digest != two.digest
    assert one.digest == load_dataset(items=[{"prompt": "a", "expected": 1}]).digest


@pytest.mark.parametrize(
    ("lines", "line", "match"),
    [
        (['{"prompt": "a", "expected": 1}', '{"prompt": "b", "expected": 2'], 2, "invalid JSON"),
        (['{"prompt": "a"}'], 1, "missing 'expected'"),
        (["[1, 2]"], 1, "JSON object"),
        (['{"expected": 1}'], 1, "no 'messages' or 'prompt'"),
        (['{"messages": [], "expected": 1}'], 1, "non-empty list"),
        (['{"messages": [{"content": "x"}], "expected": 1}'], 1, "string 'role'"),
        (['{"prompt": "a", "messages": [], "expected": 1}'], 1, "not both"),
        (
            [
                '{"id": "x", "prompt": "a", "expected": 1}',
                '{"id": "x", "prompt": "b", "expected": 1}',
            ],
            2,
            "duplicate id 'x'",
        ),
    ],
)
def test_malformed_lines_are_named(tmp_path, lines, line, match):
    path = write(tmp_path, ["", *lines])
    with pytest.raises(DatasetError, match=match) as info:
        load_dataset(path)
    assert info.value.line == line + 1
    assert f"eval.jsonl:{line + 1}:" in str(info.value)


def test_template_field_missing_is_named(tmp_path):
    path = write(tmp_path, ['{"a": 1, "expected": 2}'])
    with pytest.raises(DatasetError, match=r"eval.jsonl:1: .*\['b'\]"):
        load_dataset(path, prompt_template="{a} + {b}")


def test_missing_file_and_empty_file(tmp_path):
    with pytest.raises(DatasetError, match=r"nope\.jsonl: file not found"):
        load_dataset(tmp_path / "nope.jsonl")
    with pytest.raises(DatasetError, match="no items"):
        load_dataset(write(tmp_path, [""]))


def test_inline_items_name_the_position():
    with pytest.raises(DatasetError, match="inline items: item 2: missing 'expected'"):
        load_dataset(items=[{"prompt": "a", "expected": 1}, {"prompt": "b"}])


def test_spec_checks_items_against_graders_at_load(tmp_path):
    path = write(tmp_path, ['{"prompt": "a", "expected": 1}', '{"prompt": "b", "expected": "x"}'])
    spec = EvaluationSpec(dataset=str(path), graders=["numeric"])
    with pytest.raises(DatasetError, match=r"eval.jsonl:2: grader 'numeric': expected 'x'"):
        spec.load()


def test_spec_call_cap_checked_at_load():
    spec = EvaluationSpec(items=[{"prompt": "a", "expected": 1}] * 1, samples=3, max_calls=2)
    with pytest.raises(DatasetError, match="3 calls, more than max_calls=2"):
        spec.load()


def test_spec_needs_exactly_one_source():
    with pytest.raises(ValueError, match="exactly one"):
        EvaluationSpec()
    with pytest.raises(ValueError, match="exactly one"):
        EvaluationSpec(dataset="a.jsonl", items=[{"prompt": "a", "expected": 1}])
