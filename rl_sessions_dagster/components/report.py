"""The ``report:`` section: one report per finished session, routed from its terminal event."""

from typing import Literal, get_args

import dagster as dg
from pydantic import Field

from ..assets import build_session_report_asset
from ..assets.report import REPORT_ASSET_KEY
from .champion import ChampionSection
from .schema import Section
from .sensors import copied_field

TerminalKind = Literal["session_stopped", "session_error", "session_expired"]


class ReportSection(Section):
    """Final status, error, steps, checkpoints with scores, spend and W&B link of a session."""

    enabled: bool = Field(default=True, description="false: no report asset, no route.")
    key: str = Field(default=REPORT_ASSET_KEY.to_user_string(), description="Asset key.")
    job_name: str = Field(
        default="together_rl_session_report", description="Name of the job the report runs use."
    )
    event_kinds: list[TerminalKind] = Field(
        default_factory=lambda: sorted(get_args(TerminalKind)),
        description="Which session events run a report (default: stopped, error, expired).",
    )
    route: bool = Field(
        default=True,
        description="Route event_kinds here (false: route them under sessions.routes:).",
    )
    metric: str = Field(default="score", description="Evaluation metadata shown per checkpoint.")
    evaluation_key: str | None = copied_field(ChampionSection, "evaluation_key")
    spend_db_path: str | None = Field(
        default=None, description="Spend tables (default: the spend: section's db_path)."
    )

    def build(
        self, resource_key: str, group_name: str | None, evaluation_key: str, spend_db: str | None
    ) -> dg.Definitions:
        report = build_session_report_asset(
            key=dg.AssetKey.from_user_string(self.key),
            resource_key=resource_key,
            evaluation_key=dg.AssetKey.from_user_string(self.evaluation_key or evaluation_key),
            metric=self.metric,
            spend_db_path=self.spend_db_path or spend_db,
            group_name=group_name,
        )
        return dg.Definitions(assets=[report])
