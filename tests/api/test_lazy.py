"""Checkpoint lists read from JSON are built on first use and read exactly as eager ones.

The payload corpus is read both ways, from JSON bytes (deferred) and from ``json.loads`` dicts
(built at once), and everything a caller can observe must agree: values, ``model_fields_set``
(``TrainingCheckpoint.registration`` depends on it), extras, dumps, equality and pickling.
"""

import copy
import json
import pickle
from pathlib import Path

import pytest

from rl_sessions_dagster.api import InferenceCheckpoint, Page, TrainingSession
from rl_sessions_dagster.api.pages import LazyList

FIXTURES = Path(__file__).parent / "fixtures"
SESSIONS = sorted(p.name for p in FIXTURES.glob("session__*.json"))


def _both(name: str) -> tuple[TrainingSession, TrainingSession]:
    raw = (FIXTURES / name).read_bytes()
    return TrainingSession.model_validate_json(raw), TrainingSession.model_validate(json.loads(raw))


@pytest.mark.parametrize("name", SESSIONS)
def test_deferred_and_eager_reads_agree(name: str) -> None:
    lazy, eager = _both(name)
    assert isinstance(lazy.inference_checkpoints, LazyList)
    assert len(lazy.inference_checkpoints) == len(eager.inference_checkpoints)  # before building
    for a, b in [
        *zip(lazy.inference_checkpoints, eager.inference_checkpoints, strict=True),
        *zip(lazy.training_checkpoints, eager.training_checkpoints, strict=True),
    ]:
        assert a == b
        assert a.model_fields_set == b.model_fields_set
        assert a.model_extra == b.model_extra
        assert a.registration == b.registration
    assert lazy == eager
    assert lazy.model_dump() == eager.model_dump()
    assert lazy.model_dump_json(by_alias=True, exclude_unset=True) == eager.model_dump_json(
        by_alias=True, exclude_unset=True
    )


def test_a_deferred_list_builds_once_and_behaves_like_a_list() -> None:
    lazy, _ = _both("session__current_sdk.json")
    checkpoints = lazy.inference_checkpoints
    first = checkpoints[0]
    assert checkpoints[0] is first  # built once, then kept
    assert checkpoints[-1] is list(checkpoints)[-1]
    assert checkpoints[:1] == [first]
    assert checkpoints == list(checkpoints) and checkpoints == tuple(checkpoints)
    assert isinstance(first, InferenceCheckpoint)
    assert pickle.loads(pickle.dumps(lazy)) == lazy
    assert copy.deepcopy(lazy) == lazy
    assert lazy.model_copy(deep=True) == lazy


def test_null_and_missing_lists_read_as_empty() -> None:
    page = Page[TrainingSession].model_validate_json(
        b'{"data": [{"id": "a", "inference_checkpoints": null}, {"id": "b"}]}'
    )
    for session in page.data:
        assert session.inference_checkpoints == [] and len(session.training_checkpoints) == 0
    built = TrainingSession(id="c", inference_checkpoints=[InferenceCheckpoint(id="k")])
    assert [c.id for c in built.inference_checkpoints] == ["k"]
    assert TrainingSession.model_validate(built) is built
