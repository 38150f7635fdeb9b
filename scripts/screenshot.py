"""Screenshots of the real Dagster UI after the demo sweep, taken with headless Chromium.

    uv run --frozen python scripts/screenshot.py [--out .demo/screenshots] [--port 3333]

Starts the simulator, a fresh ``DAGSTER_HOME`` under ``.demo/screenshot_home``, the real
``dagster-daemon`` and ``dagster-webserver`` on the Component example
(``example_repo.component_defs``), plays the demo sweep until every checkpoint is evaluated,
then captures the evaluation asset's partitions page and its Overview (where Dagster 1.13 draws
the metadata plots). Needs a Chromium binary (``apt-get install -y chromium`` on Debian).
Dagster's "Join the community" dialog is dismissed the way its Skip button does, with the
``setNuxSeen`` GraphQL mutation; Chromium is driven over the DevTools protocol (``websockets``,
installed with Dagster's webserver) to click the metadata "Plots" toggle. Every process started here is stopped by its process group.
"""

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import time
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
#: page name → (path, text of a button to click first, or None)
PAGES = {
    "partitions": (f"/assets/{ASSET}?view=partitions", None),
    "overview_metadata": (f"/assets/{ASSET}?view=overview", None),
    "overview_plots": (f"/assets/{ASSET}?view=overview", "Plots"),
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


class Browser:
    """Headless Chromium driven over the DevTools protocol (navigate, click, screenshot)."""

    def __init__(self, binary: str, port: int = 9333) -> None:
        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--remote-debugging-port={port}", "--window-size=1600,1400", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        target = f"http://127.0.0.1:{port}/json"
        assert wait_until(lambda: _ok(target), 60), "chromium did not start"
        page = next(t for t in httpx.get(target).json() if t["type"] == "page")
        from websockets.sync.client import connect

        self._connection = connect(page["webSocketDebuggerUrl"], max_size=None)
        self.ws = self._connection.__enter__()
        self.next_id = 0

    def call(self, method: str, **params: object) -> dict:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv(timeout=60))
            if message.get("id") == self.next_id:
                return message.get("result", {})

    def js(self, expression: str) -> object:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result.get("result", {}).get("value")

    def shoot(self, url: str, path: Path, click: str | None) -> None:
        self.call("Page.navigate", url=url)
        # The UI renders from GraphQL after load: wait for the page to show data.
        wait_until(lambda: self.js("document.body.innerText.includes('sweep-lr')"), 60, 1)
        if click is not None:
            clicked = self.js(
                "(() => { const b = [...document.querySelectorAll('button')]"
                f".find(b => b.innerText.trim() === {click!r}); if (b) b.click(); return !!b; }})()"
            )
            assert clicked, f"no {click!r} button on {url}"
        time.sleep(4)  # let charts draw
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        self._connection.__exit__(None, None, None)
        stop_process_group(self.proc)  # type: ignore[arg-type]


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
                sweep = DemoSweep(
                    sim.world, pace=args.pace, log=lambda m: print(m, flush=True)
                ).start()
                done = wait_until(
                    lambda: (
                        sweep.outcome.finished
                        and evaluations(home) >= len(sweep.outcome.checkpoints)
                    ),
                    400,
                    interval=2,
                )
                print(f"sweep finished: {done}; {evaluations(home)} evaluations", flush=True)
                httpx.post(f"{base}/graphql", json={"query": "mutation { setNuxSeen }"})
                chrome = Browser(browser)
                try:
                    for name, (page, click) in PAGES.items():
                        chrome.shoot(base + page, args.out / f"{name}.png", click)
                        print(f"saved {args.out / f'{name}.png'}", flush=True)
                finally:
                    chrome.close()
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
