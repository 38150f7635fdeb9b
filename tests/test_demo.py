"""The README's demo command, end to end: simulator, real dagster-daemon, sweep, sync."""

import itertools
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import dagster as dg
import pytest

from rl_sessions_dagster.testing.daemon import group_alive, prepare_dagster_home

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_demo_runs_the_whole_story(tmp_path):
    home = tmp_path / "home"
    out = tmp_path / "summary.json"
    # The demo stops waiting as soon as everything expected happened; --timeout is only its
    # ceiling, sized for a machine several times slower than an idle 2-core one.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "example_repo.demo",
            "--home",
            str(home),
            "--pace",
            "2",
            "--timeout",
            "900",
            "--json",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1100,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    summary = json.loads(out.read_text())
    assert summary["problems"] == []
    assert not group_alive(summary["daemon_pgid"])
    roles = {s["role"]: s for s in summary["sessions"]}
    assert roles["trains"]["status"] == "STOPPED"
    assert roles["no-capacity"]["status"] == "ERROR"
    assert roles["no-capacity"]["error"] == "TRAINING_SESSION_ERROR_CODE_RESOURCE_AT_CAPACITY"
    assert roles["goes-idle"]["status"] == "EXPIRED"
    assert len(summary["checkpoints"]) >= 5

    # Assert on the instance itself, not only on what the demo says about it.
    instance = dg.DagsterInstance.from_config(str(home))
    evals = instance.fetch_materializations(
        dg.AssetKey(["together", "checkpoint_evaluation"]), limit=100
    ).records
    per_partition = Counter(r.asset_materialization.partition for r in evals)
    assert set(per_partition) == {c["partition"] for c in summary["checkpoints"]}
    for c in summary["checkpoints"]:  # readable keys: <session name>/<step>/<checkpoint id>
        assert c["partition"].endswith(f"/{c['step']:06d}/{c['checkpoint'][:8]}")
    assert set(per_partition.values()) == {1}
    reports = [r for r in instance.get_runs() if r.job_name == "finished_session_report"]
    assert Counter(r.tags["together/session_id"] for r in reports) == Counter(
        {s["session"]: 1 for s in summary["sessions"]}
    )
    assert {s["role"]: s["report_status"] for s in summary["sessions"]} == {
        "trains": "STOPPED",
        "no-capacity": "ERROR",
        "goes-idle": "EXPIRED",
    }  # the built-in report (report:) read each session's final status

    # The champion (champion:): both sessions with checkpoints are in W&B group lr-sweep. It is
    # the best checkpoint, and it changed each time a better one landed: its history is the
    # replay of the evaluations in landing order (the simulator's scores rise with step: unless
    # the best checkpoint's evaluation landed first, a better one displaced the first champion).
    assert instance.get_dynamic_partitions("together_rl_sweeps") == ["lr-sweep"]
    champ = summary["champions"]["lr-sweep"]
    scores = {c["checkpoint"]: c["scores"][0] for c in summary["checkpoints"]}
    assert champ["candidates"] == len(scores)
    assert champ["score"] == max(scores.values()) == scores[champ["champion"]]
    history = champ["history"]
    assert [h["checkpoint"] for h in history] == champ["replayed"]
    first_landed = champ["replayed"][0]
    if scores[first_landed] < max(scores.values()):
        assert len(history) >= 2
    assert all(b["score"] > a["score"] for a, b in itertools.pairwise(history))
    deploys = [r for r in instance.get_runs() if r.job_name == "deploy_champion"]
    assert deploys and len({r.tags["dagster/run_key"] for r in deploys}) == len(deploys)
    assert max(deploys, key=lambda r: int(r.tags["together/change"])).tags[
        "together/checkpoint_id"] == champ["champion"]  # fmt: skip
    assert summary["sync_rows"]["rl_sessions"] == 3
    assert summary["sync_rows"]["rl_checkpoints"] >= len(summary["checkpoints"])
    assert "sim-demo-key" not in done.stdout + done.stderr

    # The GPUs: one gpu_notice run per model-resource event, the idle guard stopped the two
    # resources left READY with no session (once each), nothing bills at the end.
    resources = {r["role"]: r["resource"] for r in summary["resources"]}
    runs = instance.get_runs()
    notices = Counter((r.tags["together/model_resources_id"], r.tags["together/event"])
                      for r in runs if r.job_name == "gpu_notice")  # fmt: skip
    assert set(notices.values()) == {1}
    assert {(rid, "resource_stopped") for rid in resources.values()} <= set(notices)
    assert (resources["shared"], "resource_ready") in notices  # the sweep waits for this one
    guard = Counter(r.tags["together/model_resources_id"] for r in runs
                    if r.job_name == "together_rl_idle_guard")  # fmt: skip
    assert guard == Counter({resources["shared"]: 1, resources["no-capacity"]: 1})
    assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
    assert {r["status"] for r in summary["resources"]} == {"STOPPED"}

    # Spend: the asset's table against the simulator's own bill (price x READY seconds).
    spend = {row["resource_id"]: row for row in summary["spend"]["resources"]}
    assert set(spend) == set(resources.values())
    for r in summary["resources"]:
        billed = r["billed_seconds"] / 3600 * r["price_per_hour"]
        assert 0 < spend[r["resource"]]["cost"] <= billed * 1.01 + 1e-4, (r, spend)
    assert summary["spend"]["total_cost"] == pytest.approx(
        sum(row["cost"] for row in spend.values()), abs=1e-3
    )


def test_demo_home_is_recreated_clean(tmp_path):
    home = tmp_path / "home"
    prepare_dagster_home(home)
    (home / "leftover.db").write_text("stale")
    prepare_dagster_home(home)
    names = {p.name for p in home.iterdir()}
    assert "leftover.db" not in names and "dagster.yaml" in names
    assert dg.DagsterInstance.from_config(str(home)).get_runs() == []
