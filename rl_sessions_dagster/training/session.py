"""Launch a training session from an op, stopped however the run ends (even a cancel), so no run
leaves a GPU billing. No ``from __future__ import annotations``: Dagster reads ``context``."""

import contextlib
import dataclasses
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import dagster as dg
from pydantic import Field

from ..api import RLSessionsClient, TogetherRLError
from ..api.enums import ACTIVE_SESSION_STATUSES, ModelResourceStatus
from ..api.errors import DeadlineExceeded, RateLimitError, TransportError
from ..api.lifecycle import (
    ResourceSpec,
    StopOutcome,
    find_ready_resource,
    monotonic_deadline,
    stop_resource,
    stop_session,
    wait_for_resource_ready,
    wait_for_session_running,
)
from ..api.models import ModelResource, TrainingSession
from ..resource.together_rl import TogetherRLResource

#: Seconds the clean-up (stop session, stop resource) may take, retries included.
CLEANUP_SECONDS = 120.0


@dataclass
class LaunchedSession:
    """The client, the RUNNING session and its resource. ``created_resource``: made for this
    launch (so stopped at the end); ``cleanup``: the stop outcomes, once the block has exited."""

    client: RLSessionsClient
    session: TrainingSession
    resource: ModelResource
    created_resource: bool
    cleanup: list[StopOutcome] = field(default_factory=list)

    @property
    def session_id(self) -> str:
        return self.session.id


@contextlib.contextmanager
def launched_session(
    source: TogetherRLResource | RLSessionsClient,
    spec: ResourceSpec,
    *,
    display_name: str | None = None,
    metadata: dict[str, Any] | None = None,
    lora_config: dict[str, Any] | None = None,
    resume_from_checkpoint_id: str | None = None,
    load_optimizer: bool | None = None,
    reuse_ready_resource: bool = True,
    ready_timeout: float = 3600.0,
    running_timeout: float = 1800.0,
    poll_interval: float = 5.0,
    keep_session: bool = False,
    keep_resource: bool = False,
    log: Any = None,
) -> Iterator[LaunchedSession]:
    """Reuse your READY resource matching ``spec`` or create one, then a RUNNING session; on the
    way out stop both (the resource if created here). ``keep_*`` apply after success only; a stop
    the API refuses is reported, never forced. ``source``: the resource, or an open client."""
    logger = log or logging.getLogger(__name__)
    owned = not isinstance(source, RLSessionsClient)
    client = source if isinstance(source, RLSessionsClient) else source.get_client()
    resource: ModelResource | None = None
    created, ok = False, False
    session_id: str | None = None
    handle: LaunchedSession | None = None
    unsure: list[str] = []  # resources a create-session request may have reached unanswered
    session_kwargs: dict[str, Any] = dict(
        display_name=display_name,
        metadata=metadata,
        lora_config=lora_config,
        resume_from_checkpoint_id=resume_from_checkpoint_id,
        load_optimizer=load_optimizer,
    )
    try:
        resource = find_ready_resource(client, spec) if reuse_ready_resource else None
        session = None
        if resource is not None:
            logger.info(f"reusing READY model resource {resource.id}")
            try:
                session = _create_session(client, resource.id, session_kwargs, unsure)
            except RateLimitError:
                # The API shows no free slots; a full resource answers 429. Provision instead.
                logger.info(f"model resource {resource.id} is full; provisioning a new one")
                resource = None
        if resource is None:
            resource = _create_resource(client, spec, logger)
            created = True
            logger.info(f"created model resource {resource.id} ({resource.raw_status})")
            resource = wait_for_resource_ready(
                client, resource.id, timeout=ready_timeout, poll_interval=poll_interval
            )
        if session is None:
            session = _create_session(client, resource.id, session_kwargs, unsure)
        session_id = session.id
        logger.info(f"created session {session_id} on model resource {resource.id}")
        session = wait_for_session_running(
            client, session_id, timeout=running_timeout, poll_interval=poll_interval
        )
        handle = LaunchedSession(client, session, resource, created)
        yield handle
        ok = True
    finally:
        if session_id is None and unsure:
            session_id = _find_unanswered_session(
                client, unsure[-1], display_name, any_of_mine=created, logger=logger
            )
        stop_resource_id = resource.id if created and resource else None
        outcomes = _cleanup(
            client,
            session_id=None if (ok and keep_session) else session_id,
            resource_id=None if (ok and keep_resource) else stop_resource_id,
            logger=logger,
        )
        if handle is not None:
            handle.cleanup = outcomes
        if owned:
            client.close()


_PROVISIONING = (
    ModelResourceStatus.PENDING,
    ModelResourceStatus.CREATING,
    ModelResourceStatus.READY,
)


def _create_resource(client: RLSessionsClient, spec: ResourceSpec, logger: Any) -> ModelResource:
    """Creates are not retried (a retry could provision twice): when the answer is lost, your new
    resource matching ``spec`` is found and stopped before the error propagates."""
    before = {r.id for r in client.list_model_resources(status=_PROVISIONING, created_by="me")}
    try:
        return client.create_model_resource(spec.base_model, **spec.request_kwargs())
    except (TransportError, DeadlineExceeded) as exc:
        if isinstance(exc, TransportError) and not exc.may_have_reached_server:
            raise
        try:
            deadline = monotonic_deadline(CLEANUP_SECONDS / 4)
            found = client.list_model_resources(
                status=_PROVISIONING, created_by="me", deadline=deadline
            )
            new = [r.id for r in found if r.id not in before and spec.matches(r)]
        except TogetherRLError as lookup:
            logger.error(f"could not look for the unanswered model resource: {lookup}")
            raise exc from None
        if len(new) == 1:
            logger.warning(f"model resource {new[0]} was created but its answer was lost")
            _cleanup(client, session_id=None, resource_id=new[0], logger=logger)
        elif new:
            logger.warning(f"{len(new)} new model resources match; none stopped: {new}")
        raise


def _create_session(
    client: RLSessionsClient, resource_id: str, kwargs: dict[str, Any], unsure: list[str]
) -> TrainingSession:
    """Notes the resource when a lost answer may hide a session (a retry could start two)."""
    try:
        return client.create_session(resource_id, **kwargs)
    except (TransportError, DeadlineExceeded) as exc:
        if not isinstance(exc, TransportError) or exc.may_have_reached_server:
            unsure.append(resource_id)
        raise


def _find_unanswered_session(
    client: RLSessionsClient, rid: str, display_name: str | None, *, any_of_mine: bool, logger: Any
) -> str | None:
    """The one active session an unanswered create may have started on ``rid``, else None."""
    if display_name is None and not any_of_mine:
        logger.warning(
            f"a session create on model resource {rid} got no answer; without a "
            "display name its session cannot be told apart: check the resource's sessions"
        )
        return None
    try:
        mine = client.list_sessions(
            model_resources_id=rid,
            status=ACTIVE_SESSION_STATUSES,
            created_by="me",
            deadline=monotonic_deadline(CLEANUP_SECONDS / 4),
        )
        found = [s for s in mine if display_name is None or s.display_name == display_name]
    except TogetherRLError as exc:
        logger.error(f"could not look for the unanswered session on {rid}: {exc}")
        return None
    if len(found) != 1:
        if found:
            logger.warning(f"{len(found)} candidate sessions on {rid}; none stopped")
        return None
    logger.info(f"found session {found[0].id}, created by a request whose answer was lost")
    return found[0].id


def _cleanup(
    client: RLSessionsClient, *, session_id: str | None, resource_id: str | None, logger: Any
) -> list[StopOutcome]:
    """Stop the session, then the resource; never raise (the run must show the original error)."""
    outcomes: list[StopOutcome] = []
    deadline = monotonic_deadline(CLEANUP_SECONDS)
    if session_id is not None:
        try:
            outcomes.append(stop_session(client, session_id, deadline=deadline))
            logger.info(f"session {session_id}: {outcomes[-1].result}")
        except TogetherRLError as exc:
            logger.error(f"could not stop session {session_id}: {exc}")
    if resource_id is not None:
        try:
            outcome = stop_resource(client, resource_id, force=False, deadline=deadline)
            outcomes.append(outcome)
            if outcome.result == "refused_active_sessions":
                logger.warning(
                    f"model resource {resource_id} was created for this run but other sessions "
                    f"are attached; left running ({outcome.detail})"
                )
            elif outcome.result == "not_permitted":
                logger.error(f"not permitted to stop model resource {resource_id}")
            else:
                logger.info(f"model resource {resource_id}: {outcome.result}")
        except TogetherRLError as exc:
            logger.error(f"could not stop model resource {resource_id}: {exc}")
    return outcomes


class TrainingLaunchConfig(dg.Config):
    """Run config of a training op: the model resource, the session, and the waits."""

    base_model: str = Field(description="Base model (from supported-models).")
    lora_enabled: bool = True
    gpu_type: str | None = None
    num_generator_replicas: int | None = None
    inactive_timeout: int | None = Field(default=None, description="Seconds (300-86400).")
    base_weights_ref: str | None = None
    reuse_ready_resource: bool = Field(
        default=True, description="Attach to one of your READY resources with this configuration."
    )
    display_name: str | None = None
    wandb_entity: str | None = None
    wandb_project: str | None = None
    wandb_group: str | None = None
    wandb_run_name: str | None = None
    lora_rank: int | None = None
    lora_alpha: float | None = None
    resume_from_checkpoint_id: str | None = None
    load_optimizer: bool | None = None
    ready_timeout_seconds: float = 3600.0
    running_timeout_seconds: float = 1800.0
    poll_interval_seconds: float = 5.0
    keep_resource: bool = Field(
        default=False, description="Leave a resource created by this run up after success."
    )

    @contextlib.contextmanager
    def launch(
        self, context: dg.OpExecutionContext, together: TogetherRLResource
    ) -> Iterator[LaunchedSession]:
        """:func:`launched_session` as configured, logging to the run and tagged with its ids."""
        fields = {f.name for f in dataclasses.fields(ResourceSpec)} & type(self).model_fields.keys()
        spec = ResourceSpec(**self.model_dump(include=fields))
        wandb = {k: getattr(self, f"wandb_{k}") for k in ("entity", "project", "group", "run_name")}
        wandb = {k: v for k, v in wandb.items() if v is not None}
        lora = {k: v for k, v in {"rank": self.lora_rank, "alpha": self.lora_alpha}.items() if v}
        with launched_session(
            together,
            spec,
            display_name=self.display_name,
            metadata={"wandb": wandb} if wandb else None,
            lora_config=lora or None,
            resume_from_checkpoint_id=self.resume_from_checkpoint_id,
            load_optimizer=self.load_optimizer,
            reuse_ready_resource=self.reuse_ready_resource,
            ready_timeout=self.ready_timeout_seconds,
            running_timeout=self.running_timeout_seconds,
            poll_interval=self.poll_interval_seconds,
            keep_resource=self.keep_resource,
            log=context.log,
        ) as launched:
            ids = {"session_id": launched.session_id, "model_resources_id": launched.resource.id}
            context.instance.add_run_tags(
                context.run_id, {f"together/{k}": v for k, v in ids.items()}
            )
            yield launched
