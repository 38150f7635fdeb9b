"""The demo's verdict: the summary printed for a person and the checks the demo exits on."""

from example_repo.demo_summary import DEPLOY_JOB, EXPECTED_GPU_EVENTS, GUARDED, OPTIONAL_GPU_EVENTS


def print_summary(summary: dict) -> None:
    print("\nCheckpoints (one evaluation run each; partition key = <session>/<step>/<checkpoint>)")
    print(f"  {'partition':<30} {'session':<10} {'step':>5} {'score':>6}  runs")
    for c in sorted(summary["checkpoints"], key=lambda c: (c["session"], c["step"])):
        score = f"{c['scores'][0]:.2f}" if c["scores"] else "-"
        label = c["partition"] or c["checkpoint"]
        print(f"  {label:<30} {c['session'][:8]:<10} {c['step']:>5} {score:>6}  {len(c['scores'])}")
    print("\nSessions (one report run each; the built-in report's status beside it)")
    print(f"  {'session':<10} {'name':<15} {'final status':<13} {'error':<44} report run")
    for s in summary["sessions"]:
        print(
            f"  {s['session'][:8]:<10} {s['name'] or '':<15} {s['status']:<13} "
            f"{s['error'] or '-':<44} {s['report_run'] or 'none'} "
            f"({s['report_status'] or 'no report'})"
        )
    print(
        "\nChampions (together/sweep_champion, one partition per sweep; a sensor tick that "
        f"ends with a new champion runs {DEPLOY_JOB} once)"
    )
    for sweep, c in summary["champions"].items():
        margin = f"{c['margin']:.2f}" if c["margin"] is not None else "-"
        print(
            f"  sweep {sweep}: {c['champion'][:8]} score {c['score']:.2f}, margin {margin} "
            f"over {(c['runner_up'] or '-')[:8]}, {c['candidates']} candidates, "
            f"model {c['model']}"
        )
        for h in c["history"]:
            print(
                f"    became champion: {h['checkpoint'][:8]} (step {h['step']}, score "
                f"{h['score']:.2f})"
            )
        for d in c["deploys"]:
            print(f"    {DEPLOY_JOB} (change {d['change']}): {d['checkpoint'][:8]} {d['status']}")
    rows = summary["sync_rows"]
    print(
        f"\nSync table: {rows.get('rl_sessions', 0)} sessions, "
        f"{rows.get('rl_checkpoints', 0)} checkpoints"
    )
    print("\nGPUs (one gpu_notice run per model-resource event; the idle guard acts)")
    print(f"  {'resource':<10} {'role':<12} {'events (runs)':<34} {'idle guard':<12} now")
    for r in summary["resources"]:
        events = ", ".join(
            f"{k.removeprefix('resource_')} ({n})" for k, n in sorted(r["events"].items())
        )
        print(
            f"  {r['resource'][:8]:<10} {r['role']:<12} {events:<34} "
            f"{r['guard_action'] or '-':<12} {r['status']}"
        )
    spend = summary["spend"]
    if not spend:
        print("\nSpend: no materialization of together/rl_spend")
        return
    truth = {r["resource"]: r for r in summary["resources"]}
    print("\nSpend (together/rl_spend: price_per_hour x READY time; simulator's bill beside it)")
    print(
        f"  {'resource':<10} {'status':<8} {'billed h':>9} {'$/hour':>7} {'estimate $':>11} "
        f"{'idle $':>8} {'billed $':>9}"
    )
    for row in spend["resources"]:
        real = truth.get(row["resource_id"])
        billed = (real["billed_seconds"] / 3600 * real["price_per_hour"]) if real else None
        print(
            f"  {row['resource_id'][:8]:<10} {row['status']:<8} {row['billed_hours']:>9.4f} "
            f"{row['price_per_hour'] or 0:>7.2f} {row['cost']:>11.4f} {row['idle_cost']:>8.4f} "
            f"{billed if billed is not None else float('nan'):>9.4f}"
        )
    for sweep in spend["sweeps"]:
        print(
            f"  sweep {sweep['sweep']}: {sweep['sessions']} sessions, "
            f"{sweep['billed_hours']:.4f} h, ${sweep['cost']:.4f}"
        )
    print(
        f"  total ${spend['total_cost']:.4f} (idle ${spend['idle_cost']:.4f}); "
        f"{spend['materializations']} spend materializations"
    )


def check(summary: dict) -> list[str]:
    """What must hold for the demo to pass (also asserted by tests/test_demo.py)."""
    problems = []
    for c in summary["checkpoints"]:
        if len(c["scores"]) != 1:
            problems.append(f"checkpoint {c['checkpoint']} evaluated {len(c['scores'])} times")
    for s in summary["sessions"]:
        if s["report_runs"] != 1 or s["report_run"] != "SUCCESS":
            problems.append(
                f"session {s['session']} has {s['report_runs']} report runs ({s['report_run']})"
            )
        if s["report_status"] != s["status"]:
            problems.append(f"session {s['session']} report says {s['report_status']}")
    problems += _champion_problems(summary)
    if summary["sync_rows"].get("rl_sessions", 0) < len(summary["sessions"]):
        problems.append(f"sync table has {summary['sync_rows']} rows")
    for r in summary["resources"]:
        wanted, events = EXPECTED_GPU_EVENTS[r["role"]], r["events"]
        if (
            {k: events.get(k) for k in wanted} != dict.fromkeys(wanted, 1)
            or any(n != 1 for n in events.values())
            or set(events) - wanted - OPTIONAL_GPU_EVENTS
        ):
            problems.append(f"resource {r['resource']} ({r['role']}) events {events}")
        guarded = r["role"] in GUARDED
        if guarded and (r["guard_runs"] != 1 or r["guard_action"] != "stopped"):
            problems.append(
                f"resource {r['resource']} guard runs {r['guard_runs']} ({r['guard_action']})"
            )
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
            problems.append(
                f"sweep {sweep}: champions {history}, landing order gives {c['replayed']}"
            )
        deploys = c["deploys"]
        if (
            not deploys
            or deploys[-1]["checkpoint"] != c["champion"]
            or any(d["status"] != "SUCCESS" for d in deploys)
            or len({d["change"] for d in deploys}) != len(deploys)
        ):
            problems.append(f"sweep {sweep}: deploy runs {deploys}")
    evaluated = {c["checkpoint"] for c in scored}
    counted = sum(c["candidates"] for c in summary["champions"].values())
    if counted != len(evaluated):
        problems.append(f"champions count {counted} candidates, {len(evaluated)} evaluated")
    return problems
