"""``QuietSensorDefinition``: the class every sensor of this library is built with."""

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import dagster as dg

from ..resource.retry_log import tick_retry_log

if TYPE_CHECKING:
    from dagster._core.definitions.target import ExecutableDefinition


class QuietSensorDefinition(dg.SensorDefinition):
    """A ``SensorDefinition`` whose copies stay quiet.

    Dagster 1.13 copies a sensor (``with_attributes``) to bind resources to its jobs, passing
    back ``owners=[]``, which emits a ``BetaWarning`` on every definitions load. This copy
    passes no owners (these sensors never set any) and keeps the class.
    """

    def __init__(self, *, rl_fn: Callable[..., Any], **kwargs: Any) -> None:
        self._rl_fn = rl_fn
        self._rl_kwargs = kwargs
        super().__init__(evaluation_fn=_with_retry_log(rl_fn), **kwargs)

    def with_attributes(
        self,
        *,
        jobs: "Sequence[ExecutableDefinition] | None" = None,
        metadata: Any = None,
    ) -> dg.SensorDefinition:
        kwargs = dict(self._rl_kwargs)
        if jobs is not None:
            kwargs["jobs"] = list(jobs)
        if metadata is not None:
            kwargs["metadata"] = metadata
        return QuietSensorDefinition(rl_fn=self._rl_fn, **kwargs)


def _with_retry_log(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with the API retries of its tick written to the tick's log (``context.log``,
    which Dagster stores with the tick): the resource's clients pick the log up by themselves.
    A count is logged at the end unless the sensor's own summary line already gave it."""

    def evaluate(context: dg.SensorEvaluationContext) -> Any:
        with tick_retry_log(context.log) as retries:
            result = fn(context)
        if retries.count and not retries.summarised:
            context.log.info(retries.summary())
        return result

    evaluate.__name__ = getattr(fn, "__name__", "evaluate")
    evaluate.__doc__ = fn.__doc__
    return evaluate
