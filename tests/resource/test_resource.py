"""TogetherRLResource: secret handling, EnvVar resolution, client configuration."""

import dagster as dg
import pytest

from rl_sessions_dagster import TogetherRLResource
from rl_sessions_dagster.api import ServerClock
from rl_sessions_dagster.api.errors import ConfigurationError

KEY = "sk-resource-CANARY-42"
pytestmark = pytest.mark.sim(api_key=KEY)


def test_key_is_a_masked_secret_and_not_in_repr():
    resource = TogetherRLResource(api_key=KEY)
    assert KEY not in repr(resource) and KEY not in str(resource)
    field = TogetherRLResource.to_config_schema().as_field().config_type.fields["api_key"]
    assert field.is_secret


def test_env_var_is_resolved_at_use_time(sim, monkeypatch):
    monkeypatch.setenv("RL_TEST_KEY", KEY)

    @dg.asset
    def probe(together: TogetherRLResource) -> int:
        with together.get_client() as client:
            return len(list(client.list_sessions()))

    defs = dg.Definitions(
        assets=[probe],
        resources={
            "together": TogetherRLResource(api_key=dg.EnvVar("RL_TEST_KEY"), base_url=sim.base_url)
        },
    )
    result = dg.materialize([probe], resources=defs.resources)
    assert result.success and sim.requests.count() == 1


def test_missing_key_is_a_configuration_error_naming_the_variable(monkeypatch):
    monkeypatch.delenv("TOGETHER_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="TOGETHER_API_KEY"):
        TogetherRLResource().get_client()


def test_plain_http_to_a_remote_host_is_refused():
    with pytest.raises(ConfigurationError):
        TogetherRLResource(api_key=KEY, base_url="http://api.example.com").get_client()


def test_knobs_reach_the_client_and_the_server_clock_reads_date(sim):
    clock = ServerClock()
    resource = TogetherRLResource(
        api_key=KEY, base_url=sim.base_url, max_attempts=7, request_timeout=3.0, call_deadline=9.0
    )
    with resource.get_client(server_clock=clock) as client:
        assert client.retry.max_attempts == 7 and client.retry.deadline == 9.0
        client.list_supported_models()
    assert clock.last_ms is not None
    assert abs(clock.last_ms - sim.world.now().timestamp() * 1000) < 5_000
