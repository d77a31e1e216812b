"""Train a Sprout twin on the agent world's transcripts.

    python -m training.train --twin ar --preset cpu --out models/sprout-ar
    python -m training.train --twin bd --preset cpu --out models/sprout-bd --init-from models/sprout-ar

Resumable: the training state (fp32 weights, optimizer, step, data position) lives in
`runs/<out name>/state.pt`, written atomically every few minutes; rerunning the same command
continues. The model folder `--out` holds the best weights so far (bf16 safetensors + config
+ tokenizer), replaced atomically so a watcher never sees half a checkpoint.
Logs: `runs/<out name>/log.jsonl` (loss, lr, tokens/s, evals).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from engine.sprout.config import SproutConfig, preset_config
from engine.sprout.modeling import SproutModel
from engine.sprout.tokenizer import EOS, MASK, PAD, load_tokenizer, train_tokenizer
from training.data import Example, ar_batch, ar_weights, bd_batch, buckets, encode_texts
from training.grow import grow, widen_conv
from training.readout import ShopReadout

TRAIN_PRESETS = {
    #            batch tokens, lr,   warmup, steps,  save every (min), eval every (steps)
    "cpu": dict(max_tokens=4096, lr=2e-3, warmup=200, max_steps=8000, save_min=5.0, eval_every=500,
                corpus_n=30000, vocab=1024),
    # one CUDA GPU: large batches (the model is tiny: small batches leave the GPU mostly idle)
    "gpu": dict(max_tokens=65536, lr=2e-3, warmup=100, max_steps=100000, save_min=2.0, eval_every=500,
                corpus_n=120000, vocab=1024),
    "smoke": dict(max_tokens=512, lr=3e-3, warmup=2, max_steps=6, save_min=0.0, eval_every=3,
                  corpus_n=60, vocab=400),
}


READOUT_LR_SCALE = 30.0   # the read-out heads' lr over the model's


def param_groups(model: torch.nn.Module, weight_decay: float) -> list[dict]:
    """Weight decay on the weight matrices only. Not on the embedding: it is tied to the output,
    and decay pulls rows that get little gradient together (the AR twin trained with it ended
    with the street suffixes St / Rd / Ave / Ln at cosine 0.95 to each other). Not on norm
    gains, gate biases and decay rates either (vectors and scalars)."""
    decay, keep = [], []
    for name, param in model.named_parameters():
        (decay if param.ndim >= 2 and not name.startswith("embed") else keep).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": keep, "weight_decay": 0.0}]


def read_corpus(path: Path) -> tuple[list[str], list[list[int]]]:
    """The transcripts' texts and, for each, the assistant turns that carry no loss."""
    with open(path) as f:
        records = [json.loads(line) for line in f if line.strip()]
    return [r["text"] for r in records], [r.get("untrained_turns", []) for r in records]


def make_corpus(split: str, n: int, seed: int, path: Path) -> None:
    from training.corpus import main as corpus_main
    path.parent.mkdir(parents=True, exist_ok=True)
    corpus_main(["--split", split, "--n", str(n), "--seed", str(seed), "--out", str(path)])


def save_model_folder(model: SproutModel, tokenizer, out: Path, extra: dict) -> None:
    """bf16 weights + config + tokenizer into `out`, each file replaced atomically."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}-"))
    try:
        bf16 = SproutModel(model.config)
        bf16.load_state_dict(model.state_dict())
        bf16.to(torch.bfloat16).save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / "training.json").write_text(json.dumps(extra, indent=2))
        # the weights last, so a watcher that reacts to them finds config and tokenizer ready
        names = sorted(p.name for p in tmp.iterdir() if p.is_file())
        names.sort(key=lambda n: n.endswith(".safetensors"))
        for name in names:
            os.replace(tmp / name, out / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def atomic_torch_save(obj, path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def next_token_loss(logits: torch.Tensor, batch: list[Example], targets: torch.Tensor,
                    focus_weight: float = 1.0, decision_weight: float = 1.0) -> torch.Tensor:
    """Mean CE over assistant targets (B, T), focus tokens counted focus_weight times and
    decision tokens decision_weight times."""
    if focus_weight == 1.0 and decision_weight == 1.0:
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)
    ce = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100, reduction="none")
    weights = ar_weights(batch, targets.shape[1], focus_weight, decision_weight).to(ce.device).flatten()
    return (ce * weights).sum() / max(int((targets != -100).sum()), 1)


def loss_ar(model: SproutModel, batch: list[Example], ids: dict[str, int],
            focus_weight: float = 1.0, decision_weight: float = 1.0) -> tuple[torch.Tensor, int]:
    x, targets = (t.to(model.device) for t in ar_batch(batch, ids["pad"]))
    logits = model(x)                                                     # (B, T, V)
    n = int((targets != -100).sum())
    return next_token_loss(logits, batch, targets, focus_weight, decision_weight), n


def loss_bd(model: SproutModel, batch: list[Example], ids: dict[str, int], block: int,
            gen: torch.Generator, complementary: bool = False, ar_weight: float = 0.0,
            focus_weight: float = 1.0, decision_weight: float = 1.0, on_blocks=None) -> tuple[torch.Tensor, int]:
    """Masked-diffusion loss on noisy blocks; with ar_weight > 0 plus that times the next-token
    loss of the clean stream (the AR twin's pass, computed anyway as the blocks' context), so the
    adaptation keeps and sharpens what the AR twin knows about copying from the prompt. Focus
    tokens (data.FOCUS) count focus_weight times in both, decision tokens (data.DECISION)
    decision_weight times. on_blocks, if given, is told the
    blocks' starts (B, NB) before the forward pass (the colour read-out uses them)."""
    cfg = model.config
    b = bd_batch(batch, block, ids, (cfg.noise_low, cfg.noise_high), gen, complementary, focus_weight,
                 decision_weight)                                                                  # on the CPU
    b = dataclasses.replace(b, **{f: getattr(b, f).to(model.device) for f in ("clean", "noisy", "starts", "targets",
                                                                              "weights")})
    if on_blocks is not None:
        on_blocks(b.starts)
    logits, clean_h = model.bd_forward(b.clean, b.noisy, b.starts)        # (B, NB, C, V), (B, T, d)
    ce = F.cross_entropy(logits.flatten(0, 2), b.targets.flatten(), ignore_index=-100, reduction="none")
    # ELBO of masked diffusion: CE on masked tokens weighted 1/t (1 for complementary pairs),
    # averaged over block tokens
    loss = (ce * b.weights.flatten()).sum() / max(b.n_tokens, 1)
    if ar_weight:
        ar_targets = ar_batch(batch, ids["pad"])[1].to(model.device)
        loss = loss + ar_weight * next_token_loss(model.logits(clean_h), batch, ar_targets, focus_weight,
                                                  decision_weight)
    return loss, int((b.targets != -100).sum())


@torch.no_grad()
def validation_loss(model, examples, ids, twin, max_tokens, seed=0) -> float:
    model.eval()
    gen = torch.Generator().manual_seed(seed)
    total, count = 0.0, 0
    for i, batch in enumerate(buckets(examples, max_tokens, random.Random(seed))):
        block = model.config.block_sizes[i % len(model.config.block_sizes)]
        loss, n = loss_ar(model, batch, ids) if twin == "ar" else loss_bd(model, batch, ids, block, gen)
        total, count = total + loss.item() * n, count + n
    model.train()
    return total / max(count, 1)


def agent_eval(model, tokenizer, twin: str, n_tasks: int, task_set: str = "templates") -> dict:
    """Greedy agent episodes on held-out validation tasks of a task set (engine.world.tasks.TASK_SETS;
    never the benchmark's tasks); {} when the agent loop is absent."""
    try:
        from engine.agent import run_episode
        from engine.backends.sprout import SproutARBackend, SproutBackend
        from engine.world.tasks import TASK_SETS
    except ImportError:
        return {}
    from engine.catalog import bundled_decoding
    from engine.trace import GenerationConfig
    if model.device.type != "cpu":   # the backends decode on the CPU, as the shipped model does
        model = copy.deepcopy(model).cpu()
    model.eval()
    backend = (SproutARBackend if twin == "ar" else SproutBackend)(model, tokenizer, name=f"sprout-{twin}")
    # short, for speed; the grammar's sets hold outside-the-world answers of up to ~70 tokens
    gen_length = 64 if task_set == "templates" else 96
    cfg = GenerationConfig(**{**bundled_decoding(), "gen_length": gen_length, "block_size": 8, "steps": 8})
    tasks = TASK_SETS[task_set][1](n_tasks)
    wins, nfe = 0, 0
    for task in tasks:
        tr = run_episode(backend, task, cfg)
        wins += bool(tr.success)
        nfe += tr.nfe
    model.train()
    return {"agent_success": wins / max(len(tasks), 1), "agent_tasks": len(tasks), "agent_nfe": nfe}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--twin", choices=["ar", "bd"], required=True)
    p.add_argument("--preset", choices=list(TRAIN_PRESETS), default="cpu")
    p.add_argument("--out", required=True, help="model folder for the best weights")
    p.add_argument("--corpus", help="training JSONL (made with training.corpus when missing)")
    p.add_argument("--val-corpus", help="validation JSONL (held-out entities)")
    p.add_argument("--init-from", help="start from these weights (AR -> diffusion adaptation)")
    p.add_argument("--minutes", type=float, default=None,
                   help="training time in all (earlier sessions of a resumed run count); the cosine ends there")
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--warmup", type=int, default=None, help="linear warm-up steps")
    p.add_argument("--eval-every", type=int, default=None, help="steps between held-out evaluations")
    p.add_argument("--noise", type=float, nargs=2, metavar=("LO", "HI"), default=None,
                   help="BD: per-block mask rate t ~ U[LO, HI] (default: the config's, 0.5 1.0)")
    p.add_argument("--complementary", action=argparse.BooleanOptionalAction, default=True,
                   help="BD: each block twice, with complementary masks (default on)")
    p.add_argument("--ar-weight", type=float, default=0.5,
                   help="BD: weight of the clean stream's next-token loss (0 = diffusion loss only)")
    p.add_argument("--logit-shift", action=argparse.BooleanOptionalAction, default=True,
                   help="BD: read token i from position i-1, as the AR weights do (default on)")
    p.add_argument("--focus-weight", type=float, default=1.0,
                   help="loss weight of a product id copied into a call (data.FOCUS: the row choice)")
    p.add_argument("--decision-weight", type=float, default=1.0,
                   help="loss weight of the call name right after a search result (data.DECISION: add or "
                        "'not available')")
    p.add_argument("--row-colour-weight", type=float, default=0.0,
                   help="weight of the auxiliary loss that reads the row colour at search rows' ids and the "
                        "colour asked for at copied ids (training.readout; 0 = off)")
    p.add_argument("--row-match-weight", type=float, default=0.0,
                   help="weight of the auxiliary loss that reads, at each search row's id, whether the row is "
                        "what the search asked for (training.readout; 0 = off)")
    p.add_argument("--grow", default="",
                   help="with --init-from: append these layers (e.g. A), starting as the identity")
    p.add_argument("--conv-size", type=int, default=None,
                   help="with --init-from: widen the G layers' short conv to this many tokens (new taps zero)")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--device", default="cpu", help="cpu or cuda (weights are saved for the CPU either way)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--select", choices=("best", "last"), default="best",
                   help="the model folder keeps the best evaluation (agent success, then validation loss) or the last")
    p.add_argument("--agent-tasks", type=int, default=10, help="held-out agent tasks per eval (0 = none)")
    p.add_argument("--agent-task-set", choices=("templates", "phrasing", "words"), default="templates",
                   help="validation tasks of which benchmark kind (engine.bench --task-set)")
    p.add_argument("--run-dir", default="runs", help="training state and logs go to RUN_DIR/<out name>")
    p.add_argument("--data-dir", default="data", help="where generated corpora are kept")
    args = p.parse_args(argv)
    hp = dict(TRAIN_PRESETS[args.preset])
    if args.lr:
        hp["lr"] = args.lr
    for key in ("max_steps", "warmup", "eval_every"):
        if getattr(args, key) is not None:
            hp[key] = getattr(args, key)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    out = Path(args.out)
    run_dir = Path(args.run_dir) / out.name
    run_dir.mkdir(parents=True, exist_ok=True)
    data_dir = Path(args.data_dir)
    corpus = Path(args.corpus) if args.corpus else data_dir / f"corpus-train-{args.preset}.jsonl"
    val_corpus = Path(args.val_corpus) if args.val_corpus else data_dir / f"corpus-heldout-{args.preset}.jsonl"
    if not corpus.exists():
        make_corpus("train", hp["corpus_n"], args.seed, corpus)
    if not val_corpus.exists():
        make_corpus("heldout", max(hp["corpus_n"] // 50, 20), args.seed + 1, val_corpus)
    texts, untrained = read_corpus(corpus)

    # tokenizer: from the init model, the output folder, or trained on the corpus
    tok_src = next((d for d in (args.init_from, out) if d and (Path(d) / "tokenizer.json").exists()), None)
    tokenizer = load_tokenizer(tok_src) if tok_src else train_tokenizer(texts, hp["vocab"])
    ids = {"eos": tokenizer.convert_tokens_to_ids(EOS), "pad": tokenizer.convert_tokens_to_ids(PAD),
           "mask": tokenizer.convert_tokens_to_ids(MASK)}

    if args.init_from:
        model = SproutModel.from_pretrained(args.init_from, dtype=torch.float32)
        model.config.causal = args.twin == "ar"
        if args.grow:
            model = grow(model, args.grow)
        if args.conv_size and args.conv_size != model.config.conv_size:
            model = widen_conv(model, args.conv_size)
    elif args.grow or args.conv_size:
        p.error("--grow and --conv-size change trained weights: give --init-from too.")
    else:
        model = SproutModel(preset_config(
            args.preset, vocab_size=len(tokenizer), causal=args.twin == "ar", mask_token_id=ids["mask"],
            eos_token_id=ids["eos"], pad_token_id=ids["pad"]))
    assert isinstance(model.config, SproutConfig)
    model.to(device)
    recipe = {"lr": hp["lr"], "warmup": hp["warmup"], "max_steps": hp["max_steps"],
              "init_from": args.init_from, "corpus": corpus.name, "transcripts": len(texts),
              "focus_weight": args.focus_weight, "decision_weight": args.decision_weight, "grow": args.grow,
              "conv_size": model.config.conv_size, "row_colour_weight": args.row_colour_weight,
              "row_match_weight": args.row_match_weight}
    if args.twin == "bd":   # an AR twin's config may carry an older schedule: a BD run states its own
        model.config.noise_low, model.config.noise_high = args.noise or (SproutConfig.noise_low,
                                                                         SproutConfig.noise_high)
        model.config.logit_shift = args.logit_shift
        recipe.update(noise=[model.config.noise_low, model.config.noise_high], logit_shift=args.logit_shift,
                      complementary=args.complementary, ar_weight=args.ar_weight)
    readout = ShopReadout(model).to(device) if args.row_colour_weight or args.row_match_weight else None
    groups = param_groups(model, weight_decay=0.1)
    if readout is not None:   # training-only heads: in the run's state, never in the model folder
        # fresh linear probes at the model's fine-tuning lr (3e-4) barely moved in 100 steps
        # (read-out loss 2.06 -> 1.99, chance 2.08), so their gradient into the model was noise
        groups.append({"params": list(readout.parameters()), "weight_decay": 0.0, "lr_scale": READOUT_LR_SCALE})
    opt = torch.optim.AdamW(groups, lr=hp["lr"], betas=(0.9, 0.95))
    state_path = run_dir / "state.pt"
    step, best, tokens_seen, seconds_before = 0, None, 0, 0.0
    if state_path.exists():
        st = torch.load(state_path, weights_only=False, map_location=device)
        model.load_state_dict(st["model"])
        if readout is not None and "readout" in st:
            readout.load_state_dict(st["readout"])
        try:
            opt.load_state_dict(st["opt"])
        except ValueError:   # saved before the decay / no-decay groups: the weights still resume
            print("the saved optimizer state has another layout; starting a fresh one", file=sys.stderr)
        step, best, tokens_seen, seconds_before = st["step"], st["best"], st["tokens_seen"], st["seconds"]
        print(f"resuming {out.name} at step {step}", file=sys.stderr)

    examples = encode_texts(texts, tokenizer, untrained)
    val_texts, val_untrained = read_corpus(val_corpus)
    val_examples = encode_texts(val_texts[:200], tokenizer, val_untrained[:200])
    rng = random.Random(args.seed + step)
    gen = torch.Generator().manual_seed(args.seed + step)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{args.twin} twin, {n_params / 1e6:.2f} M params, {len(examples)} transcripts", file=sys.stderr)

    def progress(s: int) -> float:
        """Share of the run done: of max_steps, or of --minutes when that ends it sooner."""
        done = (s - hp["warmup"]) / max(1, hp["max_steps"] - hp["warmup"])
        if args.minutes:
            done = max(done, (seconds_before + time.time() - t0) / (args.minutes * 60))
        return min(1.0, done)

    def lr_at(s: int) -> float:   # linear warm-up, cosine to 10 %
        if s < hp["warmup"]:
            return hp["lr"] * (s + 1) / hp["warmup"]
        frac = progress(s)
        return hp["lr"] * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))

    def save_state():
        atomic_torch_save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "best": best,
                           "tokens_seen": tokens_seen, "seconds": seconds_before + time.time() - t0,
                           **({"readout": readout.state_dict()} if readout is not None else {})},
                          state_path)

    def evaluate():
        nonlocal best
        val = validation_loss(model, val_examples, ids, args.twin, hp["max_tokens"])
        rec = {"step": step, "val_loss": round(val, 4)}
        if args.agent_tasks:
            try:   # an evaluation bug must not end hours of training
                rec.update(agent_eval(model, tokenizer, args.twin, args.agent_tasks, args.agent_task_set))
            except Exception as exc:  # noqa: BLE001
                rec["agent_eval_error"] = f"{type(exc).__name__}: {exc}"[:300]
        score = (rec.get("agent_success", 0.0), -val)
        improved = best is None or score > tuple(best)
        if improved:
            best = list(score)
        saved = improved or args.select == "last"
        if saved:
            save_model_folder(model, tokenizer, out, {
                "twin": args.twin, "preset": args.preset, "step": step, "tokens_seen": tokens_seen,
                "train_seconds": round(seconds_before + time.time() - t0), "params": n_params, **recipe, **rec})
        rec["saved"] = saved
        log(rec)
        return rec

    log_file = open(run_dir / "log.jsonl", "a")

    def log(rec: dict) -> None:
        log_file.write(json.dumps({"time": round(time.time()), **rec}) + "\n")
        log_file.flush()

    t0 = last_save = time.time()
    bar = tqdm(total=hp["max_steps"], initial=step, desc=f"sprout-{args.twin}", file=sys.stderr,
               mininterval=5)
    model.train()
    window_tokens, window_t = 0, time.time()
    while step < hp["max_steps"]:
        for batch in buckets(examples, hp["max_tokens"], rng):
            if step >= hp["max_steps"] or (args.minutes and progress(step) >= 1.0):
                break
            for group in opt.param_groups:
                group["lr"] = lr_at(step) * group.get("lr_scale", 1.0)
            with readout.capture(model) if readout is not None else contextlib.nullcontext():
                if args.twin == "ar":
                    loss, n = loss_ar(model, batch, ids, args.focus_weight, args.decision_weight)
                else:
                    block = model.config.block_sizes[int(torch.randint(len(model.config.block_sizes), (1,),
                                                                       generator=gen))]
                    loss, n = loss_bd(model, batch, ids, block, gen, args.complementary, args.ar_weight,
                                      args.focus_weight, args.decision_weight,
                                      on_blocks=readout.see_blocks if readout is not None else None)
                aux = readout.loss(batch) if args.row_colour_weight else None
                match = readout.match_loss(batch) if args.row_match_weight else None
            if aux is not None:
                loss = loss + args.row_colour_weight * aux
            if match is not None:
                loss = loss + args.row_match_weight * match
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            batch_tokens = sum(len(ex.ids) for ex in batch)
            tokens_seen += batch_tokens
            window_tokens += batch_tokens
            bar.update(1)
            if step % 50 == 0:
                rate = window_tokens / max(time.time() - window_t, 1e-9)
                log({"step": step, "loss": round(loss.item(), 4), "lr": lr_at(step), "tokens_per_s": round(rate),
                     "tokens_seen": tokens_seen, "target_tokens": n,
                     **({"row_colour_loss": round(aux.item(), 4)} if aux is not None else {}),
                     **({"row_match_loss": round(match.item(), 4)} if match is not None else {})})
                bar.set_postfix(loss=f"{loss.item():.3f}", tok_s=f"{rate:.0f}")
                window_tokens, window_t = 0, time.time()
            if step % hp["eval_every"] == 0:
                evaluate()
            if time.time() - last_save >= hp["save_min"] * 60:
                save_state()
                last_save = time.time()
        else:
            continue
        break
    evaluate()
    save_state()
    bar.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
