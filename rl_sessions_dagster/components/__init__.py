"""Dagster Components (``defs.yaml``) for Together RL, found by ``dg`` via an entry point."""

from .together_rl import TogetherRLComponent
from .translation import TogetherRLAssetProps, TogetherRLTranslator, translate

__all__ = ["TogetherRLAssetProps", "TogetherRLComponent", "TogetherRLTranslator", "translate"]
