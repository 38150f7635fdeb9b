"""Freshness policies where Dagster's asset health and alerts read them: the sessions table and
spend get a window from their schedule; the checkpoint asset one only when asked (it is
asset-level: idle training would otherwise read as stale)."""

from datetime import timedelta

import dagster as dg
import pytest

from rl_sessions_dagster.components.translation import cron_gap, schedule_freshness
from tests.components.support import defs_for

TABLE = dg.AssetKey(["together", "rl_sessions_table"])
SPEND = dg.AssetKey(["together", "rl_spend"])
CHECKPOINT = dg.AssetKey(["together", "rl_inference_checkpoint"])


def policies(yaml: str) -> dict[dg.AssetKey, object]:
    return {s.key: s.freshness_policy for s in defs_for(yaml).resolve_all_asset_specs()}


@pytest.mark.parametrize(
    ("cron", "gap"),
    [
        ("*/15 * * * *", timedelta(minutes=15)),
        ("0 * * * *", timedelta(hours=1)),
        ("0,30 9-17 * * *", timedelta(hours=15, minutes=30)),
        ("0 9 * * 1-5", timedelta(days=3)),
        ("0 0 * * 0", timedelta(days=7)),
        ("0 0 * * 7", timedelta(days=7)),
        ("0 0 1 * *", None),
        ("@daily", None),
        ("0 0 * * MON", None),
    ],
)
def test_the_longest_gap_between_ticks(cron, gap):
    assert cron_gap(cron) == gap


def test_the_sessions_table_and_spend_warn_after_one_missed_run_and_fail_after_two():
    got = policies('sync: {cron_schedule: "*/15 * * * *"}\nspend: {cron_schedule: "0 * * * *"}\n')
    assert got[TABLE] == dg.FreshnessPolicy.time_window(
        fail_window=timedelta(minutes=37.5), warn_window=timedelta(minutes=22.5)
    )
    assert got[SPEND] == schedule_freshness("0 * * * *")
    assert got[CHECKPOINT] is None


def test_a_schedule_without_a_derivable_window_declares_none():
    assert policies('sync: {cron_schedule: "0 0 1 * *"}\n')[TABLE] is None


def test_the_checkpoint_asset_goes_stale_after_the_minutes_asked():
    got = policies("checkpoint_asset: {stale_after_minutes: 120}\n")
    assert got[CHECKPOINT] == dg.FreshnessPolicy.time_window(fail_window=timedelta(hours=2))


GRAPH = """\
spend: {}
evaluation:
  items: [{a: 1, b: 2, expected: 3}]
  prompt_template: "What is {a} + {b}?"
  graders: [{type: numeric}]
report: {}
champion: {metric: numeric}
"""


def test_edges_for_what_each_asset_reads():
    got = {s.key.to_user_string(): s for s in defs_for(GRAPH).resolve_all_asset_specs()}
    deps = {k: {d.asset_key.to_user_string() for d in s.deps} for k, s in got.items()}
    assert deps["together/session_report"] == {
        "together/checkpoint_evaluation",
        "together/rl_spend",
    }
    assert deps["together/sweep_champion"] == {"together/checkpoint_evaluation"}
    assert deps["together/checkpoint_evaluation"] == {"together/rl_inference_checkpoint"}


def test_the_champion_sensor_targets_the_champion_it_writes():
    defs = defs_for(GRAPH)
    (sensor,) = [s for s in defs.sensors or [] if s.name == "together_rl_champion"]
    assert sensor.asset_selection is not None
    keys = sensor.asset_selection.resolve(defs.resolve_asset_graph())
    assert keys == {dg.AssetKey(["together", "sweep_champion"])}
