"""A hand-made trace shared by the visualizer and session tests, and checks that it is sound.

Eight positions in two blocks of four, mask id 99; the pieces carry HTML, `</script>`,
whitespace, LaTeX specials and non-Latin-1 text so every renderer meets its hard cases.
"""

from __future__ import annotations

from engine.trace import Frame, GenerationConfig, Result, Stats

MASK = 99
GEN_LENGTH = 8
BLOCK_SIZE = 4
PIECES = {
    10: "Hello",
    11: " ",
    12: "<img src=x onerror=alert(1)>",
    13: "\n",
    14: "</script><script>alert(2)</script>",
    15: "&amp;",
    16: "x_1 {a}^~$#%\\",
    17: "é漢😀",
    MASK: "<|mask|>",
}
# (nfe, block, round, [(position, token, confidence)], elapsed_s)
SCHEDULE = [
    (1, 0, 0, [(1, 11, 0.95), (2, 12, 0.91)], 0.010),
    (2, 0, 1, [(0, 10, 0.70), (3, 13, 0.60)], 0.020),
    (3, 1, 0, [(4, 14, 0.99)], 0.031),
    (4, 1, 1, [(5, 15, 0.80), (6, 16, 0.85)], 0.040),
    (5, 1, 2, [(7, 17, 0.50)], 0.052),
]
EXPECTED_ROUNDS = [1, 0, 0, 1, 0, 1, 1, 2]
EXPECTED_NFE = [2, 1, 1, 2, 3, 4, 4, 5]
EXPECTED_CONFIDENCE = [0.70, 0.95, 0.91, 0.60, 0.99, 0.80, 0.85, 0.50]
CONFIG = GenerationConfig(gen_length=GEN_LENGTH, block_size=BLOCK_SIZE, steps=4, sampler="threshold")


def make_frames() -> list[Frame]:
    canvas = [MASK] * GEN_LENGTH
    frames = []
    for nfe, block, round_, committed, elapsed in SCHEDULE:
        for position, token, _conf in committed:
            canvas[position] = token
        frames.append(Frame(nfe=nfe, block=block, round=round_, committed=list(committed),
                            canvas=list(canvas), elapsed_s=elapsed))
    return frames


def make_result() -> Result:
    frames = make_frames()
    token_ids = frames[-1].canvas
    return Result(
        token_ids=list(token_ids),
        text="".join(PIECES[t] for t in token_ids),
        frames=frames,
        stats=Stats(nfe=5, new_tokens=8, tokens_per_forward=1.6, seconds=0.052, tokens_per_s=153.8,
                    first_token_s=0.010, stop_reason="length"),
        mask_id=MASK,
        pieces=dict(PIECES),
    )


def make_ar_frames(n: int = 6, step_s: float = 0.02) -> list[Frame]:
    """An autoregressive run: one token per forward, canvas grows (no mask id)."""
    frames, canvas = [], []
    for i in range(n):
        canvas.append(10 + (i % 8))
        frames.append(Frame(nfe=i + 1, block=i, round=0, committed=[(i, canvas[-1], 1.0)],
                            canvas=list(canvas), elapsed_s=(i + 1) * step_s))
    return frames


def test_hand_trace_is_consistent():
    frames = make_frames()
    assert [f.nfe for f in frames] == [1, 2, 3, 4, 5]
    assert MASK not in frames[-1].canvas
    assert frames[0].canvas.count(MASK) == GEN_LENGTH - 2
    result = make_result()
    assert Result.from_dict(result.to_dict()) == result


# An answer that ends early: EOS (id 1) at position 6 in block 1, a stray token (16) after it in
# the same block, then the EOS fill of block 2 decided with the last forward. 12 positions in
# blocks of 4; the answer is positions 0-5 (6 tokens) over 4 forwards: 1.50 tokens per forward.
EOS = 1
EOS_GEN_LENGTH = 12
EOS_SCHEDULE = [
    (1, 0, 0, [(0, 10, 0.9), (2, 12, 0.85)], 0.010),
    (2, 0, 1, [(1, 11, 0.8), (3, 17, 0.6)], 0.020),
    (3, 1, 0, [(4, 14, 0.9), (6, EOS, 0.7)], 0.030),
    (4, 1, 1, [(5, 15, 0.8), (7, 16, 0.5)] + [(p, EOS, 1.0) for p in range(8, 12)], 0.040),
]
EOS_ANSWER = [10, 11, 12, 17, 14, 15]
EOS_ANSWER_PER_FRAME = [2, 2, 1, 1]


def make_eos_frames() -> list[Frame]:
    canvas = [MASK] * EOS_GEN_LENGTH
    frames = []
    for nfe, block, round_, committed, elapsed in EOS_SCHEDULE:
        for position, token, _conf in committed:
            canvas[position] = token
        frames.append(Frame(nfe=nfe, block=block, round=round_, committed=list(committed),
                            canvas=list(canvas), elapsed_s=elapsed))
    return frames


def make_eos_result() -> Result:
    """The EOS trace as the engine would return it (numbers from engine/metrics.py)."""
    from engine.metrics import Ends, numbers

    frames = make_eos_frames()
    return Result(token_ids=list(EOS_ANSWER), text="".join(PIECES[t] for t in EOS_ANSWER), frames=frames,
                  stats=numbers(frames, Ends(frozenset({EOS}), 0, MASK), "eos", wall_s=0.5), mask_id=MASK,
                  pieces={**PIECES, EOS: "<eos>"}, eos_ids=[EOS], pad_id=0)
