"""The one-command demo: a simulated sweep, the real dagster-daemon, and a summary.

``python -m example_repo.demo`` (or ``bash scripts/demo.sh``) starts the local simulator of the
Together RL API, a fresh Dagster instance under ``.demo/dagster_home`` and ``dagster-daemon``
loading ``example_repo.component_defs`` (the YAML Component); then a scripted sweep trains.
Its one routed sensor launches one
evaluation run per registered checkpoint and one built-in report run per finished session; the
champion sensor names each sweep's best checkpoint as evaluations land and runs
``deploy_champion`` once per tick that ends with a new champion; the sync job fills the sessions table. On the GPU side, a model resource is provisioned (PENDING → READY),
every model-resource event runs ``gpu_notice`` once (which also refreshes the spend asset), and
the idle guard, acting, stops the resources left READY with no session. It prints live
progress and a summary (with the spend table), stops every process it started, and exits 0
when everything expected happened (1 otherwise). No API key or network.
"""

import argparse
import json
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
from rl_sessions_dagster.testing.daemon import (
    dagster_daemon,
    group_alive,
    prepare_dagster_home,
    sensor_ticks,
)
from rl_sessions_dagster.testing.scenarios import DemoSweep, wait_until

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
EXPECTED_GPU_EVENTS = {"shared": {"resource_ready", "resource_stopped"},
                       "expires": {"resource_stopped"},
                       "no-capacity": {"resource_stopped"}}
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
    runs = instance.get_runs(dg.RunsFilter(tags={"dagster/run_key":
                                                 f"resource_ready:{resource_id}"}), limit=1)
    return bool(runs)


def _guard_runs(runs: list[dg.DagsterRun]) -> Counter:
    return Counter(r.tags.get("together/model_resources_id") for r in runs
                   if r.job_name == GUARD_JOB and r.status in _DONE)


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
    return all(set(gpu.get(rid, ())) >= EXPECTED_GPU_EVENTS[role] for rid, role in roles.items()
               ) and all(guard[rid] for rid, role in roles.items() if role in GUARDED)


def _latest_storage_id(instance: dg.DagsterInstance, key: dg.AssetKey) -> int:
    records = instance.fetch_materializations(key, limit=1).records
    return records[0].storage_id if records else 0


def _champion_caught_up(instance: dg.DagsterInstance, runs: list[dg.DagsterRun]) -> bool:
    """The champion sensor has folded the latest evaluation (its record comes after it) and
    each sweep's champion has had its deploy run."""
    if _latest_storage_id(instance, CHAMPION_KEY) <= _latest_storage_id(instance, EVAL_KEY):
        return False
    deployed = {(r.tags.get("together/sweep"), r.tags.get("together/checkpoint_id"))
                for r in runs if r.job_name == DEPLOY_JOB and r.status in _DONE}
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
        cand = Candidate(str(m.partition), str(meta["checkpoint_id"].value),
                         float(meta["score"].value), int(meta["step"].value))
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
        sweep.update(champion=meta["champion_checkpoint_id"], score=meta.get("score"),
                     model=meta.get("model_name"), margin=meta.get("margin"),
                     runner_up=meta.get("runner_up_checkpoint_id"),
                     candidates=meta["candidates"], changes=meta["changes"],
                     standings=meta["candidate_list"])
        if meta["changed"]:
            sweep["history"].append({"checkpoint": meta["champion_checkpoint_id"],
                                     "score": meta["score"], "step": meta.get("step")})
    replayed = _replayed(instance)
    for name, champ in out.items():
        champ["replayed"] = replayed.get(name, [])
        deploys = [r for r in runs if r.job_name == DEPLOY_JOB
                   and r.tags.get("together/sweep") == name]
        champ["deploys"] = sorted(({"change": int(r.tags["together/change"]),
                                    "checkpoint": r.tags["together/checkpoint_id"],
                                    "status": r.status.value} for r in deploys),
                                  key=lambda d: d["change"])
    return out


def _report_statuses(instance: dg.DagsterInstance) -> dict[str, str]:
    """Session id → the final status its built-in report recorded."""
    out = {}
    for record in instance.fetch_materializations(REPORT_KEY, limit=1000).records:
        mat = record.asset_materialization
        if mat is not None:
            out.setdefault(str(mat.metadata["session_id"].value),
                           str(mat.metadata["status"].value))
    return out


def _run_sync(home: Path, env: dict[str, str]) -> int:
    """One run of the sync table and the spend asset through the CLI, in the same instance."""
    cmd = [str(Path(sys.executable).with_name("dagster")), "asset", "materialize",
           "-m", DEFINITIONS, "--select", f"{SYNC_KEY},{SPEND_KEY.to_user_string()}"]
    full_env = {**os.environ, **env, "DAGSTER_HOME": str(home)}
    done = subprocess.run(cmd, cwd=ROOT, env=full_env, capture_output=True, text=True,
                          timeout=300, start_new_session=True)
    if done.returncode != 0:
        _say("sync run failed:\n" + done.stdout[-2000:] + done.stderr[-2000:])
    return done.returncode


def summarize(instance: dg.DagsterInstance, sim: RLSimulator, sweep: DemoSweep,
              home: Path) -> dict:
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
    reports = {r.tags.get("together/session_id"): r for r in runs
               if r.job_name == "finished_session_report"}
    checkpoints = []
    for ckpt, (sid, step) in sweep.outcome.checkpoints.items():
        checkpoints.append({"checkpoint": ckpt, "partition": partitions.get(ckpt),
                            "session": sid, "step": step, "scores": scores.get(ckpt, [])})
    sessions = []
    reports_seen = _report_statuses(instance)
    for sid, role in sweep.outcome.sessions.items():
        wire = sim.world.session(sid)
        run = reports.get(sid)
        sessions.append({
            "session": sid, "role": role, "name": wire.get("display_name"),
            "status": wire["status"].rsplit("_", 1)[-1],
            "error": (wire.get("error") or {}).get("code"),
            "report_run": run.status.value if run else None,
            "report_status": reports_seen.get(sid),
            "report_runs": sum(r.tags.get("together/session_id") == sid for r in runs
                               if r.job_name == "finished_session_report"),
        })
    bill = sim.world.billing()
    gpu, guard = _gpu_runs(runs), _guard_runs(runs)
    actions = {r.tags.get("together/model_resources_id"): _guard_action(instance, r)
               for r in runs if r.job_name == GUARD_JOB and r.status in _DONE}
    resources = [{
        "resource": rid, "role": role,
        "status": bill[rid]["status"].rsplit("_", 1)[-1], "billing": bill[rid]["billing"],
        "events": dict(gpu.get(rid, {})), "guard_runs": guard[rid],
        "guard_action": actions.get(rid),
        "billed_seconds": round(bill[rid]["billed_seconds"], 3),
        "price_per_hour": bill[rid]["price_per_hour"],
    } for rid, role in sweep.outcome.resources.items()]
    db = home / "together_rl_sync.sqlite"
    table = {}
    if db.exists():
        with sqlite3.connect(db) as conn:
            for name in ("rl_sessions", "rl_checkpoints"):
                table[name] = conn.execute(f"SELECT COUNT(*) FROM {name}").fetchone()[0]
    return {"checkpoints": checkpoints, "sessions": sessions, "sync_rows": table,
            "resources": resources, "spend": _spend(instance),
            "champions": _champions(instance, runs),
            "runs": Counter(f"{r.job_name}:{r.status.value}" for r in runs)}


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
        return [dict(r.data) for r in value.records] if isinstance(
            value, dg.TableMetadataValue) else []

    return {"total_cost": meta["total_cost"].value, "idle_cost": meta["idle_cost"].value,
            "unpriced_resources": meta["unpriced_resources"].value,
            "resources": table("resources"), "sweeps": table("sweeps"),
            "materializations": len(instance.fetch_materializations(SPEND_KEY, limit=1000).records)}


def print_summary(summary: dict) -> None:
    print("\nCheckpoints (one evaluation run each; partition key = <session>/<step>/<checkpoint>)")
    print(f"  {'partition':<30} {'session':<10} {'step':>5} {'score':>6}  runs")
    for c in sorted(summary["checkpoints"], key=lambda c: (c["session"], c["step"])):
        score = f"{c['scores'][0]:.2f}" if c["scores"] else "-"
        label = c["partition"] or c["checkpoint"]
        print(f"  {label:<30} {c['session'][:8]:<10} {c['step']:>5} {score:>6}  "
              f"{len(c['scores'])}")
    print("\nSessions (one report run each; the built-in report's status beside it)")
    print(f"  {'session':<10} {'name':<15} {'final status':<13} {'error':<44} report run")
    for s in summary["sessions"]:
        print(f"  {s['session'][:8]:<10} {s['name'] or '':<15} {s['status']:<13} "
              f"{s['error'] or '-':<44} {s['report_run'] or 'none'} "
              f"({s['report_status'] or 'no report'})")
    print("\nChampions (together/sweep_champion, one partition per sweep; a sensor tick that "
          f"ends with a new champion runs {DEPLOY_JOB} once)")
    for sweep, c in summary["champions"].items():
        margin = f"{c['margin']:.2f}" if c["margin"] is not None else "-"
        print(f"  sweep {sweep}: {c['champion'][:8]} score {c['score']:.2f}, margin {margin} "
              f"over {(c['runner_up'] or '-')[:8]}, {c['candidates']} candidates, "
              f"model {c['model']}")
        for h in c["history"]:
            print(f"    became champion: {h['checkpoint'][:8]} (step {h['step']}, score "
                  f"{h['score']:.2f})")
        for d in c["deploys"]:
            print(f"    {DEPLOY_JOB} (change {d['change']}): {d['checkpoint'][:8]} {d['status']}")
    rows = summary["sync_rows"]
    print(f"\nSync table: {rows.get('rl_sessions', 0)} sessions, "
          f"{rows.get('rl_checkpoints', 0)} checkpoints")
    print("\nGPUs (one gpu_notice run per model-resource event; the idle guard acts)")
    print(f"  {'resource':<10} {'role':<12} {'events (runs)':<34} {'idle guard':<12} now")
    for r in summary["resources"]:
        events = ", ".join(f"{k.removeprefix('resource_')} ({n})"
                           for k, n in sorted(r["events"].items()))
        print(f"  {r['resource'][:8]:<10} {r['role']:<12} {events:<34} "
              f"{r['guard_action'] or '-':<12} {r['status']}")
    spend = summary["spend"]
    if not spend:
        print("\nSpend: no materialization of together/rl_spend")
        return
    truth = {r["resource"]: r for r in summary["resources"]}
    print("\nSpend (together/rl_spend: price_per_hour x READY time; simulator's bill beside it)")
    print(f"  {'resource':<10} {'status':<8} {'billed h':>9} {'$/hour':>7} {'estimate $':>11} "
          f"{'idle $':>8} {'billed $':>9}")
    for row in spend["resources"]:
        real = truth.get(row["resource_id"])
        billed = (real["billed_seconds"] / 3600 * real["price_per_hour"]) if real else None
        print(f"  {row['resource_id'][:8]:<10} {row['status']:<8} {row['billed_hours']:>9.4f} "
              f"{row['price_per_hour'] or 0:>7.2f} {row['cost']:>11.4f} {row['idle_cost']:>8.4f} "
              f"{billed if billed is not None else float('nan'):>9.4f}")
    for sweep in spend["sweeps"]:
        print(f"  sweep {sweep['sweep']}: {sweep['sessions']} sessions, "
              f"{sweep['billed_hours']:.4f} h, ${sweep['cost']:.4f}")
    print(f"  total ${spend['total_cost']:.4f} (idle ${spend['idle_cost']:.4f}); "
          f"{spend['materializations']} spend materializations")


def check(summary: dict) -> list[str]:
    """What must hold for the demo to pass (also asserted by tests/test_demo.py)."""
    problems = []
    for c in summary["checkpoints"]:
        if len(c["scores"]) != 1:
            problems.append(f"checkpoint {c['checkpoint']} evaluated {len(c['scores'])} times")
    for s in summary["sessions"]:
        if s["report_runs"] != 1 or s["report_run"] != "SUCCESS":
            problems.append(f"session {s['session']} has {s['report_runs']} report runs "
                            f"({s['report_run']})")
        if s["report_status"] != s["status"]:
            problems.append(f"session {s['session']} report says {s['report_status']}")
    problems += _champion_problems(summary)
    if summary["sync_rows"].get("rl_sessions", 0) < len(summary["sessions"]):
        problems.append(f"sync table has {summary['sync_rows']} rows")
    for r in summary["resources"]:
        wanted, events = EXPECTED_GPU_EVENTS[r["role"]], r["events"]
        if ({k: events.get(k) for k in wanted} != dict.fromkeys(wanted, 1)
                or any(n != 1 for n in events.values())
                or set(events) - wanted - OPTIONAL_GPU_EVENTS):
            problems.append(f"resource {r['resource']} ({r['role']}) events {events}")
        guarded = r["role"] in GUARDED
        if guarded and (r["guard_runs"] != 1 or r["guard_action"] != "stopped"):
            problems.append(f"resource {r['resource']} guard runs {r['guard_runs']} "
                            f"({r['guard_action']})")
        if not guarded and r["guard_runs"]:
            problems.append(f"the guard ran for busy resource {r['resource']}")
        if r["billing"]:
            problems.append(f"resource {r['resource']} is still billing")
    spend = summary["spend"]
    if not spend or spend["unpriced_resources"] or not spend["total_cost"] > 0:
        problems.append(f"spend not computed: {spend}")
    return problems


def _champion_problems(summary: dict) -> list[str]:
    """Each sweep's champion is its best checkpoint (ties: earliest step, then id), it changed
    each time a better checkpoint landed (the history equals the replay of the evaluations in
    landing order), and each deploy run ran once, the last one for the champion."""
    problems = []
    scored = [c for c in summary["checkpoints"] if c["scores"]]
    if scored and not summary["champions"]:
        problems.append("no champion recorded")
    for sweep, c in summary["champions"].items():
        best = min(c["standings"], key=lambda s: (-s["value"], s["step"], s["checkpoint_id"]))
        if c["champion"] != best["checkpoint_id"]:
            problems.append(f"sweep {sweep}: champion {c['champion']}, best is {best}")
        history = [h["checkpoint"] for h in c["history"]]
        if history != c["replayed"]:
            problems.append(f"sweep {sweep}: champions {history}, landing order gives "
                            f"{c['replayed']}")
        deploys = c["deploys"]
        if (not deploys or deploys[-1]["checkpoint"] != c["champion"]
                or any(d["status"] != "SUCCESS" for d in deploys)
                or len({d["change"] for d in deploys}) != len(deploys)):
            problems.append(f"sweep {sweep}: deploy runs {deploys}")
    evaluated = {c["checkpoint"] for c in scored}
    counted = sum(c["candidates"] for c in summary["champions"].values())
    if counted != len(evaluated):
        problems.append(f"champions count {counted} candidates, {len(evaluated)} evaluated")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, default=ROOT / ".demo" / "dagster_home",
                        help="DAGSTER_HOME to create (wiped first, so reruns start clean)")
    parser.add_argument("--pace", type=float, default=4.0,
                        help="seconds between two moves of the sweep")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="give up after this (it stops as soon as everything happened)")
    parser.add_argument("--idle-seconds", type=float, default=10.0,
                        help="the idle guard stops a READY resource with no session this long")
    parser.add_argument("--port", type=int, default=0, help="simulator port (0: any free)")
    parser.add_argument("--json", type=Path, help="also write the summary here")
    args = parser.parse_args(argv)
    started = time.monotonic()
    home = prepare_dagster_home(args.home.resolve(), clean=True)
    with RLSimulator(api_key=API_KEY, port=args.port, seed=42) as sim:
        _say(f"simulator of the Together RL API on {sim.base_url}; DAGSTER_HOME={home}")
        env = {"TOGETHER_API_KEY": API_KEY, "TOGETHER_BASE_URL": sim.base_url,
               "RL_SENSOR_INTERVAL_SECONDS": "2", "RL_IDLE_SECONDS": f"{args.idle_seconds:g}"}
        with dagster_daemon(home, DEFINITIONS, working_directory=ROOT,
                            env=env) as daemon:
            _say(f"dagster-daemon started (pid {daemon.pid}); waiting for the sensors' first tick")
            instance = dg.DagsterInstance.from_config(str(home))
            first_tick = max(90.0, args.timeout / 2)  # a loaded machine starts the daemon slowly
            ready = wait_until(lambda: sensor_ticks(instance, SENSOR)
                               and sensor_ticks(instance, GPU_SENSOR), first_tick)
            if not ready:
                _say(f"the sensor did not tick within {first_tick:g} s; see "
                     + str(home / "daemon.log"))
                return 1
            sweep = DemoSweep(sim.world, pace=args.pace, log=lambda m: _say("sweep: " + m),
                              noticed=lambda rid: _noticed(instance, rid))
            sweep.start()
            last = ""
            while time.monotonic() - started < args.timeout - 25:
                line = _progress(instance, sim)
                if line != last:
                    _say(line)
                    last = line
                if _expected_done(instance, sweep):
                    break
                time.sleep(1)
            sweep.stop()
            _say("materializing the sync table and the spend asset once more")
            _run_sync(home, env)
            # the sync schedule runs too: let a run it started meanwhile end before the daemon does
            wait_until(lambda: all(r.status in _DONE for r in _runs(instance)), 120)
            summary = summarize(instance, sim, sweep, home)
            pgid = daemon.pid
        left = group_alive(pgid)
    print_summary(summary)
    problems = check(summary)
    if left:
        problems.append("dagster-daemon process group still alive")
    summary["daemon_pgid"] = pgid
    summary["problems"] = problems
    summary["seconds"] = round(time.monotonic() - started, 1)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2, default=str))
    if problems:
        _say("demo FAILED: " + "; ".join(problems))
        return 1
    _say(f"demo OK in {summary['seconds']} s: every checkpoint evaluated once, every finished "
         "session reported once, each sweep's champion named as better checkpoints landed, "
         "every GPU event noticed once, idle GPUs stopped, no GPU "
         "billing, spend and sync tables filled; all processes stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
