"""The ``report:`` section of ``TogetherRLComponent``: one report per finished session.

Builds :func:`~rl_sessions_dagster.assets.build_session_report_asset` and, unless
``route: false``, routes the terminal session events to it on the Component's sensor (each
run is tagged with the session id the report reads). Scores come from the evaluation asset
(the ``evaluation:`` section's key unless ``evaluation_key`` is given), spend from the spend
tables (the ``spend:`` section's ``db_path`` unless ``spend_db_path`` is given).
"""

from collections.abc import Sequence
from typing import Literal

import dagster as dg
from pydantic import Field

from ..assets import build_session_report_asset
from ..assets.report import REPORT_ASSET_KEY
from ..partitions import EVALUATION_ASSET_KEY
from ..sensors import EventRoute
from ..sensors.options import event_kinds
from .schema import Section

__all__ = ["ReportSection"]

TerminalKind = Literal["session_stopped", "session_error", "session_expired"]
_TERMINAL_KINDS: tuple[TerminalKind, ...] = ("session_error", "session_expired", "session_stopped")


class ReportSection(Section):
    """A report per finished session: final status, error code and message, steps,
    checkpoints with their scores, spend and the W&B link."""

    enabled: bool = Field(default=True, description="false: no report asset, no route.")
    key: str = Field(default=REPORT_ASSET_KEY.to_user_string(), description="Asset key.")
    job_name: str = Field(
        default="together_rl_session_report", description="Name of the job the report runs use."
    )
    event_kinds: list[TerminalKind] = Field(
        default_factory=lambda: list(_TERMINAL_KINDS),
        description="Which session events run a report (default: stopped, error, expired).",
    )
    route: bool = Field(
        default=True,
        description="Route event_kinds to the report on the Component's sensor (false: route "
        "them yourself under sessions.routes:).",
    )
    metric: str = Field(default="score", description="Evaluation metadata shown per checkpoint.")
    evaluation_key: str | None = Field(
        default=None, description="Evaluation asset (default: the evaluation: section's key)."
    )
    spend_db_path: str | None = Field(
        default=None, description="Spend tables (default: the spend: section's db_path)."
    )

    def build(
        self,
        *,
        resource_key: str,
        group_name: str | None,
        evaluation_key: str | None,
        spend_db_path: str | None,
    ) -> dg.AssetsDefinition:
        eval_key = self.evaluation_key or evaluation_key or EVALUATION_ASSET_KEY.to_user_string()
        return build_session_report_asset(
            key=dg.AssetKey.from_user_string(self.key),
            resource_key=resource_key,
            evaluation_key=dg.AssetKey.from_user_string(eval_key),
            metric=self.metric,
            spend_db_path=self.spend_db_path or spend_db_path,
            group_name=group_name,
        )

    def routes(self, existing: Sequence[EventRoute]) -> list[EventRoute]:
        """The route of the terminal events to the report (raises if one of them is already
        routed under sessions.routes:: each kind goes to one route)."""
        if not self.enabled or not self.route:
            return []
        kinds = event_kinds(self.event_kinds)
        taken = sorted(k.value for r in existing for k in r.kinds & kinds)
        if taken:
            raise ValueError(
                f"report: {taken} already routed under sessions.routes:; remove them there or set "
                "report.route: false"
            )
        return [
            EventRoute(
                kinds,
                assets=dg.AssetSelection.assets(dg.AssetKey.from_user_string(self.key)),
                job_name=self.job_name,
            )
        ]
