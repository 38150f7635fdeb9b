"""The score line: a session's scores by step as text that reads as a line."""

from hypothesis import given
from hypothesis import strategies as st

from rl_sessions_dagster.partitions import score_line


def test_the_line_follows_the_steps_not_the_order_given():
    assert score_line([(60, 0.9), (20, 0.4), (40, 0.65)]) == "▁▅█ 0.400 → 0.900, steps 20-60"
    assert score_line([(20, 0.5), (40, 0.5)]) == "▁▁ 0.500 → 0.500, steps 20-40"
    assert score_line([(7, 0.25)]) == "▁ 0.250 → 0.250, step 7"
    assert score_line([]) == ""


@given(st.lists(st.tuples(st.integers(0, 10**6), st.floats(0, 1)), min_size=1, max_size=60))
def test_one_bar_per_score_lowest_and_highest_at_the_ends_of_the_scale(points):
    bars = score_line(points).split(" ")[0]
    assert len(bars) == len(points)
    assert set(bars) <= set("▁▂▃▄▅▆▇█")
    values = [v for _, v in sorted(points)]
    assert bars[values.index(min(values))] == "▁"
    if max(values) > min(values):
        assert bars[values.index(max(values))] == "█"
