"""The keyset index behind pagination."""

from __future__ import annotations

from rl_sessions_dagster.testing.simulator.index import OrderedIndex


def test_iteration_is_descending_and_starts_after_the_cursor() -> None:
    idx = OrderedIndex()
    idx.load(((i, f"id{i:02d}"), "A" if i % 2 else "B") for i in range(10))
    assert [k[0] for k in idx.iter_desc(None)] == list(range(9, -1, -1))
    assert [k[0] for k in idx.iter_desc((5, "id05"))] == [4, 3, 2, 1, 0]
    assert [k[0] for k in idx.iter_desc((5, "id05"), ["A"])] == [3, 1]
    assert [k[0] for k in idx.iter_desc(None, ["A", "B"])] == list(range(9, -1, -1))
    assert list(idx.iter_desc(None, ["C"])) == []


def test_add_move_and_counts() -> None:
    idx = OrderedIndex()
    for i in (3, 1, 2):
        idx.add((i, str(i)), "A")
    idx.move((2, "2"), "A", "B")
    idx.move((2, "2"), "B", "B")
    assert [k[0] for k in idx.iter_desc(None, ["A"])] == [3, 1]
    assert idx.part_counts() == {"A": 2, "B": 1} and idx.count() == 3 == len(idx)
    assert idx.count("B") == 1
    idx.clear()
    assert len(idx) == 0


def test_ties_break_on_id() -> None:
    idx = OrderedIndex()
    for ident in ("b", "c", "a"):
        idx.add((7, ident), "A")
    assert [k[1] for k in idx.iter_desc(None)] == ["c", "b", "a"]
    assert [k[1] for k in idx.iter_desc((7, "b"))] == ["a"]
