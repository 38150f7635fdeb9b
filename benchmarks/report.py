"""Tables (Markdown, also printed) and the target checks."""

from __future__ import annotations

import math
import statistics
from typing import Any

from .ticks import TickCase

TICK_ROWS = ("ours_sensor", "ours_core", "naive_list", "naive_get")


def pct(values: list[float], q: float) -> float:
    """Linear-interpolation percentile (q in 0..100); NaN for no values."""
    if not values:
        return math.nan
    data = sorted(values)
    k = (len(data) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return data[lo] + (data[hi] - data[lo]) * (k - lo)


def med(values: list[float]) -> float:
    return statistics.median(values) if values else math.nan


def _x(a: float, b: float) -> str:
    if not b or math.isnan(a) or math.isnan(b):
        return "-"
    r = a / b
    return f"{r:.0f}x" if r >= 100 else f"{r:.1f}x" if r >= 10 else f"{r:.2f}x"


def _kb(n: float) -> str:
    return f"{n / 1024:.1f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MB"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def tick_section(cases: list[TickCase]) -> list[str]:
    rows: list[list[str]] = []
    for case in cases:
        core = case.runs["ours_core"]
        core_req, core_ms = med([float(n) for n in core.requests]), 1000 * med(core.times_s)
        for key in TICK_ROWS:
            run = case.runs[key]
            req = med([float(n) for n in run.requests])
            p50, p95 = 1000 * med(run.times_s), 1000 * pct(run.times_s, 95)
            vs = "(baseline)" if key == "ours_core" else f"{_x(req, core_req)} / {_x(p50, core_ms)}"
            ok = "yes" if not run.mismatches else f"**NO** ({len(run.mismatches)})"
            if run.late_ticks and not run.mismatches:
                ok = f"yes; {len(run.late_ticks)} late (≤ {max(run.late_ticks)} tick)"
            rows.append([
                f"{case.n_sessions:,}", case.order, run.name, str(len(run.times_s)),
                f"{req:g} (max {max(run.requests, default=0)})", f"{p50:.0f}", f"{p95:.0f}",
                vs, ok,
            ])  # fmt: skip
    lines = [
        "### 1. Steady-state sensor tick (50 active sessions, 10 checkpoints each)",
        "",
        *_table(
            [
                "sessions",
                "list order",
                "sensor",
                "ticks",
                "requests/tick p50",
                "tick p50 ms",
                "tick p95 ms",
                "requests / time vs ours-core",
                "events exact",
            ],
            rows,
        ),
        "",
        "Warm-up (not in the table): first tick, then ours until its first complete "
        "verification pass of the list order.",
        "",
    ]
    warm: list[list[str]] = []
    for case in cases:
        for key in TICK_ROWS:
            run = case.runs[key]
            if run.warmup:
                ticks = ", ".join(f"{n} req / {1000 * s:.0f} ms" for s, n in run.warmup)
                warm.append([f"{case.n_sessions:,}", case.order, run.name, ticks])
    lines += _table(["sessions", "list order", "sensor", "warm-up ticks"], warm)
    problems = [
        f"- {case.n_sessions:,} {case.order} {run.name}: {m}"
        for case in cases
        for run in case.runs.values()
        for m in run.mismatches + run.notes
    ]
    if problems:
        lines += ["", "Mismatches and notes:", "", *problems[:40]]
    return lines


def cursor_rows(cases: list[TickCase]) -> dict[int, dict[str, float]]:
    out: dict[int, dict[str, float]] = {}
    for case in cases:
        row = out.setdefault(case.n_sessions, {})
        ours = max(case.runs["ours_sensor"].cursor_bytes + case.runs["ours_core"].cursor_bytes)
        naive = max(case.runs["naive_list"].cursor_bytes + case.runs["naive_get"].cursor_bytes)
        row[f"ours_{case.order}"] = ours
        row["naive"] = max(row.get("naive", 0), naive)
    return out


def cursor_section(cases: list[TickCase]) -> list[str]:
    rows = []
    for n, row in sorted(cursor_rows(cases).items()):
        ours = max(row.get("ours_newest_first", 0), row.get("ours_unordered", 0))
        rows.append([
            f"{n:,}", _kb(row.get("ours_newest_first", 0)), _kb(row.get("ours_unordered", 0)),
            _kb(row["naive"]), _x(row["naive"], ours),
        ])  # fmt: skip
    return [
        "### 2. Cursor size (largest seen during the measured ticks)",
        "",
        *_table(
            [
                "sessions",
                "ours, newest-first",
                "ours, unordered",
                "naive (seen set)",
                "naive / ours",
            ],
            rows,
        ),
        "",
        "The naive cursor is the smallest that still yields exact events: per session its "
        "status, and per checkpoint id whether it is registered (compact JSON).",
    ]


def _baseline(runs: dict[str, list[float]], reader: str, dagster: bool) -> list[float]:
    """The passes of ``reader`` (``raw`` or ``sdk``) in the same kind of process as the row:
    its ``_dagster`` reader for a dagster row when measured (runs from before the SDK had one
    fall back to the plain reader), else the plain one."""
    return (runs.get(f"{reader}_dagster") if dagster else None) or runs.get(reader) or []


def paging_section(p: dict[str, Any]) -> list[str]:
    from .paging import PAYLOADS, READERS

    n = p["n_sessions"]
    rows = []
    for payload, runs in p["payloads"].items():
        for key, label in READERS.items():
            values = runs.get(key, [])
            if not values:
                if key == "sdk":
                    rows.append(
                        [PAYLOADS[payload], label, p.get("sdk_skipped", "skipped"), "-", "-", "-"]
                    )
                continue
            if key.startswith("sdk"):
                label = label.replace("SDK", f"SDK {p.get('sdk_version', '')}", 1)
            v = med(values)
            dagster_row = key.endswith("_dagster")
            rows.append([PAYLOADS[payload], label, f"{v:,.0f}", f"{n / pct(values, 5):.2f}",
                         _x(v, med(_baseline(runs, "sdk", dagster_row))),
                         _x(v, med(_baseline(runs, "raw", dagster_row)))])  # fmt: skip
    lines = [
        f"### 3. Client paging throughput ({n:,} sessions, page size 100, {p['repeats']} passes)",
        "",
        *_table(["payload", "reader", "sessions/s p50", "pass p95 s", "÷ SDK", "÷ raw"], rows),
        "",
        "÷ SDK and ÷ raw: against the SDK and raw `httpx` + `json.loads` in the same kind of "
        "process (a plain one, or one that imported dagster for the dagster rows).",
    ]
    if "parse_json_min_ms" in p:
        json_ms, ours_ms, touch_ms = (
            p["parse_json_ms"],
            p["parse_ours_ms"],
            p["parse_ours_touch_ms"],
        )
        lines += [
            "",
            f"Parse only ({p['parse_pages']} pages of {p['parse_page_sessions']} sessions of the "
            "simulator world, no HTTP, readers interleaved page by page; median, with the minimum "
            f"in brackets): `json.loads` {json_ms:.2f} ms ({p['parse_json_min_ms']:.2f}), ours "
            f"`Page[TrainingSession]` {ours_ms:.2f} ms ({p['parse_ours_min_ms']:.2f}; "
            f"{_x(ours_ms, json_ms)} of `json.loads`), ours reading every checkpoint "
            f"{touch_ms:.2f} ms ({p['parse_ours_touch_min_ms']:.2f}; {_x(touch_ms, json_ms)}).",
        ]
    return lines


def paging_targets(p: dict[str, Any]) -> list[list[str]]:
    """≥ 3x the SDK, plain and with dagster imported, per payload. The raw floor is shown in the
    paging table but is no target (withdrawn with the import-time one, #28)."""
    rows = []
    for payload, runs in p["payloads"].items():
        for key, where in (("ours", "plain process"), ("ours_dagster", "imported dagster")):
            if not runs.get(key):
                continue
            v = med(runs[key])
            name = f"paging {payload}, {where}"
            sdk = _baseline(runs, "sdk", key == "ours_dagster")
            if sdk:
                r = v / med(sdk)
                rows.append([f"{name}: ≥ 3x the SDK", f"{r:.2f}x", "met" if r >= 3 else "not met"])
            else:
                rows.append(
                    [f"{name}: ≥ 3x the SDK", p.get("sdk_skipped", "skipped"), "not measured"]
                )
    return rows


def memory_section(m: dict[str, Any]) -> list[str]:
    rows = [
        ["`list_sessions` iteration, peak RSS - RSS at start", f"{m['rss']:.1f}"],
        ["`list_sessions` iteration, tracemalloc peak", f"{m['tracemalloc']:.1f}"],
        ["for scale: `list(list_sessions())` (all held), peak RSS - start", f"{m['materialize']:.1f}"],
    ]  # fmt: skip
    return [
        f"### 4. Peak memory iterating {m['n_sessions']:,} sessions (child process)",
        "",
        *_table(["measure", "MB above start"], rows),
    ]


def startup_section(s: dict[str, Any]) -> list[str]:
    ours, base = s["import_ours_s"], s["import_dagster_s"]
    rows = [
        ["`import dagster`", f"{base:.2f} s"],
        ["`import rl_sessions_dagster` (Dagster included)", f"{ours:.3f} s ({_x(ours, base)})"],
        ["`from rl_sessions_dagster import` the resource, the Component and every builder "
         "(`build_*_sensor`, `build_idle_guard`, `build_spend_asset`), timed after "
         "`import dagster` in the same process", f"{1000 * s['defs_over_dagster_s']:+.0f} ms"],
        ["the full collection `import dagster` leaves owed, alone (`gc.collect()` right after "
         "it): the first few thousand allocations of any library pay it, ours included",
         f"{1000 * s['owed_collection_s']:.0f} ms"],
        ["the same import once that collection is paid (what our modules themselves cost)",
         f"{1000 * s['defs_over_settled_s']:+.0f} ms"],
        *_loader_rows(s),
        ["`from rl_sessions_dagster import TogetherRLResource` after `import dagster` (a "
         "definitions file of the resource and its own ops or assets)",
         f"{1000 * s['resource_over_dagster_s']:+.0f} ms"],
        ["load `example_repo.definitions` + `validate_loadable`", f"{s['load_defs_s']:.2f} s"],
        ["API calls made while loading", str(s["load_api_calls"])],
    ]  # fmt: skip
    return [
        f"### 5. Import and load (fresh interpreters, median of {s['repeats']})",
        "",
        *_table(["what", "result"], rows),
        "",
        "Bytecode is compiled once before the runs (as a wheel installed by uv has it), "
        "whatever PYTHONDONTWRITEBYTECODE says.",
    ]


def _loader_rows(s: dict[str, Any]) -> list[list[str]]:
    if "defs_in_loader_s" not in s:  # a result written before the loader case existed
        return []
    full = s["loader_full_collections"]
    return [["the same import inside Dagster's own loader (`dagster definitions validate -f` a "
             "definitions file that imports them: where a code server pays it); full "
             "collections during it, most in any run",
             f"{1000 * s['defs_in_loader_s']:+.0f} ms; {full}"]]  # fmt: skip


def daemon_section(d: dict[str, Any] | None, skipped: str) -> list[str]:
    head = "### 6. Daemon latency (registration → run, real dagster-daemon)"
    if d is None:
        return [head, "", f"Not measured: {skipped}."]
    rows = [
        ["run created (sensor tick + run request)", f"{med(d['run_created_s']):.1f}",
         f"{pct(d['run_created_s'], 95):.1f}"],
        ["run started", f"{med(d['run_started_s']):.1f}", f"{pct(d['run_started_s'], 95):.1f}"],
    ]  # fmt: skip
    if d.get("run_finished_s"):
        rows.append(["result (run finished, in-process executor)",
                     f"{med(d['run_finished_s']):.1f}", f"{pct(d['run_finished_s'], 95):.1f}"])  # fmt: skip
    return [head, "", *_table([f"seconds after registration ({d['samples']} checkpoints)",
                              "p50", "p95"], rows)]  # fmt: skip


def targets(results: dict[str, Any]) -> list[list[str]]:
    rows: list[list[str]] = []
    cases: list[TickCase] = results["ticks"]
    ten = [c for c in cases if c.n_sessions == 10_000 and c.order == "newest_first"]
    if ten:
        run = ten[0].runs["ours_sensor"]
        worst = max(run.requests, default=0)
        p50 = 1000 * med(run.times_s)
        rows.append(["≤ 3 requests per tick (10k, newest-first, sensor)",
                     f"max {worst}, p50 {med([float(n) for n in run.requests]):g}",
                     "met" if worst <= 3 else "not met"])  # fmt: skip
        rows.append(["p50 tick ≤ 150 ms (10k, newest-first, sensor)", f"{p50:.0f} ms",
                     "met" if p50 <= 150 else "not met"])  # fmt: skip
    wrong = [
        f"{c.n_sessions} {c.order} {r.key}" for c in cases for r in c.runs.values() if r.mismatches
    ]
    late = [
        f"{c.n_sessions:,} {c.order} {r.key}: {len(r.late_ticks)} event(s) ≤ "
        f"{max(r.late_ticks)} tick(s) late"
        for c in cases for r in c.runs.values() if r.late_ticks
    ]  # fmt: skip
    measured = "; ".join(wrong) if wrong else "none extra, none lost"
    if late and not wrong:
        measured += " (" + "; ".join(late) + ")"
    rows.append(["every change → its expected events exactly once, all sensors", measured,
                 "met" if not wrong else "not met"])  # fmt: skip
    sizes = cursor_rows(cases)
    if 10_000 in sizes:
        ours10 = max(v for k, v in sizes[10_000].items() if k.startswith("ours"))
        rows.append(["cursor ≤ 4 KB at 10k", _kb(ours10), "met" if ours10 <= 4096 else "not met"])
    if len(sizes) > 1:
        per = [
            max(v for k, v in row.items() if k.startswith("ours"))
            for _, row in sorted(sizes.items())
        ]
        flat = max(per) <= 1.25 * min(per)
        rows.append(["cursor flat as history grows", " → ".join(_kb(v) for v in per),
                     "met" if flat else "not met"])  # fmt: skip
    p = results.get("paging")
    if p:
        rows += paging_targets(p)
    m = results.get("memory")
    if m:
        worst = max(m["rss"], m["tracemalloc"])
        rows.append([f"peak memory < 50 MB above start ({m['n_sessions']:,} sessions)",
                     f"RSS {m['rss']:.1f} MB, tracemalloc {m['tracemalloc']:.1f} MB",
                     "met" if worst < 50 else "not met"])  # fmt: skip
    s = results.get("startup")
    if s:
        rows.append(
            [
                "0 API calls while loading example_repo.definitions",
                str(s["load_api_calls"]),
                "met" if s["load_api_calls"] == 0 else "not met",
            ]
        )
    return rows


def render(results: dict[str, Any]) -> str:
    lines: list[str] = []
    lines += [*tick_section(results["ticks"]), ""]
    lines += [*cursor_section(results["ticks"]), ""]
    if "paging" in results:
        lines += [*paging_section(results["paging"]), ""]
    if "memory" in results:
        lines += [*memory_section(results["memory"]), ""]
    if "startup" in results:
        lines += [*startup_section(results["startup"]), ""]
    lines += [*daemon_section(results.get("daemon"), results.get("daemon_skipped", "")), ""]
    lines += ["### Targets", "", *_table(["target", "measured", "verdict"], targets(results))]
    return "\n".join(lines)
