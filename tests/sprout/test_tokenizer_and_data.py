"""Sprout's tokenizer and batch builders."""

import json
import random
import re

import pytest
import torch
from transformers import AutoTokenizer

from sprout.tokenizer import EOS, PAD
from tests.sprout.helpers import corpus_texts, special_ids, spell_marks, tiny_tokenizer
from training.data import FOCUS, ar_batch, ar_weights, bd_batch, buckets, encode_texts
from world.format import SPECIAL_TOKENS, assistant_spans


def test_special_tokens_are_single_and_digits_split(tmp_path):
    tok = tiny_tokenizer()
    for special in SPECIAL_TOKENS:
        assert len(tok.encode(special)) == 1, special
    assert len(tok.encode("P3817")) >= 4            # one token per digit
    tok.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(tmp_path)
    text = corpus_texts()[0]
    assert again.encode(text) == tok.encode(text)
    assert again.decode(again.encode(text)) == text


def test_assistant_token_spans_cover_exactly_the_assistant_text():
    tok = tiny_tokenizer()
    text = corpus_texts()[1]
    ex = encode_texts([text], tok)[0]
    char_spans = assistant_spans(text)
    assert len(ex.spans) == len(char_spans)
    for (s, e), (cs, ce) in zip(ex.spans, char_spans):
        assert tok.decode(ex.ids[s:e]) == text[cs:ce]
        assert ex.ids[e - 1] == tok.convert_tokens_to_ids(EOS)


def test_ar_targets_only_on_assistant_tokens():
    tok = tiny_tokenizer()
    exs = encode_texts(list(corpus_texts()[:4]), tok)
    ids, targets = ar_batch(exs, tok.convert_tokens_to_ids(PAD))
    for b, ex in enumerate(exs):
        want = {t for s, e in ex.spans for t in range(s, e)}          # positions predicted
        got = {t + 1 for t in (targets[b] != -100).nonzero().flatten().tolist()}
        assert got == want
        for t in (targets[b] != -100).nonzero().flatten().tolist():
            assert targets[b, t] == ids[b, t + 1]


def test_bd_blocks_start_at_turns_fill_with_eos_and_mask_something():
    tok = tiny_tokenizer()
    ids = special_ids(tok)
    exs = encode_texts(list(corpus_texts()[:6]), tok)
    batch = bd_batch(exs, 8, ids, (0.3, 0.8), torch.Generator().manual_seed(0))
    for b, ex in enumerate(exs):
        expected_starts = [s + j for s, e in ex.spans for j in range(0, e - s, 8)]
        assert batch.starts[b, :len(expected_starts)].tolist() == expected_starts
        for j, start in enumerate(expected_starts):
            truth = torch.where(batch.targets[b, j] != -100, batch.targets[b, j], batch.noisy[b, j])
            span_end = next(e for s, e in ex.spans if s <= start < e)
            real = ex.ids[start:min(start + 8, span_end)]
            assert truth.tolist() == real + [ids["eos"]] * (8 - len(real))
            assert (batch.noisy[b, j] == ids["mask"]).any()
        assert (batch.targets[b, len(expected_starts):] == -100).all()     # padding blocks teach nothing


@pytest.mark.parametrize("by_replies", [False, True], ids=["by-length", "by-replies"])
def test_buckets_respect_the_token_budget_and_keep_every_example(by_replies):
    tok = tiny_tokenizer()
    exs = encode_texts(list(corpus_texts()), tok)
    batches = buckets(exs, 1024, random.Random(0), by_replies)
    assert sorted(id(e) for b in batches for e in b) == sorted(id(e) for e in exs)
    for b in batches:
        assert len(b) == 1 or max(len(e.ids) for e in b) * len(b) <= 1024


def test_sorting_by_replies_pads_fewer_noisy_blocks():
    """Rows of one length whose replies differ (a single request and a conversation's several
    answers): sorted by replies, fewer padded blocks in the BD batches, the same examples."""
    from training.data import reply_tokens

    tok = tiny_tokenizer()
    exs = encode_texts(list(corpus_texts()), tok)
    ids = special_ids(tok)

    def padded_blocks(batches):
        gen = torch.Generator().manual_seed(0)
        total = 0
        for b in batches:
            batch = bd_batch(b, 4, ids, (0.5, 1.0), gen)
            total += batch.noisy.shape[0] * batch.noisy.shape[1] - int((batch.targets != -100).any(-1).sum())
        return total

    assert len({reply_tokens(e) for e in exs}) > 5            # the corpus has replies of many lengths
    plain = padded_blocks(buckets(exs, 1024, random.Random(0)))
    sorted_ = padded_blocks(buckets(exs, 1024, random.Random(0), by_replies=True))
    assert sorted_ < plain


def test_complementary_pairs_make_every_block_token_a_target_exactly_once():
    tok = tiny_tokenizer()
    ids = special_ids(tok)
    exs = encode_texts(list(corpus_texts()[:6]), tok)
    single = bd_batch(exs, 8, ids, (0.5, 1.0), torch.Generator().manual_seed(0))
    pair = bd_batch(exs, 8, ids, (0.5, 1.0), torch.Generator().manual_seed(0), complementary=True)
    NB = single.noisy.shape[1]
    assert pair.noisy.shape[1] == 2 * NB
    assert torch.equal(pair.starts, single.starts.repeat(1, 2))
    first, second = pair.targets[:, :NB] != -100, pair.targets[:, NB:] != -100
    real = (single.targets != -100).any(-1)                       # blocks that belong to a turn
    assert torch.equal(first | second, real[..., None].expand_as(first))
    assert not (first & second).any()
    assert int(first.sum() + second.sum()) == pair.n_tokens == single.n_tokens
    assert (pair.weights == 1).all()


def test_noise_reaching_one_masks_whole_blocks_as_decoding_starts():
    """The sampler meets all-mask blocks first; t ~ U[0.5, 1] must produce them for blocks of 4."""
    tok = tiny_tokenizer()
    ids = special_ids(tok)
    exs = encode_texts(list(corpus_texts()[:6]), tok)
    full = 0
    for seed in range(20):
        b = bd_batch(exs, 4, ids, (0.5, 1.0), torch.Generator().manual_seed(seed))
        full += int(((b.targets != -100).all(-1)).sum())
    assert full > 0


def _shop_text() -> str:
    return next(t for t in corpus_texts() if '"product_id":"' in t)


def test_focus_tokens_are_the_copied_product_ids():
    tok = tiny_tokenizer()
    text = _shop_text()
    ex = encode_texts([text], tok)[0]
    # the focus tokens, read back in order, spell each call's product id
    pieces = "".join(tok.decode([ex.ids[p]]) for p in ex.focus)
    want = "".join(m.group(1) for m in FOCUS.finditer(text))
    assert pieces == want and len(want) >= 4 and want.startswith("P")
    inside = {t for s, e in ex.spans for t in range(s, e)}
    assert set(ex.focus) <= inside, "focus tokens lie in assistant turns only"
    # turns left untrained leave their focus tokens out too
    add_turns = [i for i, m in enumerate(re.finditer(r"<\|assistant\|>(.*?)<\|eos\|>", text, re.S))
                 if '"product_id"' in m.group(1)]
    assert add_turns and encode_texts([text], tok, [add_turns])[0].focus == []


def test_focus_weight_scales_only_the_focus_targets():
    tok = tiny_tokenizer()
    ids = special_ids(tok)
    exs = encode_texts([_shop_text(), corpus_texts()[0]], tok)
    batch = bd_batch(exs, 8, ids, (0.5, 1.0), torch.Generator().manual_seed(0), True, focus_weight=3.0)
    plain = bd_batch(exs, 8, ids, (0.5, 1.0), torch.Generator().manual_seed(0), True)
    assert torch.equal(batch.targets, plain.targets) and torch.equal(plain.weights, torch.ones_like(plain.weights))
    positions = batch.starts[..., None] + torch.arange(8)
    for b, ex in enumerate(exs):
        focused = torch.isin(positions[b], torch.tensor(ex.focus or [-1]))
        n_real = sum(-(-(e - s) // 8) for s, e in ex.spans)                   # real blocks of this row
        rows = torch.cat([torch.arange(n_real), batch.starts.shape[1] // 2 + torch.arange(n_real)])
        w = batch.weights[b, rows]
        assert torch.equal(w == 3.0, focused[rows]) and bool((w[~focused[rows]] == 1.0).all())
    _, targets = ar_batch(exs, ids["pad"])
    weights = ar_weights(exs, targets.shape[1], 3.0)
    for b, ex in enumerate(exs):
        assert sorted((weights[b] == 3.0).nonzero()[:, 0].tolist()) == sorted(p - 1 for p in ex.focus)


def test_row_colours_mark_each_search_rows_id_with_its_colour():
    tok = tiny_tokenizer()
    text = next(t for t in corpus_texts() if '"color":"' in t and '"id":"P' in t)
    ex = encode_texts([text], tok)[0]
    rows = [json.loads(m.group(0)) for m in re.finditer(r'\{"color":[^{}]*\}', text)]
    assert rows and ex.row_colours
    # read back in order, the marked tokens spell the rows' ids, each marked with its row's colour
    assert "".join(tok.decode([ex.ids[p]]) for p, _ in ex.row_colours) == "".join(r["id"] for r in rows)
    spelled = spell_marks(tok, ex.ids, ex.row_colours, [r["id"] for r in rows])
    assert spelled == [(r["id"], {r["color"]}) for r in rows]
    assert encode_texts(["<|user|>hi<|eos|>"], tok)[0].row_colours == []


def _rows_with_what_was_asked(text: str) -> list[tuple[str, int]]:
    """(row id, 1 if its colour and size are the ones the latest search asked for), read with json."""
    out, asked = [], None
    for turn in re.finditer(r"<tool_call>(.*?)</tool_call>|<tool_response>(.*?)</tool_response>", text):
        if turn.group(1):
            call = json.loads(turn.group(1))
            asked = call["arguments"] if call["name"] == "search_products" else asked
        elif asked is not None and turn.group(2).startswith("[{\"color\""):
            out += [(r["id"], int(all(asked.get(k, r[k]) == r[k] for k in ("color", "size"))))
                    for r in json.loads(turn.group(2))]
    return out


def test_row_matches_mark_each_search_rows_id_with_whether_it_is_what_was_asked():
    tok = tiny_tokenizer()
    texts = [t for t in corpus_texts() if '"name":"search_products"' in t]
    labels = []
    for text, ex in zip(texts, encode_texts(texts, tok)):
        want = _rows_with_what_was_asked(text)
        got = spell_marks(tok, ex.ids, [(p, 0) for p, _ in ex.row_matches], [w for w, _ in want])
        assert [g for g, _ in got] == [w for w, _ in want]
        # one label per row, shared by all its id tokens
        it = iter(hit for _, hit in ex.row_matches)
        per_row = [{next(it) for _ in tok.encode(w)} for w, _ in want]
        assert per_row == [{hit} for _, hit in want]
        labels += [hit for _, hit in want]
    assert 0 < sum(labels) < len(labels), "both kinds of row occur"


def test_a_search_without_size_matches_rows_of_any_size():
    tok = tiny_tokenizer()
    text = ('<|user|>red belts?<|eos|>\n<|assistant|><tool_call>{"name":"search_products","arguments":'
            '{"query":"belt","color":"red"}}</tool_call><|eos|>\n<|tool|><tool_response>[{"color":"red","size":"S",'
            '"id":"P1","price":9},{"color":"navy","size":"S","id":"P2","price":9}]</tool_response>')
    ex = encode_texts([text], tok)[0]
    assert [(tok.decode([ex.ids[p]]), hit) for p, hit in ex.row_matches] == [("P", 1), ("1", 1), ("P", 0), ("2", 0)]
    rows_only = text.split("<|tool|>")[1]   # rows with no search before them are not marked
    assert encode_texts([rows_only], tok)[0].row_matches == []


def test_decisions_mark_the_first_token_of_the_call_right_after_each_search_result():
    tok = tiny_tokenizer()
    texts = [t for t in corpus_texts() if '<tool_response>[{"color"' in t]
    names = []
    for text, ex in zip(texts, encode_texts(texts, tok)):
        after_rows = [json.loads(m.group(1))["name"] for m in re.finditer(
            r'<tool_response>\[\{"color".*?</tool_response>\s*<\|assistant\|><tool_call>(.*?)</tool_call>', text)]
        assert len(ex.decisions) == len(after_rows)
        for p, name in zip(ex.decisions, after_rows):
            assert name.startswith(tok.decode([ex.ids[p]])) and tok.decode(ex.ids[p - 3:p]).endswith('"name":"')
            assert any(s <= p < e for s, e in ex.spans)
        names += after_rows
    assert {"add_to_cart", "finish"} <= set(names)
    untrained = encode_texts(texts[:1], tok, [list(range(len(assistant_spans(texts[0]))))])[0]
    assert untrained.decisions == [], "untrained turns carry no decision"


def test_decision_weight_scales_only_the_decision_targets():
    tok = tiny_tokenizer()
    ids = special_ids(tok)
    exs = encode_texts([t for t in corpus_texts() if '<tool_response>[{"color"' in t][:3], tok)
    batch = bd_batch(exs, 8, ids, (0.5, 1.0), torch.Generator().manual_seed(0), True, 3.0, decision_weight=2.0)
    positions = batch.starts[..., None] + torch.arange(8)
    for b, ex in enumerate(exs):
        n_real = sum(-(-(e - s) // 8) for s, e in ex.spans)
        rows = torch.cat([torch.arange(n_real), batch.starts.shape[1] // 2 + torch.arange(n_real)])
        at = positions[b, rows]
        want = torch.where(torch.isin(at, torch.tensor(ex.decisions)), 2.0,
                           torch.where(torch.isin(at, torch.tensor(ex.focus or [-1])), 3.0, 1.0))
        assert torch.equal(batch.weights[b, rows], want)
    _, targets = ar_batch(exs, ids["pad"])
    weights = ar_weights(exs, targets.shape[1], 3.0, decision_weight=2.0)
    for b, ex in enumerate(exs):
        assert ex.decisions and sorted((weights[b] == 2.0).nonzero()[:, 0].tolist()) == [p - 1 for p in ex.decisions]


def test_token_weights_scale_the_elbo_weight_without_pairs():
    """Without complementary pairs each block keeps its 1/t, times the token's weight."""
    tok = tiny_tokenizer()
    ids = special_ids(tok)
    exs = encode_texts([t for t in corpus_texts() if '"product_id":"' in t][:3], tok)
    weighted = bd_batch(exs, 8, ids, (0.5, 1.0), torch.Generator().manual_seed(0), False, 3.0, decision_weight=2.0)
    plain = bd_batch(exs, 8, ids, (0.5, 1.0), torch.Generator().manual_seed(0), False)
    positions = plain.starts[..., None] + torch.arange(8)
    for b, ex in enumerate(exs):
        real = torch.arange(plain.starts.shape[1]) < sum(-(-(e - s) // 8) for s, e in ex.spans)
        want = torch.where(torch.isin(positions[b], torch.tensor(ex.decisions)), 2.0,
                           torch.where(torch.isin(positions[b], torch.tensor(ex.focus)), 3.0, 1.0))
        torch.testing.assert_close((weighted.weights[b] / plain.weights[b])[real], want[real])


def test_shifted_blocks_start_anywhere_keep_their_context_head_clean_and_teach_every_turn_token_once():
    """shifted_share 1: every turn's blocks start 1..C-1 tokens before it; those context tokens
    are in the block as they are (never masked, never a target), and the complementary pair
    still makes each turn token a target exactly once."""
    tok = tiny_tokenizer()
    ids = special_ids(tok)
    exs = encode_texts(list(corpus_texts()[:6]), tok)
    C = 8
    pair = bd_batch(exs, C, ids, (0.5, 1.0), torch.Generator().manual_seed(0), complementary=True, shifted_share=1.0)
    NB = pair.noisy.shape[1] // 2
    phases = set()
    for b, ex in enumerate(exs):
        turn = {t for s, e in ex.spans for t in range(s, e)}
        taught = {}
        for j in range(NB):
            start = int(pair.starts[b, j])
            for k in range(C):
                position = start + k
                for twin in (j, j + NB):
                    target = int(pair.targets[b, twin, k])
                    if target == -100:
                        continue
                    # a turn token, or the eos that fills a turn's last block
                    assert target == (ex.ids[position] if position in turn else ids["eos"])
                    if position in turn:
                        taught[position] = taught.get(position, 0) + 1
                    else:
                        assert any(e <= position < e + C for _s, e in ex.spans)
        assert set(taught) == turn and all(n == 1 for n in taught.values())
        for s, _e in ex.spans:
            first = next(int(pair.starts[b, j]) for j in range(NB) if pair.starts[b, j] <= s < pair.starts[b, j] + C)
            assert 0 < s - first < C
            assert all(int(pair.noisy[b, j, k]) == ex.ids[first + k] for j in range(2 * NB)
                       if int(pair.starts[b, j]) == first for k in range(s - first))
            phases.add(s - first)
    assert len(phases) > 2                                                     # the phase is drawn, not fixed


def test_no_shifted_share_draws_nothing_more():
    """shifted_share 0 leaves the batch exactly as before (the same generator draws)."""
    tok = tiny_tokenizer()
    ids = special_ids(tok)
    exs = encode_texts(list(corpus_texts()[:6]), tok)
    plain = bd_batch(exs, 8, ids, (0.5, 1.0), torch.Generator().manual_seed(3))
    zero = bd_batch(exs, 8, ids, (0.5, 1.0), torch.Generator().manual_seed(3), shifted_share=0.0)
    assert torch.equal(plain.noisy, zero.noisy) and torch.equal(plain.starts, zero.starts)
    assert plain.n_tokens == zero.n_tokens
