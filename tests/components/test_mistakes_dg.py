"""The YAML mistakes a Dagster user plausibly makes fail ``dg check``: the schema's at
``dg check yaml``, at their line, saying what is allowed and with no stack trace; the ones only
loading can tell at ``dg check defs``, naming the file or dotted field and what to do.
``dg check yaml`` reports every schema error of a file at once, so one file holds them all."""

import re
from pathlib import Path

import dagster as dg
import pytest

from rl_sessions_dagster import CHECKPOINT_PARTITIONS
from rl_sessions_dagster.partitions import CHECKPOINT_ASSET_KEY, EVALUATION_ASSET_KEY
from rl_sessions_dagster.testing.sensor_ticks import SensorTicker
from tests.components.support import component_folder, defs_for, scaffolded_project
from tests.components.support import dg_check as check

SECRET = "sk-do-not-echo-1234"

#: Every mistake ``dg check yaml`` can tell, one per line noted in CASES (1-based, as dg prints).
MISTAKES = f"""\
type: rl_sessions_dagster.TogetherRLComponent

attributes:
  resource:
    api_key: {SECRET}
  sessions:
    graders: [{{type: numeric}}]
    evaluation: {{items: []}}
  sync:
    cron_schedule: "*/15 * * *"
  spend:
    cron_schedule: "0 25 * * *"
  evaluation:
    items: [{{a: 1, expected: 1}}]
    prompt_template: "{{a}}"
    graders: [{{type: nmeric}}, {{type: "my_pkg.graders"}}, {{type: "my_pkg:"}}]
  champion:
    metric: accuracy
  metric: score
  report:
    metric: score_numeric
"""

# (id, line, what the message must say)
CASES = [
    ("literal api_key", 5,
     ["attributes.resource.api_key", "'api_key' is never written in YAML", "api_key_env"]),
    ("key under the wrong section", 7,
     ["attributes.sessions.graders", "'graders' belongs under 'evaluation'"]),
    ("section nested in another", 8,
     ["attributes.sessions.evaluation", "'evaluation' belongs under 'attributes'"]),
    ("champion key at the top", 19,
     ["attributes.metric", "'metric' belongs under 'champion'"]),
    ("cron with four fields", 10,
     ["attributes.sync.cron_schedule", "'a cron string: minute (0-59) hour (0-23)"]),
    ("cron out of range", 12,
     ["attributes.spend.cron_schedule", "'a cron string:", "@hourly, @daily"]),
    ("unknown grader type", 16,
     ["attributes.evaluation.graders.0.type",
      "'nmeric' is not one of ['exact', 'contains', 'regex', 'numeric', 'json_field', "
      "'package.module:function']"]),
    ("dotted grader type without a function", 16,
     ["attributes.evaluation.graders.1.type", "'my_pkg.graders' is not one of"]),
    ("grader function reference without its name", 16,
     ["attributes.evaluation.graders.2.type", "'my_pkg:' does not match"]),
    ("champion metric the evaluation does not record", 18,
     ["attributes.champion.metric",
      "'accuracy' is not one of ['score', 'passed', 'failed'", "'score [<grader name>]'"]),
    ("report metric the evaluation does not record", 21,
     ["attributes.report.metric", "'score_numeric' is not one of ['score'"]),
]  # fmt: skip

#: What the checks above must still let through.
VALID = """\
type: rl_sessions_dagster.TogetherRLComponent

attributes:
  resource:
    api_key_env: MY_KEY
  sync:
    cron_schedule: "{{ env.RL_NO_SUCH_CRON or '*/5 * * * *' }}"
  spend:
    cron_schedule: "0 9-17/2 * jan-jun mon-fri"
  evaluation:
    items: [{a: 1, expected: 1}]
    prompt_template: "{a}"
    graders: [{type: numeric}, {type: "tests.no_such:grader", name: mine}]
  champion:
    metric: "score [mine]"
"""

EVALUATION = """\
  evaluation:
    items: [{a: 1, b: 2, expected: 3}]
    prompt_template: "What is {a} + {b}?"
    graders: [{type: numeric}]
"""
HEAD = "type: rl_sessions_dagster.TogetherRLComponent\n\nattributes:\n"

# Only loading can tell: (id, YAML attributes, line, what the message must say)
DEFS_CASES = [
    ("on_change selection matching no asset",
     EVALUATION + "  champion:\n    on_change:\n      assets: 'key:\"deploy_champion\"'\n"
     "      job_name: deploy\n", 10,
     ["attributes.champion.on_change.assets", "job 'deploy'",
      "selection 'key:\"deploy_champion\"' matches no asset"]),
    ("templated cron resolving to a bad string",
     "  sync:\n    cron_schedule: \"{{ env.RL_NO_SUCH_CRON or '*/15 * * *' }}\"\n", 5,
     ["attributes.sync.cron_schedule", "'*/15 * * *' is not a cron string: minute (0-59)"]),
    ("duplicate sensor and job names",
     "  sessions:\n    routes:\n      - event_kinds: [session_stopped]\n"
     "        assets: 'key:\"together/rl_sessions_table\"'\n        job_name: refresh\n"
     "  champion:\n    sensor_name: together_rl_events\n    on_change:\n"
     "      assets: 'key:\"together/rl_sessions_table\"'\n      job_name: refresh\n", 10,
     ["attributes.champion.sensor_name", "sensor name 'together_rl_events' is set by sessions.name and champion.sensor_name",
      "job name 'refresh' is set by sessions.routes.0.job_name and champion.on_change.job_name"]),
    ("missing dataset", EVALUATION.replace("items: [{a: 1, b: 2, expected: 3}]", "dataset: no.jsonl"), 5,
     ["attributes.evaluation.dataset", "evaluation dataset no.jsonl: file not found"]),
    ("malformed dataset line", EVALUATION.replace("items: [{a: 1, b: 2, expected: 3}]", "dataset: bad.jsonl"), 5,
     ["attributes.evaluation.dataset", "evaluation dataset bad.jsonl:2: invalid JSON"]),
    ("item lacking a template field", EVALUATION.replace("b: 2, ", ""), 5,
     ["attributes.evaluation.items", "item 1: prompt_template needs field(s) ['b'] that the item lacks"]),
    ("empty dataset", EVALUATION.replace("[{a: 1, b: 2, expected: 3}]", "[]"), 5,
     ["attributes.evaluation.items", "evaluation dataset inline items: no items"]),
    ("grader function that cannot be imported",
     EVALUATION.replace("{type: numeric}", "{type: 'no_such_pkg.graders:exact_match'}"), 7,
     ["attributes.evaluation.graders", "grader function 'no_such_pkg.graders:exact_match': cannot import 'no_such_pkg.graders'"]),
]  # fmt: skip


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    project = scaffolded_project(tmp_path_factory.mktemp("mistakes"), "rl-mistakes")
    bad = '{"a": 1, "b": 2, "expected": 3}\n{"a": 2,\n'
    (component_folder(project) / "bad.jsonl").write_text(bad)
    return project


@pytest.fixture(scope="module")
def checked(project) -> str:
    done = check(project, MISTAKES, "yaml")
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    return out


@pytest.mark.slow
def test_what_the_checks_allow_passes_dg_check_yaml(project):
    done = check(project, VALID, "yaml")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("line", "says"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_mistake_fails_dg_check_yaml_at_its_line(checked, line, says):
    errors = [e for e in checked.split("\n\n") if f"defs.yaml:{line} - " in e]
    assert errors, checked[-4000:]
    for fragment in says:
        assert any(fragment in e for e in errors), (fragment, checked[-4000:])


@pytest.mark.slow
def test_the_yaml_check_shows_no_stack_trace_and_never_the_key(checked):
    assert "Traceback" not in checked and "Stack Trace" not in checked, checked
    messages = [line for line in checked.splitlines() if re.search(r"defs\.yaml:\d+ - ", line)]
    assert messages and not any(SECRET in m for m in messages), messages
    # the file's own line in dg's snippet aside, the value appears nowhere
    assert checked.count(SECRET) == checked.count(f"api_key: {SECRET}"), checked


@pytest.mark.slow
@pytest.mark.parametrize(
    ("attributes", "line", "says"), [c[1:] for c in DEFS_CASES], ids=[c[0] for c in DEFS_CASES]
)
def test_a_mistake_only_loading_can_tell_fails_dg_check_defs(project, attributes, line, says):
    done = check(project, HEAD + attributes, "defs")
    out = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr)  # Dagster's log colours
    assert done.returncode != 0, out
    for fragment in says:
        assert fragment in out, out[-4000:]
    assert "Traceback" not in out, out[-4000:]
    # Dagster prints every load error with a "Stack Trace:" block: the located line comes first
    first = out.splitlines()[
        out.splitlines().index("All component YAML validated successfully.") + 1
    ]
    assert re.search(rf"ERROR - \S*defs\.yaml:{line} - attributes\.", first), out[-4000:]
    assert out.index(first) < out.index("Stack Trace"), out[-4000:]


def test_a_metric_only_the_run_can_tell_is_named_by_the_champion_tick_in_one_line(monkeypatch):
    """The champion reads an evaluation asset of the user's own (no ``evaluation:`` section):
    its metrics are known only once it runs, so the first tick that sees none says so."""
    monkeypatch.setenv("TOGETHER_API_KEY", "sk-unused-by-the-champion")
    own_evaluation = dg.AssetSpec(EVALUATION_ASSET_KEY, partitions_def=CHECKPOINT_PARTITIONS)
    defs = defs_for("champion: {metric: accuracy}\n", own_evaluation)
    key = "run-a/000010/a"
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(CHECKPOINT_PARTITIONS.name, [key])
        for asset, metadata in (
            (CHECKPOINT_ASSET_KEY, {"display_name": "run-a", "wandb_group": "g"}),
            (EVALUATION_ASSET_KEY, {"score": 0.5, "step": 10, "checkpoint_id": "a"}),
        ):
            instance.report_runless_asset_event(
                dg.AssetMaterialization(asset, partition=key, metadata=metadata)
            )
        ticker = SensorTicker(defs, "together_rl_champion", instance)
        ticker.tick()
        warnings = [m for level, m in ticker.log_messages() if level == "WARNING"]
    assert len(warnings) == 1, ticker.log_messages()
    assert "champion metric 'accuracy' is recorded by none of these 1 evaluation(s)" in warnings[0]
    assert "score" in warnings[0] and "\n" not in warnings[0]


def test_a_templated_cron_is_checked_once_resolved_unless_its_section_is_off():
    bad = "\"{{ env.RL_NO_SUCH_CRON or '0 25 * * *' }}\""
    with pytest.raises(dg.DagsterInvalidDefinitionError, match="is not a cron string"):
        defs_for(f"spend: {{cron_schedule: {bad}}}\n")
    off = defs_for(f"spend: {{enabled: false, cron_schedule: {bad}}}\n")
    assert all("spend" not in s.name for s in off.schedules or [])
