"""Checkpoint choice by the agent benchmark: a model in training runs held-out tasks greedily and
is scored as the benchmark scores it."""

from __future__ import annotations

import copy


def agent_eval(model, tokenizer, twin: str, n_tasks: int, task_set: str = "templates") -> dict:
    """Greedy agent episodes on held-out validation tasks of a task set (world.task_sets.TASK_SETS;
    never the benchmark's tasks)."""
    from engine.backends.sprout import SproutARBackend, SproutBackend
    from engine.catalog import bundled_decoding
    from engine.trace import GenerationConfig
    from world.agent import run_episode
    from world.task_sets import TASK_SETS
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
        transcript = run_episode(backend, task, cfg)
        wins += bool(transcript.success)
        nfe += transcript.nfe
    model.train()
    return {"agent_success": wins / max(len(tasks), 1), "agent_tasks": len(tasks), "agent_nfe": nfe}
