"""Local simulator of the Together RL (post-training) HTTP service; see ``server.RLSimulator``.

Its public names are exported once, by :mod:`rl_sessions_dagster.testing`.
"""
