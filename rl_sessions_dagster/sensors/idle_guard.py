"""Stop READY model resources unused too long (one run each), or report it (dry run, default).
It destroys, so it decides twice (tick, run) and errs towards leaving a GPU up (core/idle.py)."""

import json
from dataclasses import dataclass, replace
from typing import Any

import dagster as dg

from ..api import RLSessionsClient, ServerClock
from ..api.clock import to_ms
from ..api.enums import ModelResourceStatus
from ..api.lifecycle import PriceCache, monotonic_deadline, stop_resource
from ..core.idle import IdlePolicy, IdleVerdict, ResourceUse, decide, resource_use, worth_a_look
from ..core.spend import observe_span
from ..core.state import CursorError
from ..resource import TogetherRLResource, open_table_store
from .options import IdleGuardOptions
from .tick import TAG_PREFIX, Tick, TickOutcome, local_now_ms, run_tags, tick_sensor

_RID_TAG = f"{TAG_PREFIX}model_resources_id"
_SINCE_TAG = f"{TAG_PREFIX}idle_since_ms"
_FAILED = [dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED]
_CURSOR_KIND = "idle_guard"


@dataclass
class GuardState:
    """Only when ticks began failing: each tick decides from the API and the guard's runs."""

    failing_since_ms: int | None = None
    initialized: bool = True

    def to_cursor(self) -> str:
        return json.dumps({"kind": _CURSOR_KIND, "f": self.failing_since_ms})

    @classmethod
    def from_cursor(cls, cursor: str | None) -> "GuardState":
        if not cursor:
            return cls()
        try:
            doc = json.loads(cursor)
            if not isinstance(doc, dict) or doc.get("kind") != _CURSOR_KIND:
                raise CursorError("not an idle-guard cursor")
            return cls(None if doc.get("f") is None else int(doc["f"]))
        except (ValueError, TypeError) as exc:
            raise CursorError(f"unreadable idle-guard cursor: {exc!r}") from None


class IdleStopConfig(dg.Config):
    """Run config of one guard run (filled in by the sensor)."""

    model_resources_id: str
    idle_since_ms: int
    dry_run: bool = True
    force: bool = False


def read_use(client: RLSessionsClient, rid: str, *, force: bool, deadline: float) -> ResourceUse:
    """Every session on ``rid`` (no status filter: unknown statuses must be seen)."""
    skipped: list[Any] = []
    sessions = list(
        client.list_sessions(model_resources_id=rid, deadline=deadline, on_skipped=skipped.append)
    )
    return resource_use(sessions, unreadable=len(skipped), force=force)


def build_idle_guard(
    *,
    name: str = "together_rl_idle_guard",
    policy: IdlePolicy | None = None,
    dry_run: bool = True,
    options: IdleGuardOptions | None = None,
    minimum_interval_seconds: int = 300,
    default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED,
    description: str | None = None,
) -> tuple[dg.JobDefinition, dg.SensorDefinition]:
    """The job ``name`` (one idle resource stopped per run) and its sensor ``<name>_sensor``.
    Default ``policy``: your own resources unused 30 min, not forced. Run key
    ``idle_stop:<id>:<idle since ms>`` (``idle_report`` in dry run) is stable while idle, so it
    runs once; a failed run is retried as ``…:retry<n>`` up to ``stop_attempts``, then logged."""
    policy = policy or IdlePolicy()
    options = options or IdleGuardOptions()
    resource_key, idle_seconds = options.resource_key, policy.idle_seconds
    op_name = f"{name}_stop"

    @dg.op(
        name=op_name,
        required_resource_keys={resource_key},
        retry_policy=dg.RetryPolicy(max_retries=2, delay=15),
    )
    def _stop_idle(context: dg.OpExecutionContext, config: IdleStopConfig) -> dg.Output:
        resource: TogetherRLResource = getattr(context.resources, resource_key)
        rid = config.model_resources_id
        deadline, clock = monotonic_deadline(120.0), ServerClock()
        with resource.get_client(server_clock=clock) as client:
            # The resource first, then its sessions: a session attached in between is seen.
            r = client.get_model_resource(rid, deadline=deadline)
            use = read_use(client, rid, force=config.force, deadline=deadline)
            now = clock.last_ms or local_now_ms()
            decision = decide(r, use, policy, now_ms=now)
            price = PriceCache(client).price(r)
            outcome = None
            if not decision.stop:
                action = f"skipped_{decision.verdict.value}"
            elif config.dry_run:
                action = "would_stop"
            else:
                # force only when a STOPPING session needs it; otherwise the API itself
                # refuses the stop if a session attached since the re-read.
                outcome = stop_resource(client, rid, force=use.interruptible > 0, deadline=deadline)
                action = outcome.result
        meta: dict[str, Any] = {
            "model_resources_id": rid,
            "action": action,
            "dry_run": config.dry_run,
            "decision": decision.explain(),
            "idle_minutes": round(decision.idle_ms / 60000, 1),
            "idle_seconds_required": idle_seconds,
            "live_sessions": len(decision.use.live),
            "unreadable_sessions": decision.use.unreadable,
            "price_per_hour": price[0],
            "detail": (outcome.detail or None) if outcome is not None else None,
        }
        expires = to_ms(r.expires_at)
        if price[0] is not None and expires is not None:
            meta["saves_until_expiry"] = round(price[0] * (max(0, expires - now) / 3_600_000), 4)
        try:  # the billed span: READY as read before the stop, ended when STOPPING began
            db = options.spend_db_path
            with open_table_store(resource, context.instance, db, url_setting="spend_db_path") as s:
                span = observe_span(s.load_spans().get(rid), r, now_ms=now)
                if outcome is not None and outcome.resource is not None:
                    span = observe_span(span, outcome.resource, now_ms=now)
                if span.price_per_hour is None and price[0] is not None:
                    span = replace(span, price_per_hour=price[0], currency=price[1])
                s.save_spans([span], now_ms=now)
            meta["billed_until"] = span.ready_until_ms
        except Exception as exc:  # a spend table that cannot be written never undoes a stop
            context.log.warning(f"idle guard: could not record the billed span of {rid}: {exc}")
        level = context.log.info if action in ("stopped", "would_stop") else context.log.warning
        level(f"idle guard, model resource {rid}: {action} ({decision.explain()})")
        return dg.Output(action, metadata={k: v for k, v in meta.items() if v is not None})

    @dg.job(name=name, tags={f"{TAG_PREFIX}guard": "idle"}, executor_def=dg.in_process_executor)
    def _guard_job() -> None:
        _stop_idle()

    mode = "dry_run" if dry_run else "stop"
    prefix = "idle_report" if dry_run else "idle_stop"

    def body(tick: Tick, state: GuardState) -> TickOutcome[GuardState]:
        client, deadline = tick.client, tick.deadline
        ready = list(
            client.list_model_resources(
                status=[ModelResourceStatus.READY], created_by=policy.created_by, deadline=deadline
            )
        )
        requests, gave_up, kept, stops = [], [], [], []
        for r in ready:
            # Sessions only move the idle start later: read them only if idle already. On the
            # API's clock (HTTP Date), right after the sessions were read.
            use = ResourceUse()
            if worth_a_look(r, policy, now_ms=tick.clock.last_ms or local_now_ms()):
                use = read_use(client, r.id, force=policy.force, deadline=deadline)
            d = decide(r, use, policy, now_ms=tick.clock.last_ms or local_now_ms())
            if not d.stop:
                if d.verdict not in (IdleVerdict.NOT_PERMITTED, IdleVerdict.RECENTLY_USED):
                    kept.append(d.explain())
                continue
            stops.append(d)
            since = d.idle_since_ms
            assert since is not None
            # Failed or cancelled runs of this idle stretch: their stop may not have happened.
            tags = {_RID_TAG: r.id, _SINCE_TAG: str(since)}
            failed = tick.context.instance.get_runs_count(
                dg.RunsFilter(job_name=name, statuses=_FAILED, tags=tags)
            )
            if failed >= options.stop_attempts:
                gave_up.append(f"{r.id} ({failed} failed runs)")
                continue
            config = dict(
                model_resources_id=r.id, idle_since_ms=since, dry_run=dry_run, force=policy.force
            )
            request = dg.RunRequest(
                run_key=f"{prefix}:{r.id}:{since}" + (f":retry{failed}" if failed else ""),
                run_config={"ops": {op_name: {"config": config}}},
                tags=run_tags(
                    event="resource_idle",
                    model_resources_id=r.id,
                    idle_since_ms=since,
                    guard_mode=mode,
                    guard_attempt=failed + 1,
                    idle_minutes=d.idle_ms // 60000,
                    base_model=r.base_model,
                ),
            )
            requests.append(request)
        summary = f"{len(stops)} idle resource(s) of {len(ready)} READY ({mode})" + (
            ": " + ", ".join(d.explain() for d in stops) if stops else ""
        )
        if kept:
            summary += "; kept: " + "; ".join(kept)
        if gave_up:
            tick.context.log.warning(
                f"idle guard gave up on {', '.join(gave_up)}: every run to "
                f"{'report' if dry_run else 'stop'} it failed; it is still idle and billing"
            )
        return TickOutcome(state, summary, requests)

    sensor = tick_sensor(
        GuardState,
        body,
        options,
        name=f"{name}_sensor",
        jobs=[_guard_job],
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=description
        or (
            f"Stops READY Together RL model resources unused for {idle_seconds:g} s"
            + (" (dry run: reports only)" if dry_run else "")
        ),
    )
    return _guard_job, sensor
