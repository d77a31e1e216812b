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
import json
import math
import random
import sys
import time
from pathlib import Path

import torch
from tqdm import tqdm

from sprout.config import SproutConfig, preset_config
from sprout.modeling import SproutModel
from sprout.tokenizer import EOS, MASK, PAD, load_tokenizer, train_tokenizer
from training import precision as precisions
from training.checkpoints import atomic_torch_save, save_model_folder
from training.data import Example, buckets, encode_texts
from training.evaluate import agent_eval
from training.grow import grow, widen_conv
from training.losses import loss_ar, loss_bd, validation_loss
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


# The read-out heads' lr over the model's: fresh linear heads at the model's fine-tuning lr stay
# near chance for a long time, so their gradient into the model is noise (models/README.md).
READOUT_LR_SCALE = 30.0


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
    with open(path) as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    return [r["text"] for r in records], [r.get("untrained_turns", []) for r in records]


def make_corpus(split: str, n: int, seed: int, path: Path) -> None:
    from training.corpus import main as corpus_main
    path.parent.mkdir(parents=True, exist_ok=True)
    corpus_main(["--split", split, "--n", str(n), "--seed", str(seed), "--out", str(path)])


def parser() -> argparse.ArgumentParser:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--twin", choices=["ar", "bd"], required=True)
    cli.add_argument("--preset", choices=list(TRAIN_PRESETS), default="cpu")
    cli.add_argument("--out", required=True, help="model folder for the best weights")
    cli.add_argument("--corpus", help="training JSONL (made with training.corpus when missing)")
    cli.add_argument("--val-corpus", help="validation JSONL (held-out entities)")
    cli.add_argument("--init-from", help="start from these weights (AR -> diffusion adaptation)")
    cli.add_argument("--minutes", type=float, default=None,
                   help="training time in all (earlier sessions of a resumed run count); the cosine ends there")
    cli.add_argument("--max-steps", type=int, default=None)
    cli.add_argument("--lr", type=float, default=None)
    cli.add_argument("--warmup", type=int, default=None, help="linear warm-up steps")
    cli.add_argument("--eval-every", type=int, default=None, help="steps between held-out evaluations")
    cli.add_argument("--noise", type=float, nargs=2, metavar=("LO", "HI"), default=None,
                   help="BD: per-block mask rate t ~ U[LO, HI] (default: the config's, 0.5 1.0)")
    cli.add_argument("--complementary", action=argparse.BooleanOptionalAction, default=True,
                   help="BD: each block twice, with complementary masks (default on)")
    cli.add_argument("--ar-weight", type=float, default=0.5,
                   help="BD: weight of the clean stream's next-token loss (0 = diffusion loss only)")
    cli.add_argument("--logit-shift", action=argparse.BooleanOptionalAction, default=True,
                   help="BD: read token i from position i-1, as the AR weights do (default on)")
    cli.add_argument("--shifted-blocks", type=float, default=0.0,
                   help="BD: share of the replies whose blocks start at a random phase (data.bd_batch); the "
                        "saved config then says `sliding_blocks` (decoders may start a block anywhere)")
    cli.add_argument("--focus-weight", type=float, default=1.0,
                   help="loss weight of a product id copied into a call (data.FOCUS: the row choice)")
    cli.add_argument("--decision-weight", type=float, default=1.0,
                   help="loss weight of the call name right after a search result (data.DECISION: add or "
                        "'not available')")
    cli.add_argument("--row-colour-weight", type=float, default=0.0,
                   help="weight of the auxiliary loss that reads the row colour at search rows' ids and the "
                        "colour asked for at copied ids (training.readout; 0 = off)")
    cli.add_argument("--row-match-weight", type=float, default=0.0,
                   help="weight of the auxiliary loss that reads, at each search row's id, whether the row is "
                        "what the search asked for (training.readout; 0 = off)")
    cli.add_argument("--grow", default="",
                   help="with --init-from: append these layers (e.g. A), starting as the identity")
    cli.add_argument("--conv-size", type=int, default=None,
                   help="with --init-from: widen the G layers' short conv to this many tokens (new taps zero)")
    cli.add_argument("--threads", type=int, default=None)
    cli.add_argument("--precision", choices=precisions.PRECISIONS, default="auto",
                   help="bf16 (a bf16 compute copy of fp32 master weights), bf16-autocast (fp32 weights cast at "
                        "each product) or fp32; auto takes bf16 where "
                        "the device has bf16 matrix units (training/precision.py)")
    cli.add_argument("--device", default="cpu", help="cpu or cuda (weights are saved for the CPU either way)")
    cli.add_argument("--seed", type=int, default=0)
    cli.add_argument("--select", choices=("best", "last"), default="best",
                   help="the model folder keeps the best evaluation (agent success, then validation loss) or the last")
    cli.add_argument("--agent-tasks", type=int, default=10, help="held-out agent tasks per eval (0 = none)")
    cli.add_argument("--agent-task-set", choices=("templates", "phrasing", "words"), default="templates",
                   help="validation tasks of which benchmark kind (bench.agent --task-set)")
    cli.add_argument("--run-dir", default="runs", help="training state and logs go to RUN_DIR/<out name>")
    cli.add_argument("--data-dir", default="data", help="where generated corpora are kept")
    return cli


def hyperparameters(args: argparse.Namespace) -> dict:
    """The preset's hyperparameters with the flags that override them."""
    hparams = dict(TRAIN_PRESETS[args.preset])
    if args.lr:
        hparams["lr"] = args.lr
    for key in ("max_steps", "warmup", "eval_every"):
        if getattr(args, key) is not None:
            hparams[key] = getattr(args, key)
    return hparams


def prepare_corpora(args: argparse.Namespace, hparams: dict) -> tuple[Path, Path]:
    """The training and validation corpus files, generated when missing."""
    data_dir = Path(args.data_dir)
    corpus = Path(args.corpus) if args.corpus else data_dir / f"corpus-train-{args.preset}.jsonl"
    val_corpus = Path(args.val_corpus) if args.val_corpus else data_dir / f"corpus-heldout-{args.preset}.jsonl"
    if not corpus.exists():
        make_corpus("train", hparams["corpus_n"], args.seed, corpus)
    if not val_corpus.exists():
        make_corpus("heldout", max(hparams["corpus_n"] // 50, 20), args.seed + 1, val_corpus)
    return corpus, val_corpus


def build_tokenizer(args: argparse.Namespace, corpus: Path, vocab: int):
    """The tokenizer of the init model or of the output folder, else one trained on the corpus."""
    source = next((folder for folder in (args.init_from, args.out)
                   if folder and (Path(folder) / "tokenizer.json").exists()), None)
    return load_tokenizer(source) if source else train_tokenizer(read_corpus(corpus)[0], vocab)


def build_model(args: argparse.Namespace, ids: dict[str, int], vocab_size: int) -> SproutModel:
    """From --init-from (grown or widened when asked), else freshly initialised from the preset."""
    if not args.init_from:
        if args.grow or args.conv_size:
            raise ValueError("--grow and --conv-size change trained weights: give --init-from too.")
        return SproutModel(preset_config(
            args.preset, vocab_size=vocab_size, causal=args.twin == "ar", mask_token_id=ids["mask"],
            eos_token_id=ids["eos"], pad_token_id=ids["pad"]))
    model = SproutModel.from_pretrained(args.init_from, dtype=torch.float32)
    model.config.causal = args.twin == "ar"
    if args.grow:
        model = grow(model, args.grow)
    if args.conv_size and args.conv_size != model.config.conv_size:
        model = widen_conv(model, args.conv_size)
    return model


class TrainingRun:
    """One resumable training run: the model, its optimizer and read-out heads, the data, and
    where it stands (step, best evaluation, tokens and seconds so far)."""

    def __init__(self, args: argparse.Namespace, hparams: dict, model: SproutModel, tokenizer, ids: dict[str, int],
                 corpus: Path, val_corpus: Path, device: torch.device):
        self.args, self.hparams, self.model, self.tokenizer, self.ids = args, hparams, model, tokenizer, ids
        self.out = Path(args.out)
        self.run_dir = Path(args.run_dir) / self.out.name
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.state_path = self.run_dir / "state.pt"
        texts, untrained = read_corpus(corpus)
        self.recipe = {"lr": hparams["lr"], "warmup": hparams["warmup"], "max_steps": hparams["max_steps"],
                       "init_from": args.init_from, "corpus": corpus.name, "transcripts": len(texts),
                       "focus_weight": args.focus_weight, "decision_weight": args.decision_weight,
                       "grow": args.grow, "conv_size": model.config.conv_size,
                       "row_colour_weight": args.row_colour_weight, "row_match_weight": args.row_match_weight}
        if args.twin == "bd":   # an AR twin's config may carry an older schedule: a BD run states its own
            model.config.noise_low, model.config.noise_high = args.noise or (SproutConfig.noise_low,
                                                                             SproutConfig.noise_high)
            model.config.logit_shift = args.logit_shift
            if args.shifted_blocks:
                model.config.sliding_blocks = True
            self.recipe.update(noise=[model.config.noise_low, model.config.noise_high],
                               logit_shift=args.logit_shift, complementary=args.complementary,
                               ar_weight=args.ar_weight, shifted_blocks=args.shifted_blocks)
        use_readout = args.row_colour_weight or args.row_match_weight
        self.readout = ShopReadout(model).to(device) if use_readout else None
        groups = param_groups(model, weight_decay=0.1)
        if self.readout is not None:   # training-only heads: in the run's state, never in the model folder
            groups.append({"params": list(self.readout.parameters()), "weight_decay": 0.0,
                           "lr_scale": READOUT_LR_SCALE})
        self.opt = torch.optim.AdamW(groups, lr=hparams["lr"], betas=(0.9, 0.95))
        self.device = device
        self.precision = precisions.choose(args.precision, device)
        self.step, self.best, self.tokens_seen, self.seconds_before = 0, None, 0, 0.0
        self.resume(device)
        # what the steps compute with: the model itself, or its bf16 copy (training/precision.py)
        self.weights = precisions.ComputeCopy(model, self.precision)
        self.examples = encode_texts(texts, tokenizer, untrained)
        val_texts, val_untrained = read_corpus(val_corpus)
        self.val_examples = encode_texts(val_texts[:200], tokenizer, val_untrained[:200])
        self.rng = random.Random(args.seed + self.step)
        self.gen = torch.Generator().manual_seed(args.seed + self.step)
        self.n_params = sum(p.numel() for p in model.parameters())
        self.started = time.time()
        self.log_file = open(self.run_dir / "log.jsonl", "a")

    def resume(self, device: torch.device) -> None:
        """Continue from the run's saved state, when there is one."""
        if not self.state_path.exists():
            return
        saved = torch.load(self.state_path, weights_only=False, map_location=device)
        self.model.load_state_dict(saved["model"])
        if self.readout is not None and "readout" in saved:
            self.readout.load_state_dict(saved["readout"])
        try:
            self.opt.load_state_dict(saved["opt"])
        except ValueError:   # saved before the decay / no-decay groups: the weights still resume
            print("the saved optimizer state has another layout; starting a fresh one", file=sys.stderr)
        self.step, self.best = saved["step"], saved["best"]
        self.tokens_seen, self.seconds_before = saved["tokens_seen"], saved["seconds"]
        print(f"resuming {self.out.name} at step {self.step}", file=sys.stderr)

    def seconds(self) -> float:
        """Training seconds in all, earlier sessions of a resumed run included."""
        return self.seconds_before + time.time() - self.started

    def progress(self) -> float:
        """Share of the run done: of max_steps, or of --minutes when that ends it sooner."""
        warmup, max_steps = self.hparams["warmup"], self.hparams["max_steps"]
        done = (self.step - warmup) / max(1, max_steps - warmup)
        if self.args.minutes:
            done = max(done, self.seconds() / (self.args.minutes * 60))
        return min(1.0, done)

    def finished(self) -> bool:
        return self.step >= self.hparams["max_steps"] or bool(self.args.minutes and self.progress() >= 1.0)

    def lr_at(self, step: int) -> float:
        """Linear warm-up, then a cosine down to 10 % over the run's progress."""
        lr, warmup = self.hparams["lr"], self.hparams["warmup"]
        if step < warmup:
            return lr * (step + 1) / warmup
        return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * self.progress())))

    def losses(self, batch: list[Example]) -> tuple[torch.Tensor, int, torch.Tensor | None, torch.Tensor | None]:
        """The twin's loss and target count, and the read-out losses when they are on."""
        args, readout, model = self.args, self.readout, self.weights.compute
        with (readout.capture(model) if readout is not None else contextlib.nullcontext(),
              precisions.autocast(self.precision, self.device)):
            if args.twin == "ar":
                loss, targets = loss_ar(model, batch, self.ids, args.focus_weight, args.decision_weight)
            else:
                sizes = model.config.block_sizes
                block = sizes[int(torch.randint(len(sizes), (1,), generator=self.gen))]
                loss, targets = loss_bd(model, batch, self.ids, block, self.gen, args.complementary,
                                        args.ar_weight, args.focus_weight, args.decision_weight,
                                        on_blocks=readout.see_blocks if readout is not None else None,
                                        shifted_share=args.shifted_blocks)
            colour = readout.loss(batch) if args.row_colour_weight else None
            match = readout.match_loss(batch) if args.row_match_weight else None
        return loss, targets, colour, match

    def train_step(self, batch: list[Example]) -> dict:
        """One AdamW step on a batch; returns what the log records of it."""
        for group in self.opt.param_groups:
            group["lr"] = self.lr_at(self.step) * group.get("lr_scale", 1.0)
        loss, targets, colour, match = self.losses(batch)
        total = loss
        if colour is not None:
            total = total + self.args.row_colour_weight * colour
        if match is not None:
            total = total + self.args.row_match_weight * match
        self.weights.step(total, self.opt)
        self.step += 1
        self.tokens_seen += sum(len(ex.ids) for ex in batch)
        return {"loss": round(total.item(), 4), "target_tokens": targets,
                **({"row_colour_loss": round(colour.item(), 4)} if colour is not None else {}),
                **({"row_match_loss": round(match.item(), 4)} if match is not None else {})}

    def evaluate(self) -> dict:
        """Validation loss and agent tasks; the model folder keeps the best (or the last)."""
        args = self.args
        val = validation_loss(self.model, self.val_examples, self.ids, args.twin, self.hparams["max_tokens"])
        record = {"step": self.step, "val_loss": round(val, 4)}
        if args.agent_tasks:
            try:   # an evaluation bug must not end hours of training
                record.update(agent_eval(self.model, self.tokenizer, args.twin, args.agent_tasks,
                                         args.agent_task_set))
            except Exception as exc:  # noqa: BLE001
                record["agent_eval_error"] = f"{type(exc).__name__}: {exc}"[:300]
        score = (record.get("agent_success", 0.0), -val)
        improved = self.best is None or score > tuple(self.best)
        if improved:
            self.best = list(score)
        saved = improved or args.select == "last"
        if saved:
            save_model_folder(self.model, self.tokenizer, self.out, {
                "twin": args.twin, "preset": args.preset, "step": self.step, "tokens_seen": self.tokens_seen,
                "train_seconds": round(self.seconds()), "params": self.n_params, **self.recipe, **record})
        record["saved"] = saved
        self.log(record)
        return record

    def save_state(self) -> None:
        atomic_torch_save({"model": self.model.state_dict(), "opt": self.opt.state_dict(), "step": self.step,
                           "best": self.best, "tokens_seen": self.tokens_seen, "seconds": self.seconds(),
                           **({"readout": self.readout.state_dict()} if self.readout is not None else {})},
                          self.state_path)

    def log(self, record: dict) -> None:
        self.log_file.write(json.dumps({"time": round(time.time()), **record}) + "\n")
        self.log_file.flush()

    def run(self) -> None:
        """Batches from length buckets until the step or time budget is spent; a log line every
        50 steps, an evaluation every eval_every, the state saved every save_min minutes."""
        hparams = self.hparams
        where = precisions.cpu_name() if self.device.type == "cpu" else torch.cuda.get_device_name(self.device)
        print(f"{self.args.twin} twin, {self.n_params / 1e6:.2f} M params, {len(self.examples)} transcripts; "
              f"{where}, {torch.get_num_threads()} thread(s); {self.precision.reason}", file=sys.stderr)
        self.log({"step": self.step, "start": True, "device": where, "threads": torch.get_num_threads(),
                  "precision": self.precision.name, "precision_reason": self.precision.reason})
        bar = tqdm(total=hparams["max_steps"], initial=self.step, desc=f"sprout-{self.args.twin}", file=sys.stderr,
                   mininterval=5)
        self.weights.train()
        last_save = window_start = time.time()
        window_tokens = 0
        while not self.finished():
            for batch in buckets(self.examples, hparams["max_tokens"], self.rng, by_replies=self.args.twin == "bd"):
                if self.finished():
                    break
                record = self.train_step(batch)
                window_tokens += sum(len(ex.ids) for ex in batch)
                bar.update(1)
                if self.step % 50 == 0:
                    rate = window_tokens / max(time.time() - window_start, 1e-9)
                    self.log({"step": self.step, "lr": self.lr_at(self.step), "tokens_per_s": round(rate),
                              "tokens_seen": self.tokens_seen, **record})
                    bar.set_postfix(loss=f"{record['loss']:.3f}", tok_s=f"{rate:.0f}")
                    window_tokens, window_start = 0, time.time()
                if self.step % hparams["eval_every"] == 0:
                    self.evaluate()
                if time.time() - last_save >= hparams["save_min"] * 60:
                    self.save_state()
                    last_save = time.time()
        self.evaluate()
        self.save_state()
        bar.close()
        self.log_file.close()


def main(argv: list[str] | None = None) -> int:
    cli = parser()
    args = cli.parse_args(argv)
    hparams = hyperparameters(args)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    corpus, val_corpus = prepare_corpora(args, hparams)
    tokenizer = build_tokenizer(args, corpus, hparams["vocab"])
    ids = {"eos": tokenizer.convert_tokens_to_ids(EOS), "pad": tokenizer.convert_tokens_to_ids(PAD),
           "mask": tokenizer.convert_tokens_to_ids(MASK)}
    try:
        model = build_model(args, ids, len(tokenizer))
    except ValueError as exc:
        cli.error(str(exc))
    TrainingRun(args, hparams, model.to(device), tokenizer, ids, corpus, val_corpus, device).run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
