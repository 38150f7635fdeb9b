"""``TogetherRLResource``: configuration only; the HTTP work lives in the API client.

Following dagster-dbt's cloud_v2 split, the resource is small and serialisable and builds a
fresh :class:`~rl_sessions_dagster.api.RLSessionsClient` in :meth:`get_client`. Nothing here
calls the API at definition load.
"""

from typing import TYPE_CHECKING, Any

import dagster as dg
from pydantic import Field

from .api import API_KEY_ENV, DEFAULT_BASE_URL, RetryPolicy, ServerClock

if TYPE_CHECKING:  # imported in get_client: the client (and httpx) load when a tick needs it
    from .api import RLSessionsClient

_SECRET: dict[str, Any] = {"dagster__is_secret": True}


class TogetherRLResource(dg.ConfigurableResource):
    """Access to Together AI's RL (post-training) API.

    Example::

        import dagster as dg
        from rl_sessions_dagster import TogetherRLResource

        defs = dg.Definitions(
            resources={"together": TogetherRLResource(api_key=dg.EnvVar("TOGETHER_API_KEY"))},
        )

    Point ``base_url`` at :class:`rl_sessions_dagster.testing.RLSimulator` in tests.
    """

    api_key: str | None = Field(
        default=None,
        repr=False,
        json_schema_extra=_SECRET,
        description=(
            "Together API key, e.g. dg.EnvVar('TOGETHER_API_KEY'). Masked in the UI and never "
            f"printed. When unset, the {API_KEY_ENV} environment variable is read at use time."
        ),
    )
    base_url: str | None = Field(
        default=None,
        description=(
            f"API origin (default {DEFAULT_BASE_URL}, or the TOGETHER_BASE_URL environment "
            "variable as in the official SDK); request paths carry /v1. http:// is accepted "
            "only for loopback hosts (the local simulator)."
        ),
    )
    request_timeout: float = Field(
        default=30.0, description="Seconds for one HTTP attempt (connect, read, write, pool)."
    )
    max_attempts: int = Field(
        default=4,
        description="Attempts per call on transport errors, 408, 429 and 5xx (1 = no retry).",
    )
    backoff_initial: float = Field(
        default=0.5, description="First exponential backoff delay in seconds (jitter added)."
    )
    backoff_max: float = Field(
        default=8.0, description="Largest exponential backoff delay in seconds (before jitter)."
    )
    backoff_jitter: float = Field(
        default=0.5, description="Upper bound of the random seconds added to each backoff delay."
    )
    retry_after_cap: float = Field(
        default=30.0, description="Longest Retry-After the client will honour, in seconds."
    )
    call_deadline: float | None = Field(
        default=None,
        description="Total seconds one call may take, retries and sleeps included (None: no "
        "limit beyond max_attempts). Sensors pass their own tick budget on top of this.",
    )

    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(
            max_attempts=self.max_attempts,
            backoff_initial=self.backoff_initial,
            backoff_max=self.backoff_max,
            jitter=self.backoff_jitter,
            retry_after_cap=self.retry_after_cap,
            deadline=self.call_deadline,
        )

    def get_client(self, *, server_clock: ServerClock | None = None) -> "RLSessionsClient":
        """A new client; close it (or use ``with``) when done.

        Raises :class:`~rl_sessions_dagster.api.ConfigurationError` naming ``TOGETHER_API_KEY``
        when no key is configured, and for a malformed or plain-http non-loopback base URL.
        """
        from .api.client import RLSessionsClient

        return RLSessionsClient(
            api_key=self.api_key,
            base_url=self.base_url,
            timeout=self.request_timeout,
            retry=self.retry_policy(),
            on_response=server_clock,
        )


__all__ = ["ServerClock", "TogetherRLResource"]
