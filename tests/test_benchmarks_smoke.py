"""``python -m benchmarks.run --quick`` completes and produces every row.

Numbers are never asserted: CI may be a noisy 2-core machine.
"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SECTIONS = (
    "### 1. Steady-state sensor tick",
    "### 2. Cursor size",
    "### 3. Client paging throughput",
    "### 4. Peak memory",
    "### 5. Import and load",
    "### 6. Daemon latency",
    "### Targets",
)
SENSORS = (
    "ours: sensor via evaluate_tick",
    "ours: collect+advance (no Dagster)",
    "naive: list all pages, diff seen set",
    "naive: list, then GET each session",
)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_quick_benchmark_completes_with_every_row(tmp_path):
    out = tmp_path / "BENCHMARKS.md"
    proc = subprocess.run(
        # 300 sessions: every row is produced at any size, and CI pays a quarter of 1,000's ticks.
        [sys.executable, "-m", "benchmarks.run", "--quick", "--sizes", "300", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1100,  # a ceiling: ~1 min on an idle 2-core machine, several times that loaded
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text()
    assert text == "# Benchmarks\n\n" + text.split("\n", 2)[2]
    for heading in SECTIONS:
        assert heading in text
    for order in ("newest_first", "unordered"):
        for sensor in SENSORS:
            assert f"| 300 | {order} | {sensor} |" in text
    for reader in (
        "ours: `RLSessionsClient.list_sessions`",
        "raw `httpx`",
        "`together` SDK",
        "imported dagster",
        "every inference checkpoint",
        "a model with only `id` typed",
    ):
        assert reader in text
    for payload in ("10 inference + 1 training checkpoints per session", "payload corpus"):
        assert payload in text
    assert "API calls made while loading" in text
    assert "the full collection `import dagster` leaves owed" in text
    assert "inside Dagster's own loader" in text
    assert "| every change → its expected events exactly once, all sensors |" in text


@pytest.mark.timeout(300)
def test_evaluation_benchmark_runs_tiny_and_every_item_is_answered(tmp_path):
    """``python -m benchmarks.evaluation`` end to end at toy size; only completeness is checked."""
    out = tmp_path / "BENCHMARKS.md"
    out.write_text("# Benchmarks\n\nhand-written text\n")
    args = ["--items", "30", "--delay", "0.01", "--concurrency", "4", "--fault-rate", "0.2",
            "--sequential-items", "5", "--write", "--out", str(out)]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.evaluation", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=280,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = out.read_text()
    assert text.startswith("# Benchmarks\n\nhand-written text\n")
    assert "| sequential loop (like example_repo/evaluation.py) | 5 | 5 |" in text
    assert "| run_evaluation, concurrency 4 | 30 | 30 |" in text
    assert "| run_evaluation, faults, concurrency 4, 20% 503s | 30 | 30 |" in text
