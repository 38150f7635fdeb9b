"""Shared fixtures for the API client tests: a simulator on 127.0.0.1 and clients that never sleep."""

from __future__ import annotations

KEY = "sk-SECRET-canary-123"
