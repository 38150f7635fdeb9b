"""Orchestrate Together AI RL sessions from Dagster."""
