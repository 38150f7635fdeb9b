"""Dagster Components (``defs.yaml``) for Together RL; found by ``dg`` through the
``dagster_dg_cli.registry_modules`` entry point."""

from .together_rl import TogetherRLComponent
from .translation import TogetherRLAssetProps, TogetherRLTranslator, translate

__all__ = ["TogetherRLAssetProps", "TogetherRLComponent", "TogetherRLTranslator", "translate"]
