"""The deployment files as a user meets them, beyond Dagster's own loaders (those are in
``tests/postgres/test_deploy.py``): the Helm values against the chart's values schema, the
chart version pinned where docs/production.md installs it, resources and compute logs, the image
(installed from uv.lock, run as a non-root user) and one version string everywhere.

The schema is a hand-written subset of the chart's own ``values.schema.json``; where it comes
from and how it differs is in ``tests/fixtures/helm/README.md``. No ``helm`` binary is
installable from the package registries here, so the chart itself is not rendered.
"""

import copy
import json
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

import rl_sessions_dagster

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
SCHEMA = ROOT / "tests" / "fixtures" / "helm" / "dagster-chart-values.subset.schema.json"
# The README and the docs pages (docs/production.md holds the deploy commands).
DOC_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# The chart release docs/production.md installs; chart versions track Dagster's.
CHART_VERSION = "1.13.27"


def helm_values() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "helm" / "values.yaml").read_text())


def schema_errors(values: dict[str, Any]) -> list[str]:
    """Every error, with the errors inside ``anyOf`` branches (an optional section's own)."""
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    found: list[str] = []
    pending = list(validator.iter_errors(values))
    while pending:
        error = pending.pop()
        found.append(f"{'/'.join(map(str, error.absolute_path))}: {error.message}")
        pending.extend(error.context or [])
    return sorted(found)


def pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def locked_version(name: str) -> str:
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    (version,) = {p["version"] for p in lock["package"] if p["name"] == name}
    return str(version)


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of deploy/Dockerfile, continuation lines joined."""
    text = (DEPLOY / "Dockerfile").read_text()
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    return [
        (ln.split(None, 1)[0].upper(), ln.split(None, 1)[1] if " " in ln.strip() else "")
        for ln in joined.splitlines()
        if ln.strip()
    ]


def to_number(quantity: str | int | float) -> float:
    """A Kubernetes quantity as a number (cores, bytes)."""
    units = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 1e3, "M": 1e6}
    match = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", str(quantity))
    assert match, quantity
    return float(match.group(1)) * units.get(match.group(2), 1)


# --- Helm values ---------------------------------------------------------------------------


def test_helm_values_match_the_charts_values_schema() -> None:
    assert schema_errors(helm_values()) == []


def _deployment(values: dict[str, Any]) -> dict[str, Any]:
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    return deployment  # type: ignore[no-any-return]


MISTAKES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "misspelt daemon key": (
        lambda v: v["dagsterDaemon"].update(resource={}),
        "dagsterDaemon: Additional properties are not allowed ('resource' was unexpected)",
    ),
    "misspelt top-level key": (
        lambda v: v.update(dagsterDeamon={"enabled": True}),
        ": Additional properties are not allowed ('dagsterDeamon' was unexpected)",
    ),
    "memory that is no quantity": (
        lambda v: v["dagsterDaemon"]["resources"]["limits"].update(memory="1 GB"),
        "dagsterDaemon/resources/limits/memory: '1 GB' is not valid under any",
    ),
    "S3 compute logs without a bucket": (
        lambda v: v["computeLogManager"]["config"]["s3ComputeLogManager"].pop("bucket"),
        "computeLogManager/config/s3ComputeLogManager: 'bucket' is a required property",
    ),
    "compute log manager type without its config": (
        lambda v: v["computeLogManager"].update(type="GCSComputeLogManager"),
        "computeLogManager/config: 'gcsComputeLogManager' is a required property",
    ),
    "K8sRunLauncher without its config": (
        lambda v: v["runLauncher"].update(config={}),
        "runLauncher/config: 'k8sRunLauncher' is a required property",
    ),
    "misspelt run launcher key": (
        lambda v: v["runLauncher"]["config"]["k8sRunLauncher"].update(resource={}),
        "Additional properties are not allowed ('resource' was unexpected)",
    ),
    "code location without a port": (
        lambda v: _deployment(v).pop("port"),
        "dagster-user-deployments/deployments/0: 'port' is a required property",
    ),
    "tag limit without a limit": (
        lambda v: v["dagsterDaemon"]["runCoordinator"]["config"]["queuedRunCoordinator"][
            "tagConcurrencyLimits"
        ][0].pop("limit"),
        "'limit' is a required property",
    ),
}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_the_schema_rejects_a_mistake(mistake: str) -> None:
    """The check is not vacuous: each of these edits of the real values file is an error."""
    mutate, expected = MISTAKES[mistake]
    values = copy.deepcopy(helm_values())
    mutate(values)
    errors = schema_errors(values)
    assert any(expected in e for e in errors), errors


def test_run_pods_the_daemon_the_webserver_and_the_code_server_have_requests_and_limits() -> None:
    values = helm_values()
    pods = {
        "run pods": values["runLauncher"]["config"]["k8sRunLauncher"]["resources"],
        "daemon": values["dagsterDaemon"]["resources"],
        "webserver": values["dagsterWebserver"]["resources"],
        "code server": _deployment(values)["resources"],
    }
    for pod, resources in pods.items():
        requests, limits = resources["requests"], resources["limits"]
        assert set(requests) == set(limits) == {"cpu", "memory"}, pod
        for kind in ("cpu", "memory"):
            assert to_number(requests[kind]) <= to_number(limits[kind]), (pod, kind)
        # Measured: a Dagster process holds 130-160 MB idle (shared/dagster-on-this-machine).
        assert to_number(requests["memory"]) >= 256 * 2**20, pod


def test_pods_run_as_the_images_non_root_user() -> None:
    values = helm_values()
    uid = int(dict(dockerfile())["USER"].split(":")[0])
    contexts = {
        "code server": _deployment(values)["podSecurityContext"],
        "run pods": values["runLauncher"]["config"]["k8sRunLauncher"]["runK8sConfig"][
            "podSpecConfig"
        ]["securityContext"],
    }
    for pod, context in contexts.items():
        assert context["runAsNonRoot"] is True, pod
        assert context["runAsUser"] == uid, pod


def test_compute_logs_leave_the_run_pod_for_a_bucket_the_image_can_write() -> None:
    """Run pods are deleted after the run: stdout/stderr shown in the UI must be uploaded."""
    manager = helm_values()["computeLogManager"]
    package = {
        "S3ComputeLogManager": "dagster-aws",
        "GCSComputeLogManager": "dagster-gcp",
        "AzureBlobComputeLogManager": "dagster-azure",
    }[manager["type"]]
    k8s_extra = pyproject()["project"]["optional-dependencies"]["k8s"]
    assert any(req.startswith(package) for req in k8s_extra)
    runs = [args for op, args in dockerfile() if op == "RUN" and "uv sync" in args]
    assert runs and all("--extra k8s" in args for args in runs)


def test_the_chart_version_is_pinned_to_the_locked_dagster_release() -> None:
    assert locked_version("dagster") == CHART_VERSION
    docs = "".join(path.read_text() for path in DOC_PAGES)
    values_text = (DEPLOY / "helm" / "values.yaml").read_text()
    commands = re.findall(r"helm (?:upgrade|install) [^\n]*", docs + values_text)
    assert len(commands) >= 2
    for command in commands:
        assert f"--version {CHART_VERSION}" in command, command


# --- the image -----------------------------------------------------------------------------


def test_the_image_installs_from_the_lock_and_runs_as_a_non_root_user() -> None:
    instructions = dockerfile()
    users = [args for op, args in instructions if op == "USER"]
    assert users, "no USER: the image would run as root"
    user = users[-1].split(":")[0]
    assert user not in {"root", "0"} and int(user) >= 10000
    copies = " ".join(args for op, args in instructions if op == "COPY")
    assert "uv.lock" in copies and "pyproject.toml" in copies
    runs = [args for op, args in instructions if op == "RUN"]
    syncs = [args for args in runs if "uv sync" in args]
    assert syncs and all("--frozen" in args and "--no-dev" in args for args in syncs)
    # pip installs uv and nothing else: every other package comes from the lock.
    assert all(re.findall(r"pip install", args) == [] or '"uv==' in args for args in runs)
    test_sh = (ROOT / "scripts" / "test.sh").read_text()
    (uv_pin,) = set(re.findall(r"uv==[0-9.]+", (DEPLOY / "Dockerfile").read_text()))
    assert uv_pin in test_sh
    extras = set(re.findall(r"--extra (\w+)", " ".join(syncs)))
    assert extras == {"postgres", "k8s"} <= set(pyproject()["project"]["optional-dependencies"])


def test_the_image_python_and_module_match_the_package_and_the_chart() -> None:
    instructions = dockerfile()
    (base,) = [args for op, args in instructions if op == "FROM"]
    match = re.fullmatch(r"python:(\d+)\.(\d+)-slim", base)
    assert match, base
    minimum = re.fullmatch(r">=(\d+)\.(\d+)", pyproject()["project"]["requires-python"])
    assert minimum
    assert tuple(map(int, match.groups())) >= tuple(map(int, minimum.groups()))
    (cmd,) = [json.loads(args) for op, args in instructions if op == "CMD"]
    args = _deployment(helm_values())["dagsterApiGrpcArgs"]
    for flag in ("--module-name", "--working-directory"):
        assert cmd[cmd.index(flag) + 1] == args[args.index(flag) + 1]
    workdir = [args for op, args in instructions if op == "WORKDIR"][-1]
    assert args[args.index("--working-directory") + 1] == workdir


# --- one version ---------------------------------------------------------------------------


def test_one_version_string_everywhere() -> None:
    import importlib.metadata

    version = rl_sessions_dagster.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
    assert pyproject()["project"]["dynamic"] == ["version"]
    assert importlib.metadata.version("rl-sessions-dagster") == version
    assert _deployment(helm_values())["image"]["tag"] == version
    for path in (ROOT / "docs" / "production.md", DEPLOY / "Dockerfile"):
        tags = set(re.findall(r"rl-sessions-dagster:(\d+\.\d+\.\d+)", path.read_text()))
        assert tags == {version}, path
    for path in DOC_PAGES:  # and no other page names another version
        tags = set(re.findall(r"rl-sessions-dagster:(\d+\.\d+\.\d+)", path.read_text()))
        assert tags <= {version}, path


def test_the_license_file_is_the_declared_license() -> None:
    assert pyproject()["project"]["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
