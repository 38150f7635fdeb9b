"""What the service offers: supported base models with their hardware configurations, and the
cost estimate of a model resource. Drift-tolerant like every model here (see ``models.py``).
"""

from .models import APIModel

__all__ = [
    "CostEstimate",
    "FullTrainerConfig",
    "GeneratorConfig",
    "LoraTrainerConfig",
    "SamplingDefaults",
    "SupportedComputeConfig",
    "SupportedModel",
    "TrainerConfig",
]


class CostEstimate(APIModel):
    currency: str | None = None
    price_per_hour: float | None = None


class SamplingDefaults(APIModel):
    logprobs: int | None = None
    max_tokens: int | None = None
    n: int | None = None
    temperature: float | None = None


class GeneratorConfig(APIModel):
    """Inference limits of a GPU type (set when generator replicas can run on it)."""

    context_length: int | None = None
    sampling_defaults: SamplingDefaults | None = None


class FullTrainerConfig(APIModel):
    max_batch_size: int | None = None
    max_seq_length: int | None = None


class LoraTrainerConfig(APIModel):
    max_batch_size: int | None = None
    max_rank: int | None = None
    max_seq_length: int | None = None


class TrainerConfig(APIModel):
    """Training limits of a GPU type, per mode (a mode is absent when unsupported)."""

    full: FullTrainerConfig | None = None
    lora: LoraTrainerConfig | None = None


class SupportedComputeConfig(APIModel):
    """A validated hardware configuration for a supported base model."""

    gpu_type: str | None = None
    generator_config: GeneratorConfig | None = None
    trainer_config: TrainerConfig | None = None


class SupportedModel(APIModel):
    base_model: str
    default_gpu_type: str | None = None
    compute_configs: list[SupportedComputeConfig] | None = None
