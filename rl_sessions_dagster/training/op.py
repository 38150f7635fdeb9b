"""A training op: :func:`build_training_op` wraps :func:`~.session.launched_session` around a
user's training function; its run config (:class:`TrainingLaunchConfig`) describes the model
resource and the session.

No ``from __future__ import annotations`` here: Dagster must see the real ``context`` type.
"""

from collections.abc import Callable
from typing import Any

import dagster as dg
from pydantic import Field

from ..api.lifecycle import ResourceSpec
from ..resource.together_rl import TogetherRLResource
from .session import LaunchedSession, launched_session

__all__ = ["TrainingLaunchConfig", "build_training_op"]


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

    def spec(self) -> ResourceSpec:
        return ResourceSpec(
            base_model=self.base_model,
            lora_enabled=self.lora_enabled,
            gpu_type=self.gpu_type,
            num_generator_replicas=self.num_generator_replicas,
            inactive_timeout=self.inactive_timeout,
            base_weights_ref=self.base_weights_ref,
        )

    def session_kwargs(self) -> dict[str, Any]:
        wandb = {
            k: v
            for k, v in {
                "entity": self.wandb_entity,
                "project": self.wandb_project,
                "group": self.wandb_group,
                "run_name": self.wandb_run_name,
            }.items()
            if v is not None
        }
        lora = {k: v for k, v in {"rank": self.lora_rank, "alpha": self.lora_alpha}.items() if v}
        return {
            "display_name": self.display_name,
            "metadata": {"wandb": wandb} if wandb else None,
            "lora_config": lora or None,
            "resume_from_checkpoint_id": self.resume_from_checkpoint_id,
            "load_optimizer": self.load_optimizer,
        }


#: ``train(context, launched) -> result``: runs while the session is RUNNING.
TrainFn = Callable[[dg.OpExecutionContext, LaunchedSession], Any]


def build_training_op(
    train_fn: TrainFn,
    *,
    name: str = "together_rl_training",
    resource_key: str = "together",
    description: str | None = None,
    tags: dict[str, str] | None = None,
) -> dg.OpDefinition:
    """An op that launches a session (per its ``TrainingLaunchConfig``), calls
    ``train_fn(context, launched)`` and stops the session, and the resource if created for the
    run, however the op ends (success, exception, cancelled run). The run gets
    ``together/session_id`` and ``together/model_resources_id`` tags once they exist."""

    @dg.op(
        name=name,
        required_resource_keys={resource_key},
        description=description or (train_fn.__doc__ or "Train on a Together RL session."),
        tags=tags,
    )
    def _training_op(context: dg.OpExecutionContext, config: TrainingLaunchConfig) -> Any:
        resource: TogetherRLResource = getattr(context.resources, resource_key)
        with launched_session(
            resource,
            config.spec(),
            reuse_ready_resource=config.reuse_ready_resource,
            ready_timeout=config.ready_timeout_seconds,
            running_timeout=config.running_timeout_seconds,
            poll_interval=config.poll_interval_seconds,
            keep_resource=config.keep_resource,
            log=context.log,
            **config.session_kwargs(),
        ) as launched:
            context.instance.add_run_tags(
                context.run_id,
                {
                    "together/session_id": launched.session_id,
                    "together/model_resources_id": launched.resource.id,
                },
            )
            return train_fn(context, launched)

    return _training_op
