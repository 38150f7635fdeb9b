"""Each YAML mistake of issue #19 fails the earliest ``dg`` check that can tell, with a message
naming the field and its line: ``dg check yaml`` wherever the JSON schema can say it (a
misspelled key at any depth, a wrong type, an unknown event kind, an out-of-bounds number),
``dg check defs`` where only loading can (a template whose value is out of bounds, a selection
that matches no asset, a kind routed twice)."""

import re
from pathlib import Path

import pytest

from tests.components.support import dg_check as check
from tests.components.support import scaffolded_project

pytestmark = pytest.mark.slow


#: Valid; each case below changes one thing. Line numbers are 1-based, as dg prints them.
BASE = """\
type: rl_sessions_dagster.TogetherRLComponent

attributes:
  sessions:
    minimum_interval_seconds: 30
    running: false
    routes:
      - event_kinds: [session_stopped]
        assets: 'key:"together/rl_sessions_table"'
        job_name: refresh_table
  model_resources:
    routes:
      - event_kinds: [resource_ready]
        assets: 'key:"together/rl_sessions_table"'
        job_name: gpu_refresh
  evaluation:
    items: [{a: 1, b: 2, expected: 3}]
    prompt_template: "What is {a} + {b}?"
    graders: [{type: numeric}]
    concurrency: 4
"""

INTERVAL = "minimum_interval_seconds: 30"
RUNNING = "    running: false\n"
SELECTION = "assets: 'key:\"together/rl_sessions_table\"'\n        job_name: refresh_table"

# (id, old, new, check, line, what the message must say)
CASES = [
    ("misspelled key", INTERVAL, "minimum_interval_secs: 30", "yaml", 5,
     ["attributes.sessions.minimum_interval_secs", "'minimum_interval_secs' was unexpected"]),
    ("misspelled nested key", RUNNING, RUNNING + "    options: {page_sise: 10}\n", "yaml", 7,
     ["attributes.sessions.options.page_sise", "'page_sise' was unexpected"]),
    ("misspelled key in an optional section", "  model_resources:\n",
     "  model_resources:\n    runing: true\n", "yaml", 12,
     ["attributes.model_resources.runing", "'runing' was unexpected"]),
    ("misspelled grader option", "{type: numeric}", "{type: numeric, abs_tl: 0.1}", "yaml", 19,
     ["attributes.evaluation.graders.0.abs_tl", "'abs_tl' was unexpected"]),
    ("negative interval", INTERVAL, "minimum_interval_seconds: -5", "yaml", 5,
     ["attributes.sessions.minimum_interval_seconds", "-5 is less than the minimum of 1"]),
    ("zero interval", INTERVAL, "minimum_interval_seconds: 0", "yaml", 5,
     ["attributes.sessions.minimum_interval_seconds", "0 is less than the minimum of 1"]),
    ("interval of the wrong type", INTERVAL, "minimum_interval_seconds: thirty", "yaml", 5,
     ["attributes.sessions.minimum_interval_seconds", "'thirty' is not of type 'integer'"]),
    ("flag of the wrong type", RUNNING, "    running: maybe\n", "yaml", 6,
     ["attributes.sessions.running", "'maybe' is not of type 'boolean'"]),
    ("count out of bounds", RUNNING, RUNNING + "    options: {max_runs_per_tick: 0}\n", "yaml", 7,
     ["attributes.sessions.options.max_runs_per_tick", "0 is less than the minimum of 1"]),
    ("unknown event kind", "[session_stopped]", "[session_stoped]", "yaml", 8,
     ["attributes.sessions.routes.0.event_kinds.0", "'session_stoped' is not one of ['checkpoint_created'"]),
    ("unknown resource event kind", "[resource_ready]", "[resource_redy]", "yaml", 13,
     ["attributes.model_resources.routes.0.event_kinds.0", "'resource_redy' is not one of"]),
    ("session kind announced", RUNNING, RUNNING + "    announce: [session_stopped]\n", "yaml", 7,
     ["attributes.sessions.announce.0", "'session_stopped' is not one of"]),
    ("concurrency out of bounds", "concurrency: 4", "concurrency: 0", "yaml", 20,
     ["attributes.evaluation.concurrency", "0 is less than the minimum of 1"]),
    # Only loading can tell: the value of a template, the asset graph, two sections together.
    ("template out of bounds", INTERVAL,
     'minimum_interval_seconds: "{{ env.RL_NO_SUCH_VAR or -5 }}"', "defs", 4,
     ["attributes.sessions", "minimum_interval_seconds", "greater than or equal to 1"]),
    ("selection matching no asset", SELECTION, SELECTION.replace("rl_sessions_table", "report"),
     "defs", None,
     ["job 'refresh_table'", "selection 'key:\"together/report\"' matches no asset"]),
    ("kind routed twice", "[session_stopped]", "[checkpoint_registered]", "defs", None,
     ["evaluation: checkpoint_registered is already routed under sessions.routes:"]),
]  # fmt: skip


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return scaffolded_project(tmp_path_factory.mktemp("bad_yaml"), "rl-bad")


def test_the_base_yaml_passes_both_checks(project):
    for what in ("yaml", "defs"):
        done = check(project, BASE, what)
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("old", "new", "what", "line", "says"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_mistake_fails_the_earliest_check_naming_field_and_line(
    project, old, new, what, line, says
):
    assert BASE.count(old) == 1
    text = BASE.replace(old, new)
    if what == "defs":  # the schema cannot tell: `dg check yaml` passes
        done = check(project, text, "yaml")
        assert done.returncode == 0, done.stdout + done.stderr
    done = check(project, text, what)
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    for fragment in says:
        assert fragment in out, out[-4000:]
    if line is not None:
        assert re.search(rf"defs\.yaml:{line} - ", out), out[-4000:]
