"""Screenshots of the real Dagster UI after the demo sweep, taken with headless Chromium.

    uv run --frozen python scripts/screenshot.py [--out .demo/screenshots] [--port 3333]

Starts the simulator, a fresh ``DAGSTER_HOME`` under ``.demo/screenshot_home``, the real
``dagster-daemon`` and ``dagster-webserver`` on the Component example
(``example_repo.component_defs``), plays the demo sweep until every checkpoint is evaluated,
then captures the evaluation asset's partitions page and its Overview (where Dagster 1.13 draws
the metadata plots). Needs a Chromium binary (``apt-get install -y chromium`` on Debian).
Dagster's "Join the community" dialog is dismissed the way its Skip button does, with the
``setNuxSeen`` GraphQL mutation. Every process started here is stopped by its process group.
"""

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rl_sessions_dagster.testing import RLSimulator  # noqa: E402
from rl_sessions_dagster.testing.daemon import (  # noqa: E402
    dagster_daemon,
    prepare_dagster_home,
    stop_process_group,
)
from rl_sessions_dagster.testing.scenarios import DemoSweep, wait_until  # noqa: E402

API_KEY = "sim-demo-key"
MODULE = "example_repo.component_defs"
ASSET = "together/checkpoint_evaluation"
PAGES = {
    "partitions": f"/assets/{ASSET}?view=partitions",
    "overview_plots": f"/assets/{ASSET}?view=overview",
    "sensor": "/locations/example_repo.component_defs/sensors/together_rl_events",
}


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    sys.exit("no chromium found: apt-get install -y chromium")


def evaluations(home: Path) -> int:
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home)) as instance:
        key = dg.AssetKey(ASSET.split("/"))
        return len(instance.fetch_materializations(key, limit=100).records)


def shoot(browser: str, url: str, path: Path) -> None:
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--window-size=1600,1800", "--virtual-time-budget=20000",
         f"--screenshot={path}", url],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / ".demo" / "screenshots")
    parser.add_argument("--port", type=int, default=3333)
    parser.add_argument("--pace", type=float, default=2.0)
    args = parser.parse_args()
    browser = chromium()
    home = prepare_dagster_home(ROOT / ".demo" / "screenshot_home")
    args.out.mkdir(parents=True, exist_ok=True)
    with RLSimulator(api_key=API_KEY, seed=42) as sim:
        env = {
            "TOGETHER_API_KEY": API_KEY,
            "TOGETHER_BASE_URL": sim.base_url,
            "RL_SENSOR_INTERVAL_SECONDS": "2",
        }
        with dagster_daemon(home, MODULE, working_directory=ROOT, env=env):
            web_log = open(home / "webserver.log", "wb")  # noqa: SIM115 - closed below
            web = subprocess.Popen(
                [str(Path(sys.executable).with_name("dagster-webserver")), "-w",
                 str(home / "workspace.yaml"), "-h", "127.0.0.1", "-p", str(args.port)],
                env={**os.environ, **env, "DAGSTER_HOME": str(home)}, cwd=ROOT,
                stdout=web_log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
            try:
                base = f"http://127.0.0.1:{args.port}"
                up = wait_until(lambda: _ok(f"{base}/server_info"), 180)
                if not up:
                    print(f"the webserver did not start; see {home / 'webserver.log'}")
                    return 1
                sweep = DemoSweep(sim.world, pace=args.pace, log=print).start()
                done = wait_until(
                    lambda: sweep.outcome.finished
                    and evaluations(home) >= len(sweep.outcome.checkpoints),
                    400,
                    interval=2,
                )
                print(f"sweep finished: {done}; {evaluations(home)} evaluations")
                httpx.post(f"{base}/graphql", json={"query": "mutation { setNuxSeen }"})
                for name, page in PAGES.items():
                    shoot(browser, base + page, args.out / f"{name}.png")
                    print(f"saved {args.out / f'{name}.png'}")
            finally:
                stop_process_group(web)
                web_log.close()
    return 0


def _ok(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


if __name__ == "__main__":
    raise SystemExit(main())
