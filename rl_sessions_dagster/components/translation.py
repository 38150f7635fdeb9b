"""The user's rewrite of every asset spec the Component makes: ``translation:`` in YAML or a
:class:`TogetherRLTranslator`. Keys stay each section's ``key:``: routes and jobs use them."""

import itertools
from collections.abc import Sequence
from datetime import timedelta
from typing import Annotated, NamedTuple, TypeAlias

import dagster as dg
from dagster.components.utils.translation import TranslationFn, TranslationFnResolver
from pydantic import create_model
from pydantic.fields import FieldInfo

#: What each asset is, as ``props.role`` reads in ``translation:`` templates.
ROLES = ("checkpoint", "sessions_table", "spend", "evaluation", "report", "champion")


class TogetherRLAssetProps(NamedTuple):
    """One asset the library made: its ``role`` (one of :data:`ROLES`) and its ``spec``."""

    role: str
    spec: dg.AssetSpec

    @property
    def key(self) -> dg.AssetKey:
        return self.spec.key


class TogetherRLTranslator:
    """Override :meth:`get_asset_spec` to change the specs (group, owners, tags, ...) it makes."""

    def get_asset_spec(self, props: TogetherRLAssetProps) -> dg.AssetSpec:
        return props.spec


_KEYS = "checkpoint_asset.key, evaluation.key, report.key, champion.key, spend.key"
_KEY_HELP = f"Refused here: set each asset's key in its own section ({_KEYS})."
#: Dagster's AssetSpec attributes, each described, without ``partitions_def`` (the sensors'own).
TranslationModel = create_model(  # type: ignore[call-overload]
    "TogetherRLTranslationModel",
    __base__=dg.Model,
    **{
        name: (
            field.annotation,
            FieldInfo.merge_field_infos(
                field, description=_KEY_HELP if name == "key" else (field.description or name)
            ),
        )
        for name, field in dg.AssetAttributesModel.model_fields.items()
        if name != "partitions_def"
    },
)

#: The ``translation:`` field: AssetSpec attributes, templated with ``props`` (role, key, spec).
ResolvedTogetherRLTranslationFn: TypeAlias = Annotated[
    TranslationFn[TogetherRLAssetProps],
    TranslationFnResolver[TogetherRLAssetProps](
        template_vars_for_translation_fn=lambda props: {"props": props},
        model_field_type=TranslationModel,
    ),
]


def translate(defs: dg.Definitions, role: str, translator: TogetherRLTranslator) -> dg.Definitions:
    """``defs`` with each asset spec translated; a changed key is refused."""

    def one(spec: dg.AssetSpec) -> dg.AssetSpec:
        new = translator.get_asset_spec(TogetherRLAssetProps(role, spec))
        if new.key != spec.key:
            raise dg.DagsterInvalidDefinitionError(
                f"translation: the {role} asset's key {spec.key.to_user_string()!r} cannot "
                f"become {new.key.to_user_string()!r}: set the key in its own section ({_KEYS}), "
                "where the sensors' routes and jobs read it"
            )
        return new

    if not defs.assets:
        return defs
    specs = [a for a in defs.assets if isinstance(a, dg.AssetsDefinition | dg.AssetSpec)]
    others = [a for a in defs.assets if not isinstance(a, dg.AssetsDefinition | dg.AssetSpec)]
    return dg.Definitions(
        assets=[*dg.map_asset_specs(one, specs), *others],  # source assets: no spec to map
        asset_checks=defs.asset_checks,
        jobs=defs.jobs,
        schedules=defs.schedules,
        sensors=defs.sensors,
        resources=defs.resources,
    )


class Derived(TogetherRLTranslator):
    """Freshness and deps derived across sections, applied before (under) the user's translation."""

    def __init__(self, policy: dg.FreshnessPolicy | None = None, deps: Sequence[dg.AssetKey] = ()):
        self._policy, self._deps = policy, list(deps)

    def get_asset_spec(self, props: TogetherRLAssetProps) -> dg.AssetSpec:
        spec = props.spec
        if self._policy is not None:
            spec = spec.replace_attributes(freshness_policy=self._policy)
        return spec.merge_attributes(deps=self._deps) if self._deps else spec


def _field(text: str, low: int, high: int) -> set[int]:
    """The values one cron field matches (``*``, ``a-b``, ``a,b``, ``*/n``, ``a-b/n``)."""
    out: set[int] = set()
    for part in text.split(","):
        span, _, step = part.partition("/")
        if span == "*":
            start, stop = low, high
        elif "-" in span:
            a, b = span.split("-", 1)
            start, stop = int(a), int(b)
        else:
            start = int(span)
            stop = high if step else start
        out.update(range(start, stop + 1, int(step) if step else 1))
    return out


def cron_gap(cron_schedule: str) -> timedelta | None:
    """The longest gap between a numeric 5-field cron's ticks over a week; else None."""
    fields = cron_schedule.split()
    if len(fields) != 5 or fields[2] != "*" or fields[3] != "*":
        return None  # monthly schedules: beyond the week scanned
    try:
        minute, hour, dow = (
            _field(fields[i], lo, hi) for i, lo, hi in [(0, 0, 59), (1, 0, 23), (4, 0, 7)]
        )
    except ValueError:
        return None
    days = {d % 7 for d in dow}  # cron: 0 and 7 are Sunday; isoweekday() % 7 likewise
    ticks = [
        (day * 24 + h) * 60 + m
        for day in range(7)
        if ((day + 1) % 7) in days  # day 0 is a Monday
        for h in sorted(hour)
        for m in sorted(minute)
    ]
    if not ticks:
        return None
    gaps = [b - a for a, b in itertools.pairwise(ticks)] + [ticks[0] + 7 * 24 * 60 - ticks[-1]]
    return timedelta(minutes=max(gaps))


def schedule_freshness(cron_schedule: str) -> dg.FreshnessPolicy | None:
    """Warn when one refresh is missed, fail after two; half an interval on top for the run."""
    gap = cron_gap(cron_schedule)
    if gap is None:
        return None
    return dg.FreshnessPolicy.time_window(fail_window=gap * 2.5, warn_window=gap * 1.5)
