"""Spend arithmetic against a hand calculation, span observation, and the invariant that
session shares plus idle time add up to each resource's billed time."""

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rl_sessions_dagster.api.models import ModelResource
from rl_sessions_dagster.core.spend import (
    Attachment,
    ResourceSpan,
    compute_spend,
    observe_span,
    sweep_of_auto,
    sweep_totals,
)

T0 = 1_800_000_000_000
S = 1000


def test_hand_calculation():
    # $4/h resource READY for 3000 s; A 600-2400 s, B 1200-3000 s, idle 3000-3600 s.
    # [600,1200) A alone 600 s; [1200,2400) shared 1200 s -> 600 s each; [2400,3000) B 600 s;
    # [3000,3600) idle 600 s.  A = B = 1200 s = 1/3 h = $1.3333; idle $0.6667; total $3.3333.
    span = ResourceSpan("r", ready_from_ms=T0 + 600 * S, ready_until_ms=T0 + 3600 * S,
                        price_per_hour=4.0)  # fmt: skip
    a = Attachment("A", "r", T0 + 600 * S, T0 + 2400 * S, "sweep-x-1")
    b = Attachment("B", "r", T0 + 1200 * S, T0 + 3000 * S, "sweep-x-2")
    other = Attachment("C", "elsewhere", T0, None, "other")
    spend = compute_spend([span], [a, b, other], now_ms=T0 + 9999 * S)
    assert spend.resource_ms == {"r": 3000 * S}
    assert spend.resource_cost["r"] == pytest.approx(4.0 * 3000 / 3600)
    assert spend.session_ms == {"A": 1200 * S, "B": 1200 * S}
    assert spend.session_cost["A"] == pytest.approx(4.0 / 3)
    assert spend.session_cost["B"] == pytest.approx(4.0 / 3)
    assert spend.idle_cost["r"] == pytest.approx(4.0 * 600 / 3600)
    assert spend.total_cost == pytest.approx(10.0 / 3)
    assert sweep_totals(spend, [a, b]) == {
        "sweep-x": (2, pytest.approx(2 / 3), pytest.approx(8 / 3))
    }


def test_still_ready_resource_bills_until_now_and_unpriced_is_reported():
    span = ResourceSpan("r", ready_from_ms=T0, price_per_hour=None)
    spend = compute_spend([span], [Attachment("A", "r", T0 - 50 * S, None)], now_ms=T0 + 1800 * S)
    assert spend.resource_ms["r"] == 1800 * S and spend.unpriced == ["r"]
    assert spend.session_ms == {"A": 1800 * S} and spend.total_cost == 0


def resource(status: str, updated_s: int) -> ModelResource:
    return ModelResource.model_validate(
        {
            "id": "r",
            "status": f"MODEL_RESOURCES_STATUS_{status}",
            "updated_at": datetime.fromtimestamp((T0 + updated_s * S) / 1000, UTC).isoformat(),
        }
    )


def test_observe_span_through_the_lifecycle():
    span = observe_span(None, resource("PENDING", 0), now_ms=T0)
    assert span.ready_from_ms is None
    span = observe_span(span, resource("READY", 100), now_ms=T0 + 500 * S)
    assert span.ready_from_ms == T0 + 100 * S and span.source == "updated_at"
    span = observe_span(span, resource("READY", 400), now_ms=T0 + 900 * S)  # a later bump
    assert span.ready_from_ms == T0 + 100 * S
    span = observe_span(span, resource("STOPPING", 1000), now_ms=T0 + 1100 * S)
    span = observe_span(span, resource("STOPPED", 1030), now_ms=T0 + 1200 * S)
    assert span.ready_until_ms == T0 + 1000 * S and span.billed_ms(T0 + 10**9) == 900 * S
    # Never seen READY: billed from the first session, if any.
    late = observe_span(None, resource("STOPPED", 700), now_ms=T0, first_session_ms=T0 + 200 * S)
    assert late.source == "first_session" and late.billed_ms(T0) == 500 * S
    never = observe_span(None, resource("ERROR", 700), now_ms=T0)
    assert never.billed_ms(T0 + 10**9) == 0
    weird = observe_span(span, resource("HIBERNATING", 2000), now_ms=T0)
    assert weird.raw_status.endswith("HIBERNATING") and weird.ready_until_ms == T0 + 1000 * S


def test_sweep_of_auto():
    assert sweep_of_auto(Attachment("s", "r", 0, None, "gsm8k-lr3-seed2", "grp")) == "grp"
    assert sweep_of_auto(Attachment("s", "r", 0, None, "gsm8k-lr3-seed2")) == "gsm8k-lr3"
    assert sweep_of_auto(Attachment("s", "r", 0, None, "solo")) == "solo"
    assert sweep_of_auto(Attachment("s", "r", 0)) == "(none)"


INTERVALS = st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 5000) | st.none()), max_size=6)


@given(lo=st.integers(0, 3000), length=st.integers(0, 4000), intervals=INTERVALS,
       price=st.floats(0.1, 100))  # fmt: skip
def test_session_shares_plus_idle_equal_the_billed_time(lo, length, intervals, price):
    span = ResourceSpan("r", ready_from_ms=lo, ready_until_ms=lo + length, price_per_hour=price)
    atts = [
        Attachment(f"s{i}", "r", s, None if e is None else s + e)
        for i, (s, e) in enumerate(intervals)
    ]
    spend = compute_spend([span], atts, now_ms=9000)
    assert sum(spend.session_ms.values()) + spend.idle_ms["r"] == pytest.approx(length)
    total = sum(spend.session_cost.values()) + spend.idle_cost["r"]
    assert total == pytest.approx(spend.resource_cost["r"])
