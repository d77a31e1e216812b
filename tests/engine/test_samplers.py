"""engine/samplers.py: each rule on hand-made tables, then properties of whole generations
through engine.generate with the fake diffusion backend."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import proposals, samplers
from engine.generate import generate, run
from engine.sampler_table import SAMPLERS as SAMPLER_TABLE
from engine.samplers import SAMPLERS
from engine.trace import GenerationConfig
from tests.fakes import MASK, FakeDiffusionBackend

NAMES = list(SAMPLERS)

T, F = True, False


def mask(*bits):
    return torch.tensor(bits, dtype=torch.bool)


def chosen(m: torch.Tensor) -> set[int]:
    return set(m.nonzero()[:, 0].tolist())


# --------------------------------------------------------------------------- schedules

@pytest.mark.parametrize(
    "m, s, expected",
    [(10, 4, [3, 3, 2, 2]), (8, 8, [1] * 8), (8, 1, [8]), (16, 5, [4, 3, 3, 3, 3]), (3, 5, [1, 1, 1, 0, 0])],
    ids=["10-over-4", "8-over-8", "8-over-1", "16-over-5", "3-over-5"],
)
def test_transfer_schedule(m, s, expected):
    assert proposals.transfer_schedule(m, s) == expected


# --------------------------------------------------------------------------- proposals

def test_top_k_keeps_the_k_largest():
    out = proposals.filter_logits(torch.tensor([[1.0, 4.0, 3.0, 2.0]]), top_k=2)
    assert torch.isinf(out[0, [0, 3]]).all() and out[0, 1] == 4.0 and out[0, 2] == 3.0


@pytest.mark.parametrize("top_p, kept", [(0.7, {0, 1}), (0.85, {0, 1, 2}), (0.3, {0}), (1.0, {0, 1, 2, 3})])
def test_top_p_keeps_the_smallest_prefix_reaching_p(top_p, kept):
    logits = torch.tensor([[0.5, 0.3, 0.15, 0.05]]).log()                     # mass before: 0, .5, .8, .95
    out = proposals.filter_logits(logits, top_p=top_p)
    assert set(torch.isfinite(out[0]).nonzero()[:, 0].tolist()) == kept


@pytest.mark.parametrize("top_p, kept", [(0.7, {0, 1}), (0.9, {0, 1, 2}), (0.3, {0}), (1.0, {0, 1, 2, 3})])
def test_nucleus_on_probabilities_renormalises(top_p, kept):
    probs = torch.tensor([[0.5, 0.3, 0.15, 0.05]])
    out = proposals.nucleus(probs, top_p)
    assert set(out[0].nonzero()[:, 0].tolist()) == kept
    torch.testing.assert_close(out[0, sorted(kept)], probs[0, sorted(kept)] / probs[0, sorted(kept)].sum())


def test_temperature_zero_is_argmax_with_softmax_probs():
    logits = torch.tensor([[0.1, 2.0, -1.0], [3.0, 0.0, 2.9]])
    tokens, probs = proposals.propose(logits, temperature=0.0)
    assert tokens.tolist() == [1, 0]
    torch.testing.assert_close(probs, torch.softmax(logits, -1))


def test_filtered_tokens_get_zero_probability():
    tokens, probs = proposals.propose(torch.tensor([[1.0, 4.0, 3.0, 2.0]]), temperature=1.0, top_k=2,
                                     generator=torch.Generator().manual_seed(0))
    assert probs[0, 0] == 0 and probs[0, 3] == 0 and tokens.item() in (1, 2)
    assert math.isclose(float(probs.sum()), 1.0, rel_tol=1e-6)


def test_greedy_confidence_ignores_the_sampling_filters():
    # nothing is sampled at T = 0: the confidence is the model's probability (Fast-dLLM v2)
    logits = torch.tensor([[1.0, 4.0, 3.0, 2.0]])
    tokens, probs = proposals.propose(logits, temperature=0.0, top_k=2, top_p=0.5)
    assert tokens.item() == 1
    torch.testing.assert_close(probs, torch.softmax(logits, -1))


def test_gumbel_noise_is_float64_and_seeded():
    a = proposals.gumbel_noise((3, 5), torch.Generator().manual_seed(1), torch.device("cpu"))
    b = proposals.gumbel_noise((3, 5), torch.Generator().manual_seed(1), torch.device("cpu"))
    c = proposals.gumbel_noise((3, 5), torch.Generator().manual_seed(2), torch.device("cpu"))
    assert a.dtype == torch.float64 and torch.equal(a, b) and not torch.equal(a, c)


def test_sampling_is_reproducible_and_follows_the_distribution():
    probs = torch.tensor([0.7, 0.2, 0.1])
    logits = probs.log().expand(4000, 3)
    first, p = proposals.propose(logits, temperature=1.0, generator=torch.Generator().manual_seed(0))
    again, _ = proposals.propose(logits, temperature=1.0, generator=torch.Generator().manual_seed(0))
    assert torch.equal(first, again)
    torch.testing.assert_close(p[0], probs)
    freq = torch.bincount(first, minlength=3).float() / 4000
    assert (freq - probs).abs().max() < 0.03


def test_temperature_sharpens_and_flattens():
    logits = torch.tensor([[2.0, 1.0, 0.0]])
    _, cold = proposals.propose(logits, temperature=0.5, generator=torch.Generator().manual_seed(0))
    _, hot = proposals.propose(logits, temperature=2.0, generator=torch.Generator().manual_seed(0))
    assert cold[0, 0] > torch.softmax(logits, -1)[0, 0] > hot[0, 0]


# --------------------------------------------------------------------------- selection rules

# Rows chosen so the three scores disagree: X has the highest p(top1) but a tiny margin.
X = [0.46, 0.44, 0.10, 0.00]   # p1 .46, margin .02, H = .948
Y = [0.40, 0.20, 0.20, 0.20]   # p1 .40, margin .20, H = 1.332
Z = [0.30, 0.30, 0.20, 0.20]   # p1 .30, margin 0,   H = 1.366
SCORED = torch.tensor([Z, Y, X])


def test_low_confidence_takes_top_k_by_confidence():
    conf = SCORED.max(-1).values
    assert chosen(samplers.low_confidence(conf, mask(T, T, T), 1)) == {2}
    assert chosen(samplers.low_confidence(conf, mask(T, T, T), 2)) == {1, 2}
    assert chosen(samplers.low_confidence(conf, mask(T, T, F), 1)) == {1}


def test_margin_orders_by_top1_minus_top2():
    assert chosen(samplers.margin(SCORED, mask(T, T, T), 1)) == {1}
    assert chosen(samplers.margin(SCORED, mask(T, T, T), 2)) == {1, 2}


def test_entropy_takes_lowest_entropy_first():
    assert chosen(samplers.entropy(SCORED, mask(T, T, T), 1)) == {2}
    assert chosen(samplers.entropy(SCORED, mask(T, T, T), 2)) == {1, 2}


def test_random_is_seeded_and_only_masked():
    def pick(seed):
        return chosen(samplers.random_order(mask(T, F, T, T, T, F), 2, torch.Generator().manual_seed(seed)))

    picks = [pick(s) for s in range(20)]
    assert all(len(p) == 2 and p <= {0, 2, 3, 4} for p in picks)
    assert picks[0] == pick(0)
    assert len({frozenset(p) for p in picks}) > 1


def test_threshold_commits_confident_ones_plus_the_argmax():
    conf = torch.tensor([0.95, 0.5, 0.99, 0.91, 0.3])
    assert chosen(samplers.threshold(conf, mask(T, T, F, T, T), 0.9)) == {0, 3}     # 2 is already decided
    assert chosen(samplers.threshold(conf, mask(F, T, F, F, T), 0.9)) == {1}        # none >= tau: argmax only
    assert chosen(samplers.threshold(conf, mask(F, F, F, F, F), 0.9)) == set()


def test_prefix_threshold_runs_left_to_right_from_the_first_masked():
    conf = torch.tensor([0.95, 0.5, 0.99, 0.91, 0.3, 0.97])
    rule = samplers.prefix_threshold
    assert chosen(rule(conf, mask(T, T, T, T, T, T), 0.9)) == {0}              # 1 is unsure: the run stops
    assert chosen(rule(conf, mask(F, T, T, T, T, T), 0.9)) == {1, 2, 3}        # 1 goes in as the first
    assert chosen(rule(conf, mask(F, F, T, F, T, T), 0.9)) == {2}              # 4 (0.3) stops it, 5 waits
    assert chosen(rule(conf, mask(F, F, F, T, F, T), 0.9)) == {3, 5}           # decided ones are skipped
    assert chosen(rule(conf, mask(F, F, F, F, F, F), 0.9)) == set()
    assert chosen(samplers.threshold(conf, mask(T, T, T, T, T, T), 0.9)) == {0, 2, 3, 5}   # the plain rule jumps


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**31), width=st.integers(1, 10), tau=st.floats(0.01, 1.0))
def test_prefix_threshold_matches_its_loop(seed, width, tau):
    g = torch.Generator().manual_seed(seed)
    conf, masked = torch.rand(width, generator=g), torch.rand(width, generator=g) < 0.7
    assert torch.equal(samplers.prefix_threshold(conf, masked, tau), samplers.prefix_threshold_ref(conf, masked, tau))


@pytest.mark.parametrize(
    "f, expected",
    # sorted c = .99, .9, .8, .5 at positions 1, 3, 2, 0; (n+1)(1-c_(n)) = .02, .3, .8, 2.5
    [(1.0, {1, 3, 2}), (0.5, {1, 3}), (0.3, {1}), (0.01, {1}), (3.0, {0, 1, 2, 3})],
    ids=["f1-three", "f0.5-two", "f0.3-strict", "f0.01-always-rank1", "f3-all"],
)
def test_factor_prefix_rule_by_hand(f, expected):
    conf = torch.tensor([0.5, 0.99, 0.8, 0.9])
    assert chosen(samplers.factor_prefix(conf, mask(T, T, T, T), f)) == expected


@pytest.mark.parametrize(
    "f, expected",
    # the same ranks; Fast-dLLM compares with <= and commits all M when only rank M fails
    [(1.0, {0, 1, 2, 3}), (0.5, {1, 3}), (0.01, {1}), (3.0, {0, 1, 2, 3})],
    ids=["f1-last-fails-all", "f0.5-two", "f0.01-always-rank1", "f3-all"],
)
def test_factor_rule_by_hand(f, expected):
    conf = torch.tensor([0.5, 0.99, 0.8, 0.9])
    assert chosen(samplers.factor(conf, mask(T, T, T, T), f)) == expected


def test_factor_rule_passes_on_equality_where_ours_does_not():
    # dyadic values, exact in floating point: rank 2 has c = .875 = 1 - .375 / 3
    conf, masked = torch.tensor([0.5, 0.99, 0.75, 0.875], dtype=torch.float64), mask(T, T, T, T)
    assert chosen(samplers.factor(conf, masked, 0.375)) == {1, 3}
    assert chosen(samplers.factor_prefix(conf, masked, 0.375)) == {1}


# Rows with entropies 0, ln 2, ln 4, ln 3 (one-hot, uniform over 2, 4, 3 of 4 tokens).
EB_PROBS = torch.tensor([[1.0, 0, 0, 0], [0.5, 0.5, 0, 0], [0.25] * 4, [1 / 3, 1 / 3, 1 / 3, 0]])


@pytest.mark.parametrize(
    "gamma, expected",
    # ascending H = 0, ln2, ln3, ln4 at rows 0, 1, 3, 2; sum H - max H = 0, 0, ln2 = .693, ln2 + ln3 = 1.79
    [(0.0, {0, 1}), (0.5, {0, 1}), (0.7, {0, 1, 3}), (1.8, {0, 1, 2, 3})],
    ids=["gamma0", "gamma0.5", "gamma0.7", "gamma1.8"],
)
def test_entropy_bound_by_hand(gamma, expected):
    assert chosen(samplers.entropy_bounded(EB_PROBS, mask(T, T, T, T), gamma)) == expected


def test_entropy_bound_always_commits_one():
    assert chosen(samplers.entropy_bounded(EB_PROBS, mask(F, F, T, T), 0.0)) == {3}


def test_select_last_round_commits_the_rest_but_reference_commits_one():
    probs = torch.softmax(torch.randn(6, 5, generator=torch.Generator().manual_seed(0)), -1)
    tokens = probs.argmax(-1)
    masked = mask(T, T, F, T, T, T)
    for name in NAMES:
        config = GenerationConfig(sampler=name, block_size=6, gen_length=6, steps=3, threshold=1.0)
        picked = samplers.select(config, probs, tokens, masked, 2, proposals.transfer_schedule(6, 3))
        if name == "reference":
            conf = proposals.confidence(probs, tokens).masked_fill(~masked, -1)
            assert chosen(picked) == {int(conf.argmax())}
        elif name == "threshold_or_top_k_uncapped":                            # SDAR: its k (2) in this round too
            assert int(picked.sum()) == 2 and not (picked & ~masked).any()
        elif name == "joint_threshold":                                        # LLaDA2.1: no last round, its top one
            conf = proposals.confidence(probs, tokens).masked_fill(~masked, -1)
            assert chosen(picked) == {int(conf.argmax())}
        else:
            assert torch.equal(picked, masked)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), width=st.integers(1, 8), sampler=st.sampled_from(NAMES),
       round_index=st.integers(0, 3), tau=st.floats(0.01, 1.0))
def test_select_only_picks_masked_and_always_progresses(seed, width, sampler, round_index, tau):
    g = torch.Generator().manual_seed(seed)
    probs = torch.softmax(3 * torch.randn(width, 6, generator=g), -1)
    tokens = probs.argmax(-1)
    masked = torch.rand(width, generator=g) < 0.6
    config = GenerationConfig(sampler=sampler, block_size=width, gen_length=width, steps=min(4, width), threshold=tau)
    schedule = proposals.transfer_schedule(width, 4)
    picked = samplers.select(config, probs, tokens, masked, round_index, schedule, g)
    if sampler == "threshold_or_top_k_uncapped" and round_index < len(schedule) > 0:   # SDAR: k, masked or not
        assert picked[masked].all() if schedule[round_index] >= int(masked.sum()) else not (picked & ~masked).any()
    else:
        assert not (picked & ~masked).any()
    # SDAR's rule commits nothing in a round scheduled for 0 tokens when none passes the threshold,
    # as its code does; beyond its schedule it takes every mask left, so a block still ends
    idle = sampler == "threshold_or_top_k_uncapped" and round_index < len(schedule) and schedule[round_index] == 0
    assert int(picked.sum()) >= (0 if idle else min(1, int(masked.sum())))


def test_sdars_rule_takes_decided_positions_when_k_exceeds_the_masks():
    """k = 2 with one mask left: SDAR's torch.topk returns the mask and one decided position (all
    score -inf; which one is topk's order), and SDAR re-samples it. The capped rule does not."""
    conf = torch.tensor([0.2, 0.5, 0.1, 0.4])
    masked = mask(F, T, F, F)
    topk_order = torch.topk(torch.tensor([-math.inf, 0.5, -math.inf, -math.inf]), 2).indices.tolist()
    assert chosen(samplers.threshold_or_top_k_uncapped(conf, masked, 0.9, 2, 4)) == set(topk_order) > {1}
    assert chosen(samplers.threshold_or_top_k(conf, masked, 0.9, 2, 4)) == {1}
    # a first aligned block of one row behind three prompt-tail tokens: topk picks the mask and a
    # tail position, which is dropped (SDAR would overwrite that prompt token)
    tail_order = torch.topk(torch.tensor([-math.inf, -math.inf, -math.inf, 0.4]), 2).indices.tolist()
    assert min(tail_order) < 3
    assert chosen(samplers.threshold_or_top_k_uncapped(conf[3:], mask(T), 0.9, 2, 4)) == {0}
    # through select, in the last round too
    config = GenerationConfig(sampler="threshold_or_top_k_uncapped", block_size=4, gen_length=4, steps=2, threshold=0.9)
    probs = torch.eye(4)[[0, 1, 2, 3]] * 0.4 + 0.15                           # confidence 0.55 everywhere
    picked = samplers.select(config, probs, torch.arange(4), masked, 1, proposals.transfer_schedule(4, 2))
    assert int(picked.sum()) == 2 and bool(picked[1])


# --------------------------------------------------------------------------- through generate()

@st.composite
def configs(draw):
    sampler = draw(st.sampled_from(NAMES))
    block_size = draw(st.integers(1, 8))
    gen_length = block_size * draw(st.integers(1, 4))
    top_steps = block_size if SAMPLERS[sampler].scheduled else 12
    return GenerationConfig(
        gen_length=gen_length, block_size=block_size, steps=draw(st.integers(1, top_steps)), sampler=sampler,
        threshold=draw(st.floats(0.05, 1.0)), factor=draw(st.floats(0.1, 3.0)),
        entropy_bound=draw(st.floats(0.0, 2.0)), temperature=draw(st.sampled_from([0.0, 0.5, 1.0, 3.0])),
        seed=draw(st.integers(0, 1000)), stop_on_eos=draw(st.booleans()),
        untempered_confidence=draw(st.booleans()), keep_mask_logit=draw(st.booleans()),
        steps_cap=draw(st.booleans()), edit_threshold=draw(st.sampled_from([0.0, 0.5, 1.0])),
        max_post_steps=draw(st.integers(0, 3)), remask=draw(st.sampled_from(["off", "off", "loop", "cap"])),
        remask_rounds=draw(st.integers(0, 3)), remask_count=draw(st.integers(1, 3)),
    )


@settings(max_examples=60, deadline=None)
@given(config=configs(), target=st.text(alphabet="abc xyz", max_size=40), seed=st.integers(0, 50))
def test_generation_invariants(config, target, seed):
    backend = FakeDiffusionBackend(target, seed=seed)
    result = run(backend, [5, 6, 7], config)
    frames, size, length = result.frames, config.block_size, config.gen_length

    canvas = [MASK] * length
    decided_at: dict[int, int] = {}
    rewrites = config.sampler in ("threshold_or_top_k_uncapped", "joint_threshold") or config.remask != "off"
    for k, frame in enumerate(frames, start=1):
        assert frame.nfe == k
        last = dict(decided_at)
        for pos, token, _ in frame.committed:
            # SDAR's rule re-samples decided positions when its k exceeds the masks left; LLaDA2.1's
            # edits them; a remasked position is decided again
            assert pos not in decided_at or rewrites, "committed twice"
            assert token != MASK
            decided_at[pos] = k
            canvas[pos] = token
        for pos in frame.remasked:
            canvas[pos] = MASK
        assert frame.canvas == canvas, "canvas differs from the previous one plus this frame's commits and remasks"
        assert all(pos in last for pos, _old, _new in frame.edits), "an edit of a position never decided"

    assert set(decided_at) == set(range(length)), "every position is committed"
    assert MASK not in frames[-1].canvas
    blocks = sorted({f.block for f in frames})
    assert blocks == list(range(len(blocks)))
    for b in blocks:
        rounds = [f.round for f in frames if f.block == b]
        assert rounds == list(range(len(rounds)))
        remasking = config.remask != "off" and config.remask_rounds > 0
        if config.sampler == "reference" and not remasking:
            assert len(rounds) == size, "reference takes one forward per masked position"
        elif remasking:
            # every round decides a mask or rewrites; remasking rounds put back at most remask_count each
            extra = config.remask_rounds * config.remask_count + (config.max_post_steps if
                                                                  config.sampler == "joint_threshold" else 0)
            assert len(rounds) <= size + extra + config.remask_rounds, "remasking ran past its budget"
        elif config.sampler == "joint_threshold":
            assert len(rounds) <= size + config.max_post_steps, "more edit-only rounds than max post steps"
        elif SAMPLERS[config.sampler].scheduled or config.steps_cap:
            assert len(rounds) <= config.steps, "a block took more rounds than steps allows"
        else:
            assert len(rounds) <= size, "every round commits at least one token"
    # every block is committed except the one the generation ends with: nothing reads that commit
    assert backend.denoise_calls == len(frames) and backend.commit_calls == len(blocks) - 1
    if result.stats.stop_reason == "eos":
        assert config.stop_on_eos and len(blocks) * size <= length
    else:
        assert len(blocks) == config.num_blocks


def test_generator_yields_a_copy_of_the_canvas():
    backend = FakeDiffusionBackend("abcdefgh")
    config = GenerationConfig(gen_length=8, block_size=4, steps=4, sampler="low_confidence")
    frames = list(generate(backend, [5], config))
    assert frames[0].canvas.count(MASK) == 7 and frames[-1].canvas.count(MASK) == 0


def test_ties_go_to_the_lower_masked_position():
    """top_scores and the threshold rules break ties by position, among masked positions only."""
    from engine.samplers import threshold, threshold_strict, top_scores

    scores = torch.tensor([0.9, 0.5, 0.5, 0.9, 0.5])
    masked = torch.tensor([False, True, True, False, True])
    assert top_scores(scores, masked, 1).tolist() == [False, True, False, False, False]
    assert top_scores(scores, masked, 2).tolist() == [False, True, True, False, False]
    assert top_scores(scores, masked, 9).tolist() == [False, True, True, False, True]
    for rule in (threshold, threshold_strict):
        assert rule(scores, masked, 0.95).tolist() == [False, True, False, False, False]


@pytest.mark.parametrize("name", sorted(SAMPLER_TABLE))
def test_the_steps_cap_fills_the_last_round_unless_the_table_says_the_rule_owns_it(name):
    """select reads SamplerSpec.owns_last_round, not sampler names: on the last round of a block
    with low confidence everywhere, a rule that does not own it commits every mask left; one
    that does (the reference, SDAR's rule, the editing rule) commits what its own rule picks."""
    from engine.samplers import select

    config = GenerationConfig(gen_length=4, block_size=4, steps=2, sampler=name, steps_cap=True, threshold=0.99)
    probs = torch.full((4, 5), 0.2)                     # no position is sure of anything
    tokens, masked = probs.argmax(-1), torch.ones(4, dtype=torch.bool)
    chosen = select(config, probs, tokens, masked, 1, [2, 2], torch.Generator().manual_seed(0), current=tokens)
    assert bool(chosen.all()) is not SAMPLER_TABLE[name].owns_last_round, int(chosen.sum())
