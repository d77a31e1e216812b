"""Training speed of both Sprout twins: today's fast path against the path training used before,
from the same weights on the same batches, in one run.

    python -m bench train [--twins ar bd] [--steps 200] [--threads 1] [--json]

The paths:
- before: the G layers' conv as shifted multiply-adds (each tap's backward zero-fills a gradient
  of its whole input), the noisy blocks' attention as one dense masked product, the output head
  over every row, fp32;
- fast: the conv as one depthwise convolution (sprout/delta_layer.py conv_depthwise), the
  attention per block, the head only over rows that carry a target, and, where the CPU has bf16
  matrix units, a bf16 compute copy of fp32 master weights (training/precision.py; fp32 elsewhere);
- autocast, only where the CPU has them: the fast path with bf16 autocast of fp32 weights
  instead of the copy (the fast path of stages 10 and 11), so the copy's own gain is printed too.
All paths run the same batches, those training makes now (BD's sorted by reply length too,
which training/data.py measures on its own as rows per real token).
Each path starts from the shipped weights (models/sprout-<twin>) with a fresh AdamW and the
same seeded noise, and runs the same N batches; the paths take turns, batch by batch, so that a
busy machine slows each of them alike. tokens/s counts every token of a batch (the AR
twin's and the BD twin's clean stream alike) over the process's CPU time, which another busy
process on the machine disturbs far less than wall time (both are printed); the loss compared is
the mean of the last tenth of the steps, and a held batch's loss after the last step in fp32.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import statistics
import sys
import time
from pathlib import Path

import torch

from sprout.modeling import SproutModel
from sprout.tokenizer import EOS, MASK, PAD, load_tokenizer
from training import precision as precisions
from training.data import buckets, encode_texts
from training.losses import head_rows, loss_ar, loss_bd
from training.train import param_groups, read_corpus

PATHS = {   # name -> (conv in training, noisy attention, output head rows, precision)
    "before": ("shifted", "dense", "all", "fp32"),
    "autocast": ("depthwise", "blocks", "targets", "bf16-autocast"),
    "fast": ("depthwise", "blocks", "targets", "auto"),
}


def build_batches(corpus: Path, tokenizer, max_tokens: int, steps: int, seed: int, by_replies: bool):
    texts, untrained = read_corpus(corpus)
    examples = encode_texts(texts, tokenizer, untrained)
    batches = buckets(examples, max_tokens, random.Random(seed), by_replies)
    if len(batches) < steps + 1:
        raise SystemExit(f"error: {corpus} gives {len(batches)} batches of {max_tokens} tokens; "
                         f"--steps {steps} needs {steps + 1}. Use a larger corpus or fewer steps.")
    return batches[:steps], batches[steps]


class PathRun:
    """One path's model, optimizer and seeded noise, stepped one batch at a time, so that main can
    interleave the paths batch by batch: whatever else the machine runs then falls on every path
    alike, not on whichever path ran while it did."""

    def __init__(self, twin: str, path: str, model: SproutModel, ids, lr: float, seed: int):
        self.twin, self.path, self.ids, self.seed = twin, path, ids, seed
        self.conv, self.attention, self.rows, requested = PATHS[path]
        self.model = copy.deepcopy(model).train()
        for block in self.model.blocks:
            if hasattr(block.mixer, "train_conv"):
                block.mixer.train_conv = self.conv
            if hasattr(block.mixer, "train_attention"):
                block.mixer.train_attention = self.attention
        self.device = torch.device("cpu")
        self.chosen = precisions.choose(requested, self.device)
        self.opt = torch.optim.AdamW(param_groups(self.model, 0.1), lr=lr, betas=(0.9, 0.95))
        self.weights = precisions.ComputeCopy(self.model, self.chosen)
        self.gen = torch.Generator().manual_seed(seed)
        self.losses, self.tokens, self.cpu, self.wall = [], 0, 0.0, 0.0

    def loss_of(self, batch, module):
        if self.twin == "ar":
            return loss_ar(module, batch, self.ids)[0]
        sizes = self.model.config.block_sizes
        block = sizes[int(torch.randint(len(sizes), (1,), generator=self.gen))]
        return loss_bd(module, batch, self.ids, block, self.gen, complementary=True, ar_weight=0.5)[0]

    def step(self, batch) -> None:
        """One training step as training.train takes it, timed (CPU and wall)."""
        cpu0, wall0 = time.process_time(), time.perf_counter()
        with head_rows(self.rows):
            with precisions.autocast(self.chosen, self.device):
                loss = self.loss_of(batch, self.weights.compute)
            self.weights.step(loss, self.opt)
            self.losses.append(loss.item())
        self.cpu += time.process_time() - cpu0
        self.wall += time.perf_counter() - wall0
        self.tokens += sum(len(ex.ids) for ex in batch)

    def result(self, held) -> dict:
        """What the path did, with a held batch's loss after its last step (the fp32 master)."""
        self.model.eval()
        with torch.no_grad():
            self.gen.manual_seed(self.seed + 1)
            held_loss = self.loss_of(held, self.model).item()
        tail = self.losses[-max(1, len(self.losses) // 10):]
        return {"twin": self.twin, "path": self.path, "conv": self.conv, "attention": self.attention,
                "head_rows": self.rows, "precision": self.chosen.name, "steps": len(self.losses),
                "tokens": self.tokens, "cpu_s": round(self.cpu, 2), "wall_s": round(self.wall, 2),
                "tokens_per_cpu_s": round(self.tokens / self.cpu, 1),
                "tokens_per_wall_s": round(self.tokens / self.wall, 1),
                "loss_last_tenth": round(statistics.mean(tail), 4), "held_loss": round(held_loss, 4)}


def table(report: dict) -> str:
    lines = [f"CPU: {report['cpu']} ({report['precision_reason']}), {report['threads']} thread(s)", "",
             f"{'twin':4} {'path':8} {'prec':13} {'tokens/cpu-s':>12} {'tokens/wall-s':>13} "
             f"{'loss (last 10%)':>15} {'held loss':>9}"]
    for r in report["runs"]:
        lines.append(f"{r['twin']:4} {r['path']:8} {r['precision']:13} {r['tokens_per_cpu_s']:12.0f} "
                     f"{r['tokens_per_wall_s']:13.0f} {r['loss_last_tenth']:15.4f} {r['held_loss']:9.4f}")
    lines.append("")
    for twin, ratio in report["speedup"].items():
        over = f"; {ratio['cpu_over_autocast']:.2f}x the autocast path" if "cpu_over_autocast" in ratio else ""
        lines.append(f"{twin}: fast / before = {ratio['cpu']:.2f}x by CPU time ({ratio['wall']:.2f}x by wall time), "
                     f"loss change {ratio['loss_change_pct']:+.2f} %{over}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(prog="python -m bench train", description=__doc__.split("\n\n")[0])
    cli.add_argument("--twins", nargs="+", choices=("ar", "bd"), default=["ar", "bd"])
    cli.add_argument("--steps", type=int, default=200)
    cli.add_argument("--threads", type=int, default=1)
    cli.add_argument("--max-tokens", type=int, default=4096, help="tokens per batch (the CPU recipe's)")
    cli.add_argument("--lr", type=float, default=3e-4)
    cli.add_argument("--corpus", default="data/corpus-train-v9.jsonl",
                     help="transcripts (python -m training.corpus makes them)")
    cli.add_argument("--models", default="models", help="folder holding sprout-ar and sprout-bd")
    cli.add_argument("--seed", type=int, default=0)
    cli.add_argument("--json", action="store_true")
    args = cli.parse_args(argv)
    corpus = Path(args.corpus)
    if not corpus.exists():
        print(f"error: no corpus at {corpus}; make one with python -m training.corpus (see its --help).",
              file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    tokenizer = load_tokenizer(Path(args.models) / "sprout-bd")
    ids = {"eos": tokenizer.convert_tokens_to_ids(EOS), "pad": tokenizer.convert_tokens_to_ids(PAD),
           "mask": tokenizer.convert_tokens_to_ids(MASK)}
    chosen = precisions.choose("auto", torch.device("cpu"))
    report = {"cpu": precisions.cpu_name(), "precision_reason": chosen.reason, "threads": args.threads,
              "steps": args.steps, "max_tokens": args.max_tokens, "corpus": corpus.name, "runs": [], "speedup": {}}
    for twin in args.twins:
        model = SproutModel.from_pretrained(Path(args.models) / f"sprout-{twin}", dtype=torch.float32)
        # the batches training.train makes for this twin (BD sorts by replies too)
        batches, held = build_batches(corpus, tokenizer, args.max_tokens, args.steps, args.seed, twin == "bd")
        paths = [p for p in PATHS if p != "autocast" or chosen.bf16_copy]
        lanes = [PathRun(twin, p, model, ids, args.lr, args.seed) for p in paths]
        for batch in batches:           # the paths in turn on each batch
            for lane in lanes:
                lane.step(batch)
        runs = {lane.path: lane.result(held) for lane in lanes}
        report["runs"] += list(runs.values())
        before, fast = runs["before"], runs["fast"]
        report["speedup"][twin] = {
            "cpu": round(fast["tokens_per_cpu_s"] / before["tokens_per_cpu_s"], 3),
            "wall": round(fast["tokens_per_wall_s"] / before["tokens_per_wall_s"], 3),
            "loss_change_pct": round(100 * (fast["loss_last_tenth"] / before["loss_last_tenth"] - 1), 3),
            **({"cpu_over_autocast": round(fast["tokens_per_cpu_s"] / runs["autocast"]["tokens_per_cpu_s"], 3)}
               if "autocast" in runs else {})}
    print(json.dumps(report, indent=2) if args.json else table(report))
    return 0
