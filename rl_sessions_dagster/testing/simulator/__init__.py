"""Local simulator of the Together RL HTTP service (exported by ``rl_sessions_dagster.testing``)."""
