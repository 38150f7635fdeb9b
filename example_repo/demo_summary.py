"""What a demo run left in its Dagster instance: the live progress line, the summary it prints
and the checks the demo exits on."""

import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import dagster as dg

from rl_sessions_dagster.core.sweeps import Candidate, fold, standing
from rl_sessions_dagster.partitions import checkpoint_sweeps
from rl_sessions_dagster.testing import RLSimulator
from rl_sessions_dagster.testing.scenarios import DemoSweep

ROOT = Path(__file__).resolve().parents[1]
API_KEY = "sim-demo-key"
EVAL_KEY = dg.AssetKey(["together", "checkpoint_evaluation"])
SYNC_KEY = "together/rl_sessions_table"
#: The demo runs the Component-configured project (defs/together_rl/defs.yaml).
DEFINITIONS = "example_repo.component_defs"
SENSOR = "together_rl_events"  # one routed sensor: evaluations and reports from one poll
GPU_SENSOR = "together_rl_gpu_events"  # model-resource events → gpu_notice (and spend)
GUARD_JOB = "together_rl_idle_guard"
SPEND_KEY = dg.AssetKey(["together", "rl_spend"])
REPORT_KEY = dg.AssetKey(["together", "session_report"])  # the built-in report: (report:)
CHAMPION_KEY = dg.AssetKey(["together", "sweep_champion"])  # the champion: (champion:)
DEPLOY_JOB = "deploy_champion"  # champion_changed → together/champion_deploy, once per new champion
#: Resource events the sweep must cause, per resource role. The sweep holds ``shared`` READY
#: until the sensor has seen it; the other two may stop before a slow tick sees them READY, so
#: their ``resource_ready`` is at most once rather than exactly once.
EXPECTED_GPU_EVENTS = {
    "shared": {"resource_ready", "resource_stopped"},
    "expires": {"resource_stopped"},
    "no-capacity": {"resource_stopped"},
}
OPTIONAL_GPU_EVENTS = {"resource_ready"}
#: Resources the idle guard must stop (left READY with no session).
GUARDED = {"shared", "no-capacity"}


def _say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def _runs(instance: dg.DagsterInstance) -> list[dg.DagsterRun]:
    return list(instance.get_runs())


def _progress(instance: dg.DagsterInstance, sim: RLSimulator) -> str:
    statuses = Counter(s["status"].rsplit("_", 1)[-1] for s in sim.world.sessions())
    gpus = Counter(r["status"].rsplit("_", 1)[-1] for r in sim.world.model_resources())
    runs = Counter(f"{r.job_name}:{r.status.value}" for r in _runs(instance))
    sessions = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
    resources = ", ".join(f"{n} {s}" for s, n in sorted(gpus.items()))
    launched = ", ".join(f"{n} {k}" for k, n in sorted(runs.items())) or "none yet"
    return f"sessions: {sessions} | GPUs: {resources} | runs: {launched}"


_DONE = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE}


def _gpu_runs(runs: list[dg.DagsterRun]) -> dict[str, Counter]:
    """Per model resource: how many gpu_notice runs each event kind got."""
    out: dict[str, Counter] = {}
    for r in runs:
        if r.job_name == "gpu_notice":
            rid = r.tags.get("together/model_resources_id", "")
            out.setdefault(rid, Counter())[r.tags.get("together/event", "?")] += 1
    return out


def _noticed(instance: dg.DagsterInstance, resource_id: str) -> bool:
    """Whether the GPU sensor has requested the run for this resource becoming READY."""
    runs = instance.get_runs(
        dg.RunsFilter(tags={"dagster/run_key": f"resource_ready:{resource_id}"}), limit=1
    )
    return bool(runs)


def _guard_runs(runs: list[dg.DagsterRun]) -> Counter:
    return Counter(
        r.tags.get("together/model_resources_id")
        for r in runs
        if r.job_name == GUARD_JOB and r.status in _DONE
    )


def _expected_done(instance: dg.DagsterInstance, sweep: DemoSweep) -> bool:
    if not sweep.outcome.finished:
        return False
    runs = _runs(instance)
    evals = [r for r in runs if r.job_name == "evaluate_checkpoint" and r.status in _DONE]
    reports = [r for r in runs if r.job_name == "finished_session_report" and r.status in _DONE]
    if len(evals) < len(sweep.outcome.checkpoints) or len(reports) < 3:
        return False
    if any(r.status not in _DONE for r in runs):  # quiet: nothing left in flight
        return False
    if not _champion_caught_up(instance, runs):
        return False
    gpu, guard = _gpu_runs(runs), _guard_runs(runs)
    roles = sweep.outcome.resources
    return all(
        set(gpu.get(rid, ())) >= EXPECTED_GPU_EVENTS[role] for rid, role in roles.items()
    ) and all(guard[rid] for rid, role in roles.items() if role in GUARDED)


def _latest_storage_id(instance: dg.DagsterInstance, key: dg.AssetKey) -> int:
    records = instance.fetch_materializations(key, limit=1).records
    return records[0].storage_id if records else 0


def _champion_caught_up(instance: dg.DagsterInstance, runs: list[dg.DagsterRun]) -> bool:
    """The champion sensor has folded the latest evaluation (its record comes after it) and
    each sweep's champion has had its deploy run."""
    if _latest_storage_id(instance, CHAMPION_KEY) <= _latest_storage_id(instance, EVAL_KEY):
        return False
    deployed = {
        (r.tags.get("together/sweep"), r.tags.get("together/checkpoint_id"))
        for r in runs
        if r.job_name == DEPLOY_JOB and r.status in _DONE
    }
    for sweep in instance.get_dynamic_partitions("together_rl_sweeps"):
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=CHAMPION_KEY, asset_partitions=[sweep]), limit=1
        ).records
        mat = records[0].asset_materialization if records else None
        champ = mat.metadata["champion_checkpoint_id"].value if mat is not None else ""
        if champ and (sweep, champ) not in deployed:
            return False
    return True


def _replayed(instance: dg.DagsterInstance) -> dict[str, list[str]]:
    """Per sweep, the champion after each change, replayed from the evaluations in the order
    they landed: what the champion's history must be."""
    records = instance.fetch_materializations(EVAL_KEY, limit=1000, ascending=True).records
    mats = [m for r in records if (m := r.asset_materialization) is not None and m.partition]
    sweep_of = checkpoint_sweeps(instance, sorted({str(m.partition) for m in mats}))
    standings: dict[str, list[Candidate]] = {}
    out: dict[str, list[str]] = {}
    for m in mats:
        sweep, meta = sweep_of[str(m.partition)], m.metadata
        cand = Candidate(
            str(m.partition),
            str(meta["checkpoint_id"].value),
            float(meta["score"].value),
            int(meta["step"].value),
        )
        standings[sweep] = fold(standings.get(sweep, []), {cand.partition: cand})
        champ = standing(standings[sweep]).champion
        history = out.setdefault(sweep, [])
        if champ is not None and (not history or history[-1] != champ.checkpoint_id):
            history.append(champ.checkpoint_id)
    return out


def _champions(instance: dg.DagsterInstance, runs: list[dg.DagsterRun]) -> dict:
    """Per sweep: the champion now, each change in order, and the deploy runs it caused."""
    out: dict = {}
    records = instance.fetch_materializations(CHAMPION_KEY, limit=1000, ascending=True).records
    for record in records:
        mat = record.asset_materialization
        if mat is None or not mat.partition:
            continue
        meta = {k: v.value for k, v in mat.metadata.items()}
        sweep = out.setdefault(mat.partition, {"history": []})
        sweep.update(
            champion=meta["champion_checkpoint_id"],
            score=meta.get("score"),
            model=meta.get("model_name"),
            margin=meta.get("margin"),
            runner_up=meta.get("runner_up_checkpoint_id"),
            candidates=meta["candidates"],
            changes=meta["changes"],
            standings=meta["candidate_list"],
        )
        if meta["changed"]:
            sweep["history"].append(
                {
                    "checkpoint": meta["champion_checkpoint_id"],
                    "score": meta["score"],
                    "step": meta.get("step"),
                }
            )
    replayed = _replayed(instance)
    for name, champ in out.items():
        champ["replayed"] = replayed.get(name, [])
        deploys = [
            r for r in runs if r.job_name == DEPLOY_JOB and r.tags.get("together/sweep") == name
        ]
        champ["deploys"] = sorted(
            (
                {
                    "change": int(r.tags["together/change"]),
                    "checkpoint": r.tags["together/checkpoint_id"],
                    "status": r.status.value,
                }
                for r in deploys
            ),
            key=lambda d: d["change"],
        )
    return out


def _report_statuses(instance: dg.DagsterInstance) -> dict[str, str]:
    """Session id → the final status its built-in report recorded."""
    out = {}
    for record in instance.fetch_materializations(REPORT_KEY, limit=1000).records:
        mat = record.asset_materialization
        if mat is not None:
            out.setdefault(str(mat.metadata["session_id"].value), str(mat.metadata["status"].value))
    return out


def _run_sync(home: Path, env: dict[str, str]) -> int:
    """One run of the sync table and the spend asset through the CLI, in the same instance."""
    cmd = [
        str(Path(sys.executable).with_name("dagster")),
        "asset",
        "materialize",
        "-m",
        DEFINITIONS,
        "--select",
        f"{SYNC_KEY},{SPEND_KEY.to_user_string()}",
    ]
    full_env = {**os.environ, **env, "DAGSTER_HOME": str(home)}
    done = subprocess.run(
        cmd,
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
        start_new_session=True,
    )
    if done.returncode != 0:
        _say("sync run failed:\n" + done.stdout[-2000:] + done.stderr[-2000:])
    return done.returncode


def summarize(instance: dg.DagsterInstance, sim: RLSimulator, sweep: DemoSweep, home: Path) -> dict:
    """Per checkpoint: step and score; per session: final status and its report run."""
    scores: dict[str, list[float]] = {}
    partitions: dict[str, str] = {}
    for record in instance.fetch_materializations(EVAL_KEY, limit=1000).records:
        mat = record.asset_materialization
        if mat is not None and mat.partition:
            ckpt = str(mat.metadata["checkpoint_id"].value)
            partitions[ckpt] = mat.partition
            scores.setdefault(ckpt, []).append(float(mat.metadata["score"].value))
    runs = _runs(instance)
    reports = {
        r.tags.get("together/session_id"): r
        for r in runs
        if r.job_name == "finished_session_report"
    }
    checkpoints = []
    for ckpt, (sid, step) in sweep.outcome.checkpoints.items():
        checkpoints.append(
            {
                "checkpoint": ckpt,
                "partition": partitions.get(ckpt),
                "session": sid,
                "step": step,
                "scores": scores.get(ckpt, []),
            }
        )
    sessions = []
    reports_seen = _report_statuses(instance)
    for sid, role in sweep.outcome.sessions.items():
        wire = sim.world.session(sid)
        run = reports.get(sid)
        sessions.append(
            {
                "session": sid,
                "role": role,
                "name": wire.get("display_name"),
                "status": wire["status"].rsplit("_", 1)[-1],
                "error": (wire.get("error") or {}).get("code"),
                "report_run": run.status.value if run else None,
                "report_status": reports_seen.get(sid),
                "report_runs": sum(
                    r.tags.get("together/session_id") == sid
                    for r in runs
                    if r.job_name == "finished_session_report"
                ),
            }
        )
    bill = sim.world.billing()
    gpu, guard = _gpu_runs(runs), _guard_runs(runs)
    actions = {
        r.tags.get("together/model_resources_id"): _guard_action(instance, r)
        for r in runs
        if r.job_name == GUARD_JOB and r.status in _DONE
    }
    resources = [
        {
            "resource": rid,
            "role": role,
            "status": bill[rid]["status"].rsplit("_", 1)[-1],
            "billing": bill[rid]["billing"],
            "events": dict(gpu.get(rid, {})),
            "guard_runs": guard[rid],
            "guard_action": actions.get(rid),
            "billed_seconds": round(bill[rid]["billed_seconds"], 3),
            "price_per_hour": bill[rid]["price_per_hour"],
        }
        for rid, role in sweep.outcome.resources.items()
    ]
    db = home / "together_rl_sync.sqlite"
    table = {}
    if db.exists():
        with sqlite3.connect(db) as conn:
            for name in ("rl_sessions", "rl_checkpoints"):
                table[name] = conn.execute(f"SELECT COUNT(*) FROM {name}").fetchone()[0]
    return {
        "checkpoints": checkpoints,
        "sessions": sessions,
        "sync_rows": table,
        "resources": resources,
        "spend": _spend(instance),
        "champions": _champions(instance, runs),
        "runs": Counter(f"{r.job_name}:{r.status.value}" for r in runs),
    }


def _guard_action(instance: dg.DagsterInstance, run: dg.DagsterRun) -> str | None:
    """What the guard's run did (its output's ``action``: stopped, would_stop, skipped_busy...)."""
    for entry in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_OUTPUT):
        event = entry.dagster_event
        data = event.step_output_data if event is not None else None
        if data is not None and "action" in data.metadata:
            return str(data.metadata["action"].value)
    return None


def _spend(instance: dg.DagsterInstance) -> dict:
    """The latest spend materialization: totals and its two tables, as the UI shows them."""
    records = instance.fetch_materializations(SPEND_KEY, limit=1).records
    mat = records[0].asset_materialization if records else None
    if mat is None:
        return {}
    meta = mat.metadata

    def table(name: str) -> list[dict]:
        value = meta.get(name)
        return (
            [dict(r.data) for r in value.records]
            if isinstance(value, dg.TableMetadataValue)
            else []
        )

    return {
        "total_cost": meta["total_cost"].value,
        "idle_cost": meta["idle_cost"].value,
        "unpriced_resources": meta["unpriced_resources"].value,
        "resources": table("resources"),
        "sweeps": table("sweeps"),
        "materializations": len(instance.fetch_materializations(SPEND_KEY, limit=1000).records),
    }
