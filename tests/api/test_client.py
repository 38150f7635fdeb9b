"""RLSessionsClient: configuration, and every one of the 29 endpoints against the simulator."""

from __future__ import annotations

import pytest

from rl_sessions_dagster.api import ConfigurationError, RLSessionsClient
from rl_sessions_dagster.version import __version__

from .conftest import KEY

# -- configuration ---------------------------------------------------------------------------------


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOGETHER_API_KEY", raising=False)
    monkeypatch.delenv("TOGETHER_BASE_URL", raising=False)


def test_missing_key_names_the_env_var(no_env: None) -> None:
    with pytest.raises(ConfigurationError, match="TOGETHER_API_KEY"):
        RLSessionsClient()
    with pytest.raises(ConfigurationError, match="TOGETHER_API_KEY"):
        RLSessionsClient("")


def test_key_and_base_url_fall_back_to_env(no_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with RLSessionsClient(KEY) as client:
        assert client.base_url == "https://api.together.ai"
    monkeypatch.setenv("TOGETHER_API_KEY", KEY)
    monkeypatch.setenv("TOGETHER_BASE_URL", "https://proxy.example/together/v1/")
    with RLSessionsClient() as client:
        assert client.base_url == "https://proxy.example/together"
        assert client._http.headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("https://api.together.ai", "https://api.together.ai"),
        ("https://api.together.ai/", "https://api.together.ai"),
        ("https://api.together.ai/v1", "https://api.together.ai"),
        ("https://api.together.ai/v1/", "https://api.together.ai"),
        ("  HTTPS://API.Together.ai/v1  ", "https://api.together.ai"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000"),
        ("http://127.3.4.5:9", "http://127.3.4.5:9"),
        ("http://localhost:8000", "http://localhost:8000"),
        ("http://[::1]:8000/", "http://[::1]:8000"),
    ],
)
def test_base_url_is_normalised(given: str, expected: str) -> None:
    with RLSessionsClient(KEY, base_url=given) as client:
        assert client.base_url == expected


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ("http://api.together.ai", "plain http"),
        ("http://10.0.0.5:8000", "plain http"),
        ("http://127.0.0.1.evil.example", "plain http"),
        ("ftp://api.together.ai", "scheme"),
        ("api.together.ai", "scheme"),
        ("https://", "no host"),
        (f"https://user:{KEY}@api.together.ai", "credentials"),
        ("https://api.together.ai/v1?x=1", "query"),
    ],
)
def test_bad_base_urls_are_refused_at_construction(given: str, reason: str) -> None:
    with pytest.raises(ConfigurationError, match=reason) as info:
        RLSessionsClient(KEY, base_url=given)
    assert KEY not in str(info.value)


def test_repr_and_vars_do_not_show_the_key() -> None:
    with RLSessionsClient(KEY, user_agent_extra="my-app/2") as client:
        assert repr(client) == "RLSessionsClient(base_url='https://api.together.ai')"
        assert KEY not in repr(client) and KEY not in str(client)
        agent = client._http.headers["user-agent"]
        assert agent.startswith(f"rl-sessions-dagster/{__version__} httpx/")
        assert " python/" in agent and agent.endswith(" my-app/2")


def test_close_leaves_a_caller_owned_http_client_open() -> None:
    import httpx

    own = httpx.Client()
    with RLSessionsClient(KEY, http_client=own) as client:
        assert client._http is own and own.headers["authorization"] == f"Bearer {KEY}"
    assert not own.is_closed
    own.close()
