"""``translation:`` in YAML and a translator in Python rewrite every asset spec the Component
makes (checkpoint, sessions table, spend, evaluation, report, champion), as dagster-fivetran's
Component does; keys stay with each section's own ``key:``."""

import re
import textwrap
from datetime import timedelta

import dagster as dg
import pytest

from rl_sessions_dagster import TogetherRLComponent
from rl_sessions_dagster.components.translation import (
    ROLES,
    TogetherRLAssetProps,
    TogetherRLTranslator,
    translate,
)
from tests.components.support import defs_for, dg_check, scaffolded_project

ALL = textwrap.dedent(
    """
    spend: {cron_schedule: "0 * * * *"}
    evaluation:
      items: [{a: 1, b: 2, expected: 3}]
      prompt_template: "What is {a} + {b}?"
      graders: [{type: numeric}]
    report: {}
    champion: {metric: numeric}
    """
)

KEYS = {
    "checkpoint": "together/rl_inference_checkpoint",
    "sessions_table": "together/rl_sessions_table",
    "spend": "together/rl_spend",
    "evaluation": "together/checkpoint_evaluation",
    "report": "together/session_report",
    "champion": "together/sweep_champion",
}


def specs(defs: dg.Definitions) -> dict[str, dg.AssetSpec]:
    return {s.key.to_user_string(): s for s in defs.resolve_all_asset_specs()}


def test_without_translation_every_asset_keeps_the_library_spec():
    got = specs(defs_for(ALL))
    assert set(got) == set(KEYS.values())
    assert {s.group_name for s in got.values()} == {"together_rl"}
    assert all(not s.owners for s in got.values())


def test_yaml_translation_sets_group_owners_tags_kinds_of_each_asset():
    yaml = ALL + textwrap.dedent(
        """
        translation:
          group_name: rl_{{ props.role }}
          owners: [team:ml]
          tags: {team: ml, role: "{{ props.role }}"}
          kinds: [wandb]
          automation_condition: "{{ dg.AutomationCondition.on_missing() }}"
        """
    )
    defs = defs_for(yaml)
    dg.Definitions.validate_loadable(defs)
    got = specs(defs)
    for role, key in KEYS.items():
        spec = got[key]
        assert spec.group_name == f"rl_{role}", key
        assert spec.owners == ["team:ml"], key
        assert spec.tags["team"] == "ml" and spec.tags["role"] == role, key
        assert spec.kinds == {"wandb"}, key  # as Dagster's translation: kinds replace
        assert spec.automation_condition is not None, key


def test_translation_templates_see_the_spec_and_the_key():
    yaml = ALL + 'translation:\n  description: "{{ spec.description or props.key }} (ours)"\n'
    got = specs(defs_for(yaml))
    assert got[KEYS["report"]].description.endswith(" (ours)")


def test_translation_cannot_move_a_key_and_says_where_keys_are_set():
    with pytest.raises(dg.DagsterInvalidDefinitionError, match=r"checkpoint_asset\.key"):
        defs_for(ALL + "translation:\n  key_prefix: mine\n")


def test_a_python_translator_subclass_rewrites_each_spec():
    class Owners(TogetherRLComponent):
        def get_asset_spec(self, props: TogetherRLAssetProps) -> dg.AssetSpec:
            spec = super().get_asset_spec(props)
            return spec.replace_attributes(owners=[f"{props.role}@example.com"])

    component = Owners.resolve_from_yaml(ALL + "translation: {group_name: rl}\n")
    got = specs(dg.build_defs_for_component(component=component))
    for role, key in KEYS.items():
        assert got[key].owners == [f"{role}@example.com"]
        assert got[key].group_name == "rl"


def test_translate_applies_a_translator_to_definitions_built_in_python():
    class Tagged(TogetherRLTranslator):
        def get_asset_spec(self, props: TogetherRLAssetProps) -> dg.AssetSpec:
            return props.spec.merge_attributes(tags={"role": props.role})

    @dg.asset
    def mine() -> None: ...

    defs = translate(dg.Definitions(assets=[mine, dg.AssetSpec("ext")]), "report", Tagged())
    assert {s.tags["role"] for s in defs.resolve_all_asset_specs()} == {"report"}
    assert "report" in ROLES


def test_translation_can_replace_the_derived_freshness_policy():
    got = specs(defs_for(ALL))
    assert got[KEYS["sessions_table"]].freshness_policy is not None
    policy = "dg.FreshnessPolicy.time_window(fail_window=datetime.timedelta(hours=4))"
    yaml = ALL + f'translation:\n  freshness_policy: "{{{{ {policy} }}}}"\n'
    got = specs(defs_for(yaml))[KEYS["spend"]].freshness_policy
    assert got == dg.FreshnessPolicy.time_window(fail_window=timedelta(hours=4))


TRANSLATION_YAML = """\
type: rl_sessions_dagster.TogetherRLComponent

attributes:
  translation:
    group_name: rl_{{ props.role }}
    owners: [team:ml]
"""


@pytest.mark.slow
def test_dg_checks_pass_with_translation_and_name_a_misspelled_key_at_its_line(tmp_path):
    project = scaffolded_project(tmp_path, "rl-tr")
    for what in ("yaml", "defs"):
        done = dg_check(project, TRANSLATION_YAML, what)
        assert done.returncode == 0, done.stdout + done.stderr
    done = dg_check(project, TRANSLATION_YAML.replace("owners:", "ownrs:"), "yaml")
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "ownrs" in out, out[-4000:]
    assert re.search(r"defs\.yaml:6 - ", out), out[-4000:]
    assert "Traceback" not in out, out[-4000:]


def test_translate_keeps_assets_it_cannot_map():
    source = dg.SourceAsset("legacy")
    defs = translate(dg.Definitions(assets=[source]), "report", TogetherRLTranslator())
    assert list(defs.assets or []) == [source]
