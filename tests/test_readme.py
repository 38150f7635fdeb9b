"""The README's code blocks are real code: the quick start loads, the hook example runs."""

import re
from pathlib import Path

import dagster as dg

from rl_sessions_dagster import build_session_status_sensor
from rl_sessions_dagster.testing import RLSimulator

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)


def test_readme_top_has_the_two_commands():
    head = README.split("## What the demo shows")[0]
    assert "bash scripts/demo.sh" in head and "bash scripts/test.sh" in head
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text()
    assert "bash scripts/test.sh" in ci


def test_quick_start_definitions_load_without_calling_the_api(monkeypatch):
    (quick_start,) = [b for b in BLOCKS if "defs = dg.Definitions(" in b]
    with RLSimulator(api_key="sim-test-key-0123456789abcdef") as sim:
        monkeypatch.setenv("TOGETHER_BASE_URL", sim.base_url)
        namespace: dict = {}
        exec(compile(quick_start, "README-quick-start", "exec"), namespace)
        dg.Definitions.validate_loadable(namespace["defs"])
        assert sim.requests.count() == 0


def test_run_request_hook_example_runs():
    (hook,) = [b for b in BLOCKS if "def shape(event, request)" in b]
    namespace: dict = {"build_session_status_sensor": build_session_status_sensor}

    @dg.op
    def report() -> None:
        pass

    @dg.job
    def report_job() -> None:
        report()

    namespace["report_job"] = report_job
    exec(compile(hook, "README-hook", "exec"), namespace)
    from rl_sessions_dagster.api.models import TrainingSession
    from rl_sessions_dagster.core import EventKind, SessionEvent

    event = SessionEvent(EventKind.SESSION_STOPPED, TrainingSession(id="s", display_name="x"))
    shaped = namespace["shape"](event, dg.RunRequest(run_key="k", tags={"a": "b"}))
    assert shaped.tags["team"] == "post-training" and shaped.run_config
    debug = SessionEvent(EventKind.SESSION_STOPPED, TrainingSession(id="s", display_name="debug-1"))
    assert namespace["shape"](debug, dg.RunRequest(run_key="k")) is None
