"""`python -m training.train --preset smoke` trains, saves a loadable folder, and resumes."""

import json

import pytest
import torch
from transformers import AutoModel

import sprout.modeling  # noqa: F401  (registers Sprout with the Auto classes)
from sprout.config import preset_config
from sprout.modeling import SproutModel
from training.train import READOUT_LR_SCALE, main, param_groups


def run(tmp_path, *extra):
    args = ["--preset", "smoke", "--run-dir", str(tmp_path / "runs"), "--data-dir", str(tmp_path / "data"),
            "--agent-tasks", "0", *extra]
    assert main(args) == 0


def test_smoke_training_saves_resumes_and_adapts(tmp_path):
    ar = tmp_path / "sprout-ar"
    run(tmp_path, "--twin", "ar", "--out", str(ar), "--max-steps", "4")
    log = [json.loads(line) for line in (tmp_path / "runs" / "sprout-ar" / "log.jsonl").read_text().splitlines()]
    assert any("val_loss" in rec for rec in log)
    model = AutoModel.from_pretrained(ar)
    assert model.config.causal is True
    assert json.loads((ar / "training.json").read_text())["twin"] == "ar"

    run(tmp_path, "--twin", "ar", "--out", str(ar), "--max-steps", "6")       # resumes at step 4
    log = [json.loads(line) for line in (tmp_path / "runs" / "sprout-ar" / "log.jsonl").read_text().splitlines()]
    assert max(rec["step"] for rec in log) == 6

    bd = tmp_path / "sprout-bd"
    run(tmp_path, "--twin", "bd", "--out", str(bd), "--init-from", str(ar), "--max-steps", "3")
    bd_config = AutoModel.from_pretrained(bd).config
    assert bd_config.causal is False and bd_config.logit_shift is True      # the BD recipe is recorded
    assert (bd_config.noise_low, bd_config.noise_high) == (0.5, 1.0)
    recipe = json.loads((bd / "training.json").read_text())
    assert recipe["complementary"] is True and recipe["ar_weight"] == 0.5 and recipe["init_from"] == str(ar)
    assert recipe["corpus"] == "corpus-train-smoke.jsonl" and recipe["transcripts"] == 60
    # the adapted twin keeps the AR twin's tokenizer
    assert (bd / "tokenizer.json").read_text() == (ar / "tokenizer.json").read_text()

    grown = tmp_path / "sprout-bd-grown"
    run(tmp_path, "--twin", "bd", "--out", str(grown), "--init-from", str(bd), "--max-steps", "2", "--grow", "A",
        "--focus-weight", "3")
    assert AutoModel.from_pretrained(grown).config.layer_pattern == bd_config.layer_pattern + "A"
    recipe = json.loads((grown / "training.json").read_text())
    assert recipe["grow"] == "A" and recipe["focus_weight"] == 3.0

    wide = tmp_path / "sprout-bd-wide"
    run(tmp_path, "--twin", "bd", "--out", str(wide), "--init-from", str(bd), "--max-steps", "2",
        "--conv-size", "6", "--row-colour-weight", "0.1", "--row-match-weight", "0.2", "--decision-weight", "3")
    assert AutoModel.from_pretrained(wide).config.conv_size == 6
    recipe = json.loads((wide / "training.json").read_text())
    assert recipe["conv_size"] == 6 and recipe["row_colour_weight"] == 0.1 and recipe["row_match_weight"] == 0.2
    assert recipe["decision_weight"] == 3.0
    state = torch.load(tmp_path / "runs" / "sprout-bd-wide" / "state.pt", weights_only=False)
    assert set(state["readout"]) == {f"{h}.0.{w}" for h in ("heads", "wanted_heads", "match_heads")
                                     for w in ("weight", "bias")}
    assert not any(k.startswith("heads") for k in state["model"]), "the heads stay out of the model"
    model_lr, *_, head_lr = (g["lr"] for g in state["opt"]["param_groups"])
    assert head_lr == pytest.approx(READOUT_LR_SCALE * model_lr), "the fresh heads learn faster"


def test_agent_eval_decodes_each_twin_its_own_way(monkeypatch):
    """The AR twin is evaluated autoregressively, the BD twin by block diffusion."""
    import world.agent
    from engine.backends.sprout import SproutARBackend, SproutBackend
    from tests.sprout.helpers import tiny_sprout, tiny_tokenizer
    from training.evaluate import agent_eval

    seen = []

    class Done:
        success, nfe = True, 1

    monkeypatch.setattr(world.agent, "run_episode", lambda backend, task, cfg: seen.append(type(backend)) or Done())
    for twin, cls in (("ar", SproutARBackend), ("bd", SproutBackend)):
        seen.clear()
        report = agent_eval(tiny_sprout(causal=twin == "ar"), tiny_tokenizer(), twin, 2)
        assert seen == [cls, cls] and report["agent_success"] == 1.0


def test_bd_loss_adds_the_clean_streams_next_token_loss():
    """loss_bd(ar_weight=w) - loss_bd(ar_weight=0) == w * the AR twin's loss on the same ids."""
    from tests.sprout.helpers import corpus_texts, special_ids, tiny_sprout, tiny_tokenizer
    from training.data import encode_texts
    from training.losses import loss_ar, loss_bd

    tok = tiny_tokenizer()
    ids = special_ids(tok)
    model = tiny_sprout(causal=False)
    batch = encode_texts(list(corpus_texts()[:3]), tok)
    with torch.no_grad():
        plain, _ = loss_bd(model, batch, ids, 8, torch.Generator().manual_seed(1), complementary=True)
        mixed, _ = loss_bd(model, batch, ids, 8, torch.Generator().manual_seed(1), complementary=True,
                           ar_weight=0.5)
        ar, _ = loss_ar(model, batch, ids)
    assert torch.allclose(mixed - plain, 0.5 * ar, atol=1e-5)
    assert ar > 0


def test_weight_decay_spares_the_tied_embedding_norms_and_vectors():
    model = SproutModel(preset_config("smoke", vocab_size=64, causal=True, mask_token_id=1, eos_token_id=2,
                                      pad_token_id=3))
    decayed, kept = param_groups(model, weight_decay=0.1)
    assert decayed["weight_decay"] == 0.1 and kept["weight_decay"] == 0.0
    names = {id(p): n for n, p in model.named_parameters()}
    kept_names = {names[id(p)] for p in kept["params"]}
    decayed_names = {names[id(p)] for p in decayed["params"]}
    assert {"embed.weight", "final_norm.weight"} <= kept_names
    assert all(n.startswith("embed") or p.ndim == 1 for n, p in model.named_parameters() if n in kept_names)
    assert "blocks.0.mlp.up.weight" in decayed_names and "blocks.0.mixer.qkv.weight" in decayed_names
    assert len(kept_names) + len(decayed_names) == len(list(model.parameters()))


def test_resume_from_a_state_saved_with_one_optimizer_group(tmp_path):
    ar = tmp_path / "sprout-ar"
    run(tmp_path, "--twin", "ar", "--out", str(ar), "--max-steps", "2")
    state_path = tmp_path / "runs" / "sprout-ar" / "state.pt"
    state = torch.load(state_path, weights_only=False)
    params = [torch.nn.Parameter(torch.zeros(1))]
    state["opt"] = torch.optim.AdamW(params).state_dict()      # the older single-group layout
    torch.save(state, state_path)
    run(tmp_path, "--twin", "ar", "--out", str(ar), "--max-steps", "3")
    log = [json.loads(line) for line in (tmp_path / "runs" / "sprout-ar" / "log.jsonl").read_text().splitlines()]
    assert max(rec["step"] for rec in log) == 3


def test_select_last_keeps_the_last_evaluation_and_best_the_best(tmp_path, monkeypatch):
    import training.train as train
    losses = iter(float(i) for i in range(1, 100))        # every evaluation worse than the one before
    monkeypatch.setattr(train, "validation_loss", lambda *a, **k: next(losses))
    for select in ("best", "last"):
        out = tmp_path / f"ar-{select}"
        run(tmp_path, "--twin", "ar", "--out", str(out), "--max-steps", "3", "--eval-every", "1", "--select", select)
        saved_step = json.loads((out / "training.json").read_text())["step"]
        assert saved_step == (1 if select == "best" else 3)


def test_minutes_end_the_run(tmp_path):
    ar = tmp_path / "sprout-ar"
    run(tmp_path, "--twin", "ar", "--out", str(ar), "--max-steps", "2000", "--minutes", "0.003")
    log = [json.loads(line) for line in (tmp_path / "runs" / "sprout-ar" / "log.jsonl").read_text().splitlines()]
    assert max(rec["step"] for rec in log) < 1000


@pytest.mark.parametrize("field", ["focus", "decisions"])
def test_a_token_weight_raises_the_loss_by_those_tokens_share(field):
    """With weight w on the focus (or decision) tokens the AR loss grows by (w - 1) x their CE /
    all targets."""
    from tests.sprout.helpers import corpus_texts, special_ids, tiny_sprout, tiny_tokenizer
    from training.data import ar_batch, encode_texts
    from training.losses import loss_ar

    tok = tiny_tokenizer()
    model = tiny_sprout(causal=True)
    batch = encode_texts([t for t in corpus_texts() if '"product_id":"' in t][:2], tok)
    x, targets = ar_batch(batch, special_ids(tok)["pad"])
    weight = {"focus_weight" if field == "focus" else "decision_weight": 3.0}
    with torch.no_grad():
        plain, n = loss_ar(model, batch, special_ids(tok))
        weighted, _ = loss_ar(model, batch, special_ids(tok), **weight)
        ce = torch.nn.functional.cross_entropy(model(x).transpose(1, 2), targets, ignore_index=-100, reduction="none")
    marked_ce = sum(ce[b, p - 1] for b, ex in enumerate(batch) for p in getattr(ex, field))
    assert sum(len(getattr(ex, field)) for ex in batch) > 0
    torch.testing.assert_close(weighted - plain, 2.0 * marked_ce / n)


@pytest.mark.parametrize("requested", ["bf16", "fp32"])
def test_a_run_on_the_bf16_copy_trains_saves_fp32_masters_and_resumes(tmp_path, requested):
    """--precision bf16 (forced here, whatever the CPU) computes on a bf16 copy; the state and the
    folder hold the fp32 master, the read-out heads train, and a resumed run goes on moving it."""
    out = tmp_path / "sprout-bd"
    common = ["--twin", "bd", "--out", str(out), "--precision", requested, "--row-colour-weight", "0.1"]
    run(tmp_path, *common, "--max-steps", "2")
    state_path = tmp_path / "runs" / "sprout-bd" / "state.pt"
    first = torch.load(state_path, weights_only=False)
    assert all(t.dtype == torch.float32 for t in first["model"].values())
    assert all(t.dtype == torch.float32 for t in first["readout"].values())
    log = [json.loads(line) for line in (tmp_path / "runs" / "sprout-bd" / "log.jsonl").read_text().splitlines()]
    assert log[0]["precision"] == requested
    folder = SproutModel.from_pretrained(out, dtype=torch.float32).state_dict()
    # the folder is the master rounded to bf16 once (the copy's own rounding would keep A_log in fp32)
    assert all(torch.equal(folder[k], first["model"][k].to(torch.bfloat16).float()) for k in folder)

    run(tmp_path, *common, "--max-steps", "4")                                # resumes at step 2
    second = torch.load(state_path, weights_only=False)
    assert second["step"] == 4
    moved = sum((second["model"][k] - first["model"][k]).abs().sum() for k in first["model"])
    assert torch.isfinite(moved) and moved > 0
