"""Backends for the bundled Sprout twins.

The diffusion twin keeps the clean context as a per-layer cache (attention K/V and the GDN
state); `denoise` reads it, `commit` replaces it with the context extended by the block.
The AR twin steps the same cache one token at a time (constant cost per step in G layers).
Both speak Sprout's chat format (sprout/chat.py; `chat_format = "world"`, the agent
world's corpus is written in it): the prompt is exactly `render_chat(...)`.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from engine.backends.base import BackendError, Capabilities, DeferredCommit, PromptTail
from engine.backends.placement import pick_device, pick_dtype
from sprout.chat import EOS, MASK, PAD, ROLE_MARKERS, render_chat
from sprout.prompt_cache import PromptCache


class _SproutText(Capabilities):
    """Tokenizer-facing half shared by both twins."""

    chat_format = "world"
    # Weights trained on one request per conversation declare it (playground.json "context":
    # "latest_request", read by `load`): the app then gives them the latest request only
    # (world.agent.model_context). Others read the whole conversation.
    one_request_per_chat = False

    def _init_text(self, model, tokenizer, name: str, device: torch.device) -> None:
        self.model, self.tokenizer, self.name, self.device = model, tokenizer, name, device
        ids = tokenizer.convert_tokens_to_ids
        self.mask_id, self.pad_id = ids(MASK), ids(PAD)
        self.eos_ids = frozenset({ids(EOS)})
        self._hidden = {self.mask_id, self.pad_id, *self.eos_ids}
        self._special = frozenset(tokenizer.all_special_ids)   # the tokenizer rebuilds this list on every read
        self.max_length = int(model.config.max_position_embeddings)
        self._cache = None            # the model's cache after what has run (settled_cache() to read it)
        # recent prompts' clean contexts (sprout/prompt_cache.py); clear it if the weights change
        self.prompt_cache = PromptCache()
        self._user_marker = ids(ROLE_MARKERS["user"])

    def encode_chat(self, messages: list[dict[str, str]]) -> list[int]:
        return list(self.tokenizer.encode(render_chat(messages, add_generation_prompt=True)))

    def decode(self, ids: list[int]) -> str:
        # tool tags are special tokens that the parser needs: drop only mask / eos / pad
        return self.tokenizer.decode([i for i in ids if i not in self._hidden], skip_special_tokens=False)

    def token_piece(self, token_id: int) -> str:
        if token_id in self._special:
            return self.tokenizer.convert_ids_to_tokens(token_id)
        return self.tokenizer.decode([token_id])

    def _ids(self, ids: torch.Tensor | list[int]) -> torch.Tensor:
        t = torch.as_tensor(ids, dtype=torch.long, device=self.device)
        return t.view(1, -1) if t.dim() == 1 else t

    def _prefill(self, prompt_ids):
        """The clean context after the prompt, from the prompt cache. Its anchor is where the
        system text ends (the first user marker), shared by every conversation in the world."""
        ids = self._ids(prompt_ids)
        self._cache = self.prompt_cache.prefill(self.model, ids, self._anchors(ids))
        return self._cache.next_logits

    def settled_cache(self):
        """The model's cache with everything decided so far run in; the diffusion twin may first
        run the tokens it holds back for a fused pass (one forward), so this is a method, not an
        attribute that computes when read."""
        return self._cache

    def _anchors(self, ids: torch.Tensor) -> tuple[int, ...]:
        users = (ids[0] == self._user_marker).nonzero()
        return (int(users[0, 0]),) if len(users) else ()


class SproutBackend(_SproutText):
    """The clean tokens that `prefill` and `commit` append (the prompt's last piece, a finished
    block) wait for the next `denoise`, and both run as one pass
    (`SproutModel.commit_then_denoise`), which costs about 0.7 of the two on a CPU; blocks
    committed one after another (a scaffold's fixed text can fill a whole block) wait as one
    chunk. This is the deferral the protocol allows (engine/backends/base.py `DeferredCommit`,
    held in `self.deferred`); the loops need not know: a reader of the cache (`settled_cache()`)
    first runs the deferred tokens alone. `fuse_commit = False` runs every pass on its own (the reference;
    tests/sprout/test_fused_commit.py holds the two to the same replies)."""

    kind = "diffusion"
    logit_shift = False
    can_fuse_commit = True

    def __init__(self, model, tokenizer, name: str = "sprout-bd", device: torch.device | None = None,
                 fuse_commit: bool = True):
        self.deferred: DeferredCommit | None = None     # committed, not yet run into the cache
        self.fuse_commit = fuse_commit
        self._init_text(model.eval(), tokenizer, name, device or next(model.parameters()).device)

    def settled_cache(self):
        self._run_deferred()
        return self._cache

    @torch.inference_mode()
    def prefill(self, prompt_ids) -> None:
        self.deferred = None
        if not self.fuse_commit:
            self._prefill(prompt_ids)
            return
        ids = self._ids(prompt_ids)
        cache, pieces = self.prompt_cache.plan(ids, self._anchors(ids))
        for piece in pieces[:-1]:
            cache = self.prompt_cache.run(self.model, ids, piece, cache)
        self._cache = cache
        if pieces:
            self.deferred = DeferredCommit(ids[:, pieces[-1]], PromptTail(ids, pieces[-1], ids[:, :0]))

    @torch.inference_mode()
    def denoise(self, canvas: torch.Tensor, block: slice) -> torch.Tensor:
        block_ids = self._ids(canvas)[:, block]
        if self.deferred is None:
            return self.model.denoise(block_ids, self._cache)                      # (1, C, V)
        deferred, self.deferred = self.deferred, None
        self._cache, logits = self.model.commit_then_denoise(deferred.tokens, block_ids, self._cache)
        self._keep_prompt(deferred.prompt)
        return logits                                                              # (1, C, V)

    @torch.inference_mode()
    def commit(self, canvas: torch.Tensor, block: slice) -> None:
        tokens = self._ids(canvas)[:, block].clone()                               # the canvas changes later
        if not self.fuse_commit:
            self._cache, _ = self.model.commit(tokens, self._cache)
        elif self.deferred is None:
            self.deferred = DeferredCommit(tokens)
        else:
            # a block right after deferred tokens joins them: the cache between is never read
            # (the prompt cache keeps the context after the prompt and the block instead)
            self.deferred = self.deferred.then_commit(tokens)

    @torch.inference_mode()
    def _run_deferred(self) -> None:
        if self.deferred is None:
            return
        deferred, self.deferred = self.deferred, None
        self._cache = (self.model.prefill(deferred.tokens)[0] if self._cache is None
                       else self.model.commit(deferred.tokens, self._cache)[0])
        self._keep_prompt(deferred.prompt)

    def _keep_prompt(self, prompt: PromptTail | None) -> None:
        if prompt is not None:
            self.prompt_cache.keep(prompt.ids, prompt.piece, self._cache, prompt.then if prompt.then.shape[1] else None)

    @property
    def slides_blocks(self) -> bool:
        """Whether a block may start at any position (the scaffolded decoder then starts each one
        at its cursor): only for weights trained with blocks at every phase (`sliding_blocks`)."""
        return bool(self.model.config.sliding_blocks)


class SproutARBackend(_SproutText):
    kind = "autoregressive"
    can_extend = True

    def __init__(self, model, tokenizer, name: str = "sprout-ar", device: torch.device | None = None):
        self._init_text(model.eval(), tokenizer, name, device or next(model.parameters()).device)

    @torch.inference_mode()
    def prefill(self, prompt_ids) -> torch.Tensor:
        return self._prefill(prompt_ids)                                           # (1, V)

    @torch.inference_mode()
    def step(self, token_id: int) -> torch.Tensor:
        self._cache, logits = self.model.commit(self._ids([token_id]), self._cache)
        return logits[:, -1]                                                       # (1, V)

    @torch.inference_mode()
    def extend(self, ids: list[int]) -> torch.Tensor:
        """Append several known tokens in one forward (jump-forward) -> logits (1, V) for the next."""
        self._cache, logits = self.model.commit(self._ids(list(ids)), self._cache)  # (1, n, V)
        return logits[:, -1]                                                       # (1, V)


def load(path: str | Path, device: str = "auto"):
    """A Sprout folder -> the backend of its twin (config `causal` picks AR or diffusion)."""
    from sprout.modeling import SproutModel
    from sprout.tokenizer import load_tokenizer

    folder = Path(path)
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError) as exc:
        raise BackendError(f"Sprout folder {folder} has no readable config.json ({exc}).") from exc
    dev = pick_device(device)
    try:
        # weights are stored in bf16 to stay small; computed in the device's dtype (pick_dtype)
        model = SproutModel.from_pretrained(str(folder), dtype=pick_dtype(dev)).to(dev)
        tokenizer = load_tokenizer(folder)
    except Exception as exc:  # noqa: BLE001 - any loading failure becomes one sentence
        reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise BackendError(f"Sprout model {folder} could not be loaded: {reason}.") from exc
    name = folder.name
    cls = SproutARBackend if config.get("causal") else SproutBackend
    backend = cls(model, tokenizer, name=name, device=dev)
    backend.one_request_per_chat = declared_context(folder) == "latest_request"
    return backend


CONTEXTS = ("conversation", "latest_request")


def declared_context(folder: str | Path) -> str:
    """What a Sprout folder's weights were trained to read: its playground.json "context", either
    "conversation" (the default: every turn so far) or "latest_request" (one request per chat)."""
    path = Path(folder) / "playground.json"
    try:
        settings = json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, ValueError) as exc:
        raise BackendError(f"{path} is unreadable ({exc}).") from exc
    context = settings.get("context", "conversation") if isinstance(settings, dict) else "conversation"
    if context not in CONTEXTS:
        raise BackendError(f"{path}: \"context\" must be one of {', '.join(CONTEXTS)}, not {context!r}.")
    return context
