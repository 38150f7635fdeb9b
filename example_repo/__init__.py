"""Example Dagster project for rl_sessions_dagster: `dagster dev -m example_repo.definitions`."""
