"""The idle guard: find READY model resources with no session attached for too long, and stop
them (one run per stop, exactly once), or only report what stopping would save (dry run, the
default).

:func:`build_idle_guard` returns a job and a sensor. The sensor lists READY resources (the
caller's own unless ``created_by`` says otherwise) and the active sessions, picks the idle
ones within the policy, and requests one run per resource with ``run_key
idle_stop:<id>:<idle since ms>`` (``idle_report`` in dry-run mode): stable while the resource
stays idle, so Dagster runs it once; new activity gives a new key. The run re-checks the
resource (still READY, still no session), prices it with ``estimate-cost`` and, unless dry run,
stops it, never with ``force`` unless configured. A refusal (sessions attached, no permission)
is reported in the run's metadata and the run succeeds: the guard goes on.

No ``from __future__ import annotations`` here: Dagster must see the real ``context`` type.
"""

import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import dagster as dg

from ..api import ServerClock, TogetherRLError
from ..api.enums import ModelResourceStatus
from ..api.lifecycle import ResourceSpec, monotonic_deadline, stop_resource
from ..api.models import ModelResource
from ..core.idle import IdlePolicy, IdleResource, busy_resources, idle_candidates, idle_since
from ..core.tracker import to_ms
from ..resource import TogetherRLResource
from .definition import QuietSensorDefinition
from .factory import DEFAULT_TICK_BUDGET_SECONDS, TRANSIENT_ERRORS, _tick_budget
from .run_requests import TAG_PREFIX
from .source import ACTIVE, TERMINAL

if TYPE_CHECKING:  # the client (and httpx) load when a run or tick builds one
    from ..api import RLSessionsClient

__all__ = ["IdleStopConfig", "build_idle_guard"]


class IdleStopConfig(dg.Config):
    """Run config of one guard run (filled in by the sensor)."""

    model_resources_id: str
    idle_since_ms: int
    dry_run: bool = True
    force: bool = False


def _now_ms() -> int:
    return int(datetime.now(UTC).timestamp() * 1000)


def _last_session_end(client: "RLSessionsClient", rid: str, deadline: float) -> int | None:
    ends = [
        ms
        for s in client.list_sessions(model_resources_id=rid, status=TERMINAL, deadline=deadline)
        if (ms := to_ms(s.updated_at)) is not None
    ]
    return max(ends) if ends else None


def find_idle(
    client: "RLSessionsClient",
    policy: IdlePolicy,
    *,
    created_by: str | None,
    deadline: float,
    clock: ServerClock | None = None,
) -> tuple[list[IdleResource], int]:
    """The resources the guard would stop right now (reads only), and the time it judged by:
    the API's clock (HTTP ``Date``) when ``clock`` saw one, else the local one."""
    ready = list(
        client.list_model_resources(
            status=[ModelResourceStatus.READY], created_by=created_by, deadline=deadline
        )
    )
    now_ms = (clock.last_ms if clock is not None else None) or _now_ms()
    if not ready:
        return [], now_ms
    busy = busy_resources(client.list_sessions(status=ACTIVE, deadline=deadline))
    rough = idle_candidates(ready, busy, policy, now_ms=now_ms)
    ends = {}
    for c in rough:
        end = _last_session_end(client, c.resource.id, deadline)
        if end is not None:
            ends[c.resource.id] = end
    final = idle_candidates(
        [c.resource for c in rough], busy, policy, now_ms=now_ms, last_session_end_ms=ends
    )
    return final, now_ms


def _price(client: "RLSessionsClient", r: ModelResource) -> float | None:
    spec = ResourceSpec.of(r)
    try:
        return client.estimate_model_resource_cost(
            spec.base_model, **spec.request_kwargs()
        ).price_per_hour
    except TogetherRLError:
        return None


def build_idle_guard(
    *,
    name: str = "together_rl_idle_guard",
    resource_key: str = "together",
    idle_seconds: float = 1800.0,
    dry_run: bool = True,
    force: bool = False,
    created_by: str | None = "me",
    allow_ids: Iterable[str] = (),
    deny_ids: Iterable[str] = (),
    allow_base_models: Iterable[str] = (),
    deny_base_models: Iterable[str] = (),
    minimum_interval_seconds: int = 300,
    tick_budget_seconds: float = DEFAULT_TICK_BUDGET_SECONDS,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
) -> tuple[dg.JobDefinition, dg.SensorDefinition]:
    """A job stopping one idle resource per run, and the sensor that requests those runs.

    Args:
        idle_seconds: how long a READY resource must have had no session attached.
        dry_run: only report what would be stopped and what it would save (default).
        force: stop with ``force=true`` (also stops sessions attached meanwhile, anyone's).
        created_by: ``"me"`` (default: only the caller's resources), a user id, or None (all).
        allow_ids / deny_ids / allow_base_models / deny_base_models: the policy lists
            (deny wins; empty allow lists allow everything).
    """
    policy = IdlePolicy(
        idle_seconds=idle_seconds,
        allow_ids=frozenset(allow_ids),
        deny_ids=frozenset(deny_ids),
        allow_base_models=frozenset(allow_base_models),
        deny_base_models=frozenset(deny_base_models),
    )
    op_name = f"{name}_stop"
    budget = _tick_budget(tick_budget_seconds)

    # The run key is spent once requested: a transient failure is retried inside the run.
    @dg.op(
        name=op_name,
        required_resource_keys={resource_key},
        retry_policy=dg.RetryPolicy(max_retries=2, delay=15),
    )
    def _stop_idle(context: dg.OpExecutionContext, config: IdleStopConfig) -> dg.Output:
        resource: TogetherRLResource = getattr(context.resources, resource_key)
        rid = config.model_resources_id
        deadline = monotonic_deadline(120.0)
        meta: dict[str, Any] = {"model_resources_id": rid, "dry_run": config.dry_run}
        clock = ServerClock()
        with resource.get_client(server_clock=clock) as client:
            r = client.get_model_resource(rid, deadline=deadline)
            now = clock.last_ms or _now_ms()
            attached = list(
                client.list_sessions(model_resources_id=rid, status=ACTIVE, deadline=deadline)
            )
            price = _price(client, r)
            expires = to_ms(r.expires_at)
            hours_left = max(0, (expires or now) - now) / 3_600_000
            meta.update(
                idle_minutes=round((now - (idle_since(r) or now)) / 60000, 1),
                price_per_hour=price,
                saves_until_expiry=None if price is None else round(price * hours_left, 4),
            )
            if r.status is not ModelResourceStatus.READY:
                action = "skipped_not_ready"
            elif attached:
                action = "skipped_busy"
            elif config.dry_run:
                action = "would_stop"
            else:
                outcome = stop_resource(client, rid, force=config.force, deadline=deadline)
                action = outcome.result
                if outcome.detail:
                    meta["detail"] = outcome.detail
        meta["action"] = action
        level = (
            context.log.warning
            if action in ("not_permitted", "refused_active_sessions")
            else (context.log.info)
        )
        level(f"idle guard, model resource {rid}: {action} ({meta})")
        return dg.Output(action, metadata={k: v for k, v in meta.items() if v is not None})

    @dg.job(name=name, tags={f"{TAG_PREFIX}guard": "idle"})
    def _guard_job() -> None:
        _stop_idle()

    def _guard_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        deadline = time.monotonic() + budget
        resource: TogetherRLResource = getattr(context.resources, resource_key)
        clock = ServerClock()
        try:
            with resource.get_client(server_clock=clock) as client:
                idle, now = find_idle(
                    client, policy, created_by=created_by, deadline=deadline, clock=clock
                )
        except TRANSIENT_ERRORS as exc:
            return dg.SkipReason(f"Together RL API unavailable, will retry next tick: {exc}")
        mode = "dry_run" if dry_run else "stop"
        requests = []
        for c in idle:
            r = c.resource
            prefix = "idle_report" if dry_run else "idle_stop"
            requests.append(
                dg.RunRequest(
                    run_key=f"{prefix}:{r.id}:{c.idle_since_ms}",
                    run_config={
                        "ops": {
                            op_name: {
                                "config": {
                                    "model_resources_id": r.id,
                                    "idle_since_ms": c.idle_since_ms,
                                    "dry_run": dry_run,
                                    "force": force,
                                }
                            }
                        }
                    },
                    tags={
                        f"{TAG_PREFIX}event": "resource_idle",
                        f"{TAG_PREFIX}model_resources_id": r.id,
                        f"{TAG_PREFIX}guard_mode": mode,
                        f"{TAG_PREFIX}idle_minutes": str(c.idle_ms(now) // 60000),
                        **({f"{TAG_PREFIX}base_model": r.base_model[:200]} if r.base_model else {}),
                    },
                )
            )
        summary = f"{len(idle)} idle resource(s) ({mode}): " + (
            ", ".join(f"{c.resource.id} idle {c.idle_ms(now) // 60000} min" for c in idle) or "none"
        )
        context.log.info(summary)
        if not requests:
            return dg.SkipReason(summary)
        return dg.SensorResult(run_requests=requests)

    return _guard_job, QuietSensorDefinition(
        rl_fn=_guard_sensor,
        name=f"{name}_sensor",
        jobs=[_guard_job],
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        required_resource_keys={resource_key},
        description=(
            f"Stops READY Together RL model resources idle > {idle_seconds:g} s"
            + (" (dry run: reports only)" if dry_run else "")
        ),
    )
