"""engine/generate.py: EOS early stop, stats, the AR path, prompt checks, cancellation, and the
one-token-per-forward reference against the parallel sampler."""

import pytest
import torch

from engine.generate import generate, run
from engine.result import summarize
from engine.samplers import SAMPLERS
from engine.trace import ConfigError, GenerationConfig
from tests.fakes import EOS, MASK, CharTokenizer, FakeARBackend, FakeDiffusionBackend

PROMPT = [5, 6, 7]


def config(**changes) -> GenerationConfig:
    base = dict(gen_length=16, block_size=4, steps=4, sampler="low_confidence")
    return GenerationConfig(**{**base, **changes})


def test_eos_stops_after_the_block_and_fills_the_rest():
    backend = FakeDiffusionBackend("hi")                                       # target: h i <eos>
    result = run(backend, PROMPT, config())
    final = result.frames[-1].canvas
    assert result.stats.stop_reason == "eos"
    assert final == backend.tokenizer.encode("hi") + [EOS] * 14
    assert result.token_ids == backend.tokenizer.encode("hi") and result.text == "hi"
    assert result.stats.new_tokens == 2
    assert backend.committed_blocks == [], "generation ends in block 0: nothing reads a commit of it"
    assert backend.denoise_calls == len(result.frames), "no block after the EOS block is denoised"
    assert {p for p, t, _ in result.frames[-1].committed if p >= 4} == set(range(4, 16))


def test_eos_in_a_later_block():
    backend = FakeDiffusionBackend("abcdef")
    result = run(backend, PROMPT, config())
    assert result.text == "abcdef" and backend.committed_blocks == [(0, 4)], "block 1 ends the generation"
    assert result.frames[-1].canvas[7:] == [EOS] * 9


def test_without_stop_on_eos_every_block_runs():
    backend = FakeDiffusionBackend("hi")
    result = run(backend, PROMPT, config(stop_on_eos=False))
    assert result.stats.stop_reason == "length" and len(backend.committed_blocks) == 3, "all but the last block"
    assert result.text == "hi" and result.stats.new_tokens == 2


def test_stats_arithmetic():
    backend = FakeDiffusionBackend("the quick brown fox jumps", seed=3)
    result = run(backend, PROMPT, config(gen_length=32, block_size=8, steps=8, sampler="threshold"))
    s = result.stats
    assert s.nfe == len(result.frames) == result.frames[-1].nfe == backend.denoise_calls
    assert s.new_tokens == len("the quick brown fox jumps") == len(result.token_ids)
    assert s.tokens_per_forward == pytest.approx(s.new_tokens / s.nfe)
    assert s.tokens_per_s == pytest.approx(s.new_tokens / s.seconds)
    assert s.first_token_s == result.frames[0].elapsed_s <= s.seconds
    assert s.stop_reason == "eos" and s.nfe < 25, "threshold decodes several tokens per forward"


def test_first_token_time_counts_answer_tokens_only():
    # Tokens after the first EOS are not the answer (engine/metrics.py), however early they came.
    backend = FakeDiffusionBackend([EOS, EOS, 10, 11])                        # EOS is most confident nowhere
    result = run(backend, PROMPT, config(gen_length=4, block_size=4, sampler="reference", stop_on_eos=False))
    assert result.stats.new_tokens == 0 and result.stats.first_token_s is None
    backend = FakeDiffusionBackend([10, EOS, 11, EOS])
    result = run(backend, PROMPT, config(gen_length=4, block_size=4, sampler="reference", stop_on_eos=False))
    first_real = next(f for f in result.frames if any(p == 0 for p, _, _ in f.committed))
    assert result.token_ids == [10] and result.stats.first_token_s == first_real.elapsed_s


def test_result_pieces_and_mask_id():
    backend = FakeDiffusionBackend("ab")
    result = run(backend, PROMPT, config(gen_length=4))
    assert result.mask_id == MASK and result.pieces[MASK] == "<mask>"
    assert result.pieces[EOS] == "<eos>" and result.pieces[backend.tokenizer.encode("a")[0]] == "a"
    assert set(result.pieces) == {t for f in result.frames for t in f.canvas}


def test_autoregressive_commits_one_token_per_frame():
    backend = FakeARBackend("hello")
    result = run(backend, PROMPT, config(gen_length=16))
    assert [len(f.committed) for f in result.frames] == [1] * 6                # h e l l o <eos>
    assert [f.nfe for f in result.frames] == list(range(1, 7))
    # each token is its own block of one, decided in its one round (engine.trace.block_size_of)
    assert [(f.block, f.round) for f in result.frames] == [(i, 0) for i in range(6)]
    assert result.frames[-1].canvas == backend.tokenizer.encode("hello") + [EOS]
    assert result.text == "hello" and result.stats.stop_reason == "eos" and result.stats.new_tokens == 5
    assert result.mask_id is None and backend.step_calls == 5 and backend.fed == backend.tokenizer.encode("hello")


def test_autoregressive_gen_length_caps():
    backend = FakeARBackend("a long answer")
    result = run(backend, PROMPT, config(gen_length=4))
    assert result.text == "a lo" and result.stats.stop_reason == "length" and backend.step_calls == 3


def test_prompt_too_long_names_both_numbers():
    backend = FakeDiffusionBackend("x", max_length=20)
    with pytest.raises(ConfigError) as caught:
        generate(backend, list(range(3, 8)), config(gen_length=16))
    assert "5 tokens" in str(caught.value) and "at most 4" in str(caught.value)


def test_generation_longer_than_context():
    with pytest.raises(ConfigError, match="leaves no room"):
        generate(FakeARBackend("x", max_length=16), PROMPT, config(gen_length=16))


@pytest.mark.parametrize("make", [FakeDiffusionBackend, FakeARBackend], ids=["diffusion", "ar"])
def test_empty_prompt(make):
    with pytest.raises(ConfigError, match="The prompt is empty"):
        generate(make("x"), [], config())


@pytest.mark.parametrize("make", [FakeDiffusionBackend, FakeARBackend], ids=["diffusion", "ar"])
def test_close_mid_run_is_safe_and_the_backend_is_reusable(make):
    backend = make("a long enough answer")
    frames = generate(backend, PROMPT, config())
    first = next(frames)
    next(frames)
    frames.close()
    assert first.nfe == 1
    with pytest.raises(StopIteration):
        next(frames)
    assert run(backend, PROMPT, config()).text == "a long enough an"


def test_run_can_be_cancelled():
    backend = FakeDiffusionBackend("abcdefghijklmnop")
    seen = []
    result = run(backend, PROMPT, config(), on_frame=seen.append, should_stop=lambda: len(seen) == 3)
    assert result.stats.stop_reason == "cancelled" and result.stats.nfe == 3 == len(result.frames)
    assert result.frames == seen and MASK not in result.token_ids


def test_summarize_with_no_frames():
    result = summarize(FakeDiffusionBackend("x"), [], 0.0, "cancelled")
    assert result.token_ids == [] and result.stats.nfe == 0 and result.stats.tokens_per_forward == 0.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reference_matches_low_confidence_with_one_token_per_round(seed):
    """Greedy on the fake: logits at a position do not depend on other positions' tokens,
    so committing one token per forward gives the same answer as the scheduled sampler."""
    text = "reference and parallel agree!"
    ref = run(FakeDiffusionBackend(text, seed=seed), PROMPT, config(gen_length=32, block_size=8, sampler="reference"))
    fast = run(FakeDiffusionBackend(text, seed=seed), PROMPT,
               config(gen_length=32, block_size=8, steps=8, sampler="low_confidence"))
    assert ref.token_ids == fast.token_ids == CharTokenizer().encode(text)
    assert [f.canvas for f in ref.frames] == [f.canvas for f in fast.frames]


@pytest.mark.parametrize("sampler", list(SAMPLERS))
def test_greedy_reproduces_the_target_with_every_sampler(sampler):
    result = run(FakeDiffusionBackend("greedy is exact"), PROMPT, config(gen_length=24, block_size=8, sampler=sampler))
    assert result.text == "greedy is exact"


def test_sampling_is_seeded():
    def text(seed):
        return run(FakeDiffusionBackend("some text here", seed=1), PROMPT, config(temperature=2.0, seed=seed)).text

    assert text(0) == text(0)
    assert len({text(s) for s in range(4)}) > 1


def test_mask_is_never_proposed_even_when_the_model_likes_it():
    class MaskLover(FakeDiffusionBackend):
        def denoise(self, canvas, block):
            logits = super().denoise(canvas, block)
            logits[..., MASK] = 100.0
            return logits

    result = run(MaskLover("abc"), PROMPT, config())
    assert MASK not in result.frames[-1].canvas and result.text == "abc"


def test_generation_runs_under_inference_mode():
    class Watcher(FakeDiffusionBackend):
        modes: list[bool] = []

        def denoise(self, canvas, block):
            self.modes.append(torch.is_inference_mode_enabled())
            return super().denoise(canvas, block)

    run(Watcher("abc"), PROMPT, config())
    assert Watcher.modes and all(Watcher.modes)
    assert not torch.is_inference_mode_enabled()
