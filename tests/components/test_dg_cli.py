"""The real ``dg`` CLI on a project made by ``create-dagster``: it lists, scaffolds, and checks
TogetherRLComponent, and a misrouted checkpoint route fails ``dg check defs`` by name."""

import json
import subprocess
from pathlib import Path

import pytest

from tests.components.support import BIN, run, scaffolded_project

pytestmark = pytest.mark.slow

TYPE = "rl_sessions_dagster.TogetherRLComponent"

EVALUATION_PY = """
import dagster as dg
from rl_sessions_dagster import CHECKPOINT_PARTITIONS


@dg.asset(partitions_def=CHECKPOINT_PARTITIONS)
def checkpoint_evaluation() -> None: ...


@dg.asset
def session_report() -> None: ...
"""

ROUTES = """
    routes:
      - event_kinds: [checkpoint_registered]
        assets: 'key:"{checkpoint_target}"'
        job_name: evaluate_checkpoint
      - event_kinds: [session_stopped, session_error, session_expired]
        assets: 'key:"session_report"'
        job_name: finished_session_report
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return scaffolded_project(tmp_path_factory.mktemp("dg"), "rl-dg")


def dg(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run([str(BIN / "dg"), *args], project)


def test_dg_lists_scaffolds_and_checks_the_component(project):
    listed = dg(project, "list", "components", "--json")
    assert listed.returncode == 0, listed.stderr
    keys = {c["key"] for c in json.loads(listed.stdout)["items"]}
    assert TYPE in keys

    scaffolded = dg(project, "scaffold", "defs", TYPE, "my_rl")
    assert scaffolded.returncode == 0, scaffolded.stdout + scaffolded.stderr
    defs_yaml = project / "src" / "rl_dg" / "defs" / "my_rl" / "defs.yaml"
    assert defs_yaml.read_text().startswith(f"type: {TYPE}\n")

    for check in (("check", "yaml"), ("check", "defs")):
        done = dg(project, *check)
        assert done.returncode == 0, done.stdout + done.stderr
    listed_defs = json.loads(dg(project, "list", "defs", "--json").stdout)
    assert {a["asset_key"] for a in listed_defs["assets"]} >= {
        "together/rl_inference_checkpoint",
        "together/rl_sessions_table",
    }
    assert [s["name"] for s in listed_defs.get("sensors", [])] == []  # no routes yet

    # Fill in the routes, with the user's assets in a Python file beside the YAML.
    (project / "src" / "rl_dg" / "defs" / "evaluation.py").write_text(EVALUATION_PY)
    scaffold_text = defs_yaml.read_text()
    routed = scaffold_text.replace(
        "\n    routes: []\n", ROUTES.format(checkpoint_target="checkpoint_evaluation")
    )
    defs_yaml.write_text(routed)
    done = dg(project, "check", "defs")
    assert done.returncode == 0, done.stdout + done.stderr
    listed_defs = json.loads(dg(project, "list", "defs", "--json").stdout)
    assert [s["name"] for s in listed_defs["sensors"]] == ["together_rl_events"]
    assert {"evaluate_checkpoint", "finished_session_report"} <= {
        j["name"] for j in listed_defs["jobs"]
    }

    # A checkpoint route to an unpartitioned asset fails at load, naming the fix.
    defs_yaml.write_text(
        scaffold_text.replace(
            "\n    routes: []\n", ROUTES.format(checkpoint_target="session_report")
        ).replace("job_name: finished_session_report", "job_name: report")
    )
    done = dg(project, "check", "defs")
    assert done.returncode != 0
    assert "CHECKPOINT_PARTITIONS" in done.stdout + done.stderr

    # A typo in YAML is caught by `dg check yaml`, pointing at the field.
    defs_yaml.write_text(scaffold_text.replace("minimum_interval_seconds", "minimum_interval_secs"))
    done = dg(project, "check", "yaml")
    assert done.returncode != 0
    assert "minimum_interval_secs" in done.stdout + done.stderr


EVAL_YAML = """type: rl_sessions_dagster.TogetherRLComponent

attributes:
  sync:
    enabled: false
  evaluation:
    dataset: eval.jsonl            # beside this defs.yaml
    prompt_template: "What is {a} + {b}?"
    graders: [{type: numeric}]
    concurrency: CONCURRENCY
"""


def test_dg_checks_the_evaluation_section_and_its_dataset(project):
    folder = project / "src" / "rl_dg" / "defs" / "my_rl"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "defs.yaml").write_text(EVAL_YAML.replace("CONCURRENCY", "4"))
    dataset = folder / "eval.jsonl"
    dataset.write_text('{"a": 1, "b": 2, "expected": 3}\n{"a": 5, "b": 5, "expected": 10}\n')
    for check in (("check", "yaml"), ("check", "defs")):
        done = dg(project, *check)
        assert done.returncode == 0, done.stdout + done.stderr
    listed = json.loads(dg(project, "list", "defs", "--json").stdout)
    assert "together/checkpoint_evaluation" in {a["asset_key"] for a in listed["assets"]}
    assert "evaluate_checkpoint" in {j["name"] for j in listed["jobs"]}

    # A malformed line fails `dg check defs` (not the first run), naming file and line.
    dataset.write_text('{"a": 1, "b": 2, "expected": 3}\n{"a": 5, "b": 5, "expected": \n')
    done = dg(project, "check", "defs")
    assert done.returncode != 0
    assert "eval.jsonl:2: invalid JSON" in done.stdout + done.stderr
    dataset.unlink()
    done = dg(project, "check", "defs")
    assert done.returncode != 0 and "eval.jsonl: file not found" in done.stdout + done.stderr

    # Bounds are in the schema: `dg check yaml` names the field.
    (folder / "defs.yaml").write_text(EVAL_YAML.replace("CONCURRENCY", "0"))
    done = dg(project, "check", "yaml")
    assert done.returncode != 0 and "concurrency" in done.stdout + done.stderr
