"""The sweep definition (shared by spend and the champion) and the champion's ranking rule:
ties and the order evaluations land in never change the answer."""

import itertools

from rl_sessions_dagster.core.spend import Attachment, sweep_of_auto
from rl_sessions_dagster.core.sweeps import Candidate, fold, rank, standing, sweep_name


def test_one_sweep_definition_for_spend_and_champion():
    assert sweep_name("lr-sweep", "gsm8k-lr3e-5-seed2") == "lr-sweep"
    assert sweep_name(None, "gsm8k-lr3e-5-seed2") == "gsm8k-lr3e-5"
    assert sweep_name(None, "solo") == "solo"
    assert sweep_name(None, None) == "(none)"
    assert sweep_name(None, "a_b_c", "_") == "a_b"
    for group, name in [("g", "x-1"), (None, "x-1"), (None, None), (None, "-x")]:
        a = Attachment("s", "r", 0, display_name=name, wandb_group=group)
        assert sweep_of_auto(a) == sweep_name(group, name)


def c(cid, value, step):
    return Candidate(partition=f"s/{step:06d}/{cid}", checkpoint_id=cid, value=value, step=step)


def test_ties_go_to_the_earliest_step_then_the_smallest_id_in_any_order():
    cands = [c("bbb", 0.8, 40), c("aaa", 0.8, 40), c("ccc", 0.8, 20), c("ddd", 0.5, 10)]
    answers = {(standing(p).champion, standing(p).runner_up) for p in itertools.permutations(cands)}
    assert answers == {(cands[2], cands[1])}
    assert standing(cands).margin == 0.0
    assert rank(cands, "lower")[0] == cands[3]


def test_min_candidates_and_nan():
    assert standing([c("a", 1.0, 1)], min_candidates=2).champion is None
    s = standing([c("a", float("nan"), 1), c("b", 0.1, 2)])
    assert s.champion is not None and s.champion.checkpoint_id == "b" and s.candidates == 1


def test_a_re_evaluation_replaces_the_earlier_score_and_no_value_drops_out():
    a, b = c("a", 0.9, 10), c("b", 0.7, 20)
    assert standing(fold([a, b], {})).champion == a
    lowered = c("a", 0.6, 10)
    after = fold([a, b], {a.partition: lowered})
    assert standing(after).champion == b and standing(after).runner_up == lowered
    assert fold([a, b], {a.partition: None}) == [b]
    assert Candidate.from_dict(a.to_dict()) == a
