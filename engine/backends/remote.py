"""A model served elsewhere behind an OpenAI-compatible API -- vLLM, SGLang, or this
playground's own /v1 -- used as a backend like any other: `openai:http://HOST:PORT/v1#MODEL`.

The server tokenizes, so the "prompt ids" this backend hands to `engine.generate` are the UTF-8
bytes of the JSON message list (read back in `stream`). What comes back is a stream, turned into
Frames: from this playground's /v1, which streams `diffusing` canvases with their token pieces,
one Frame per denoising round, exactly the server's grid; from any other server, one Frame per
content chunk (a piece of text, usually one token). Token ids are local: each distinct piece
gets one, so the grid and the session store read them like any model's. Time to first token and
tokens/s are measured here, from the stream; `nfe` and token counts come from the server's usage
when it sends them. Tool calls: the world's tools go out as `tools`, and a `tool_calls` answer
comes back as the Hermes text the agent loop parses. The API key is read from an environment
variable at each call ($DP_REMOTE_API_KEY unless the catalog entry names another) and never
stored.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
import time
from collections.abc import Generator
from typing import Any

import torch

from engine.backends.base import BackendError, Capabilities
from engine.result import summarize
from engine.tool_calls import ToolCalls
from engine.trace import ConfigError, Frame, GenerationConfig, NoiseStep, Result

PREFIX = "openai:"
API_KEY_ENV = "DP_REMOTE_API_KEY"
MASK, EOS, PAD = 0, 1, 2
log = logging.getLogger("diffusion_playground.remote")
CONNECT_TIMEOUT_S, READ_TIMEOUT_S = 10.0, 600.0


def parse_spec(spec: str) -> tuple[str, str]:
    """`openai:http://HOST:PORT/v1#MODEL` -> (base URL, model id), or a BackendError sentence."""
    body = spec[len(PREFIX):] if spec.startswith(PREFIX) else spec
    url, _, model = body.partition("#")
    if not url.startswith(("http://", "https://")) or not model.strip():
        raise BackendError(f"'{spec}' should look like openai:http://HOST:PORT/v1#MODEL (the server's base URL, "
                           "then # and the model id it serves).")
    return url.rstrip("/"), model.strip()


class PieceVocab:
    """Local ids for text pieces: 0 mask, 1 end of answer, 2 pad, then one id per distinct piece."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._pieces: list[str] = ["░", "", ""]
        self._lock = threading.Lock()

    def id(self, piece: str) -> int:
        with self._lock:
            if piece not in self._ids:
                self._ids[piece] = len(self._pieces)
                self._pieces.append(piece)
            return self._ids[piece]

    def piece(self, token_id: int) -> str:
        return self._pieces[token_id] if 0 <= token_id < len(self._pieces) else ""


class MessageBytes:
    """The 'tokenizer' of a remote model: messages <-> the UTF-8 bytes of their JSON."""

    @staticmethod
    def encode(text: str) -> list[int]:
        return list(text.encode("utf-8"))

    @staticmethod
    def messages(ids: list[int]) -> list[dict[str, str]]:
        return json.loads(bytes(ids).decode("utf-8"))


class RemoteBackend(Capabilities):
    remote = True                 # engine.generate hands the whole generation to `stream`
    chat_format = "openai"
    sends_tools = True            # the agent loop needs no tool list in a system prompt
    logit_shift = False
    mask_id = MASK

    def __init__(self, url: str, model: str, kind: str, name: str | None = None,
                 api_key_env: str | None = API_KEY_ENV, diffusing: bool = False) -> None:
        self.url, self.model, self.kind = url, model, kind
        self.name = name or f"{PREFIX}{url}#{model}"
        self.api_key_env, self.diffusing = api_key_env, diffusing
        self.tokenizer = MessageBytes()
        self.device = torch.device("cpu")
        self.eos_ids, self.pad_id = frozenset({EOS}), PAD
        self.max_length = 1 << 30          # the server checks its own context
        self.vocab = PieceVocab()
        self.tools_refused = False

    # -- Backend protocol -------------------------------------------------------------------------
    def encode_chat(self, messages: list[dict[str, str]]) -> list[int]:
        return MessageBytes.encode(json.dumps([{"role": m["role"], "content": m["content"]} for m in messages]))

    def decode(self, ids: list[int]) -> str:
        return "".join(self.vocab.piece(i) for i in ids if i not in (MASK, EOS, PAD))

    def token_piece(self, token_id: int) -> str:
        return self.vocab.piece(token_id)

    # -- the call ---------------------------------------------------------------------------------
    def client(self) -> Any:
        import openai

        # openai.Timeout is the timeout type of whichever HTTP library this openai release is built on
        # (httpx before 3.6x, httpx2 after): an httpx.Timeout handed to an httpx2 client is refused.
        # no variable: a URL a request named, which gets no key (engine/model_access.py)
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return openai.OpenAI(base_url=self.url, api_key=key or "none", max_retries=0,
                             timeout=openai.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S))

    def request(self, messages: list[dict[str, str]], config: GenerationConfig,
                tools: ToolCalls | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model, "messages": messages, "stream": True, "stream_options": {"include_usage": True},
            "max_tokens": config.gen_length, "temperature": config.temperature, "top_p": config.top_p,
            "seed": config.seed}
        if tools is not None:
            body["tools"] = tools.openai_tools()
        if self.diffusing:   # this playground's /v1: the whole config, and a canvas per round
            extra = {k: v for k, v in config.to_dict().items() if k not in ("gen_length", "temperature", "top_p",
                                                                            "seed")}
            body["extra_body"] = {**extra, "diffusing": True}
        return body

    def stream(self, prompt_ids: list[int], config: GenerationConfig,
               tools: ToolCalls | None = None) -> Generator[Frame, None, Result]:
        import openai

        messages = MessageBytes.messages(prompt_ids)
        started = time.perf_counter()
        frames: list[Frame] = []
        canvas: list[int] = []
        text, usage, finish, calls = "", None, None, {}
        body = self.request(messages, config, tools)
        try:
            chunks = self._create(body)
        except openai.APIError as error:
            raise _sentence(error, self) from None
        try:
            for chunk in chunks:
                if chunk.usage is not None:
                    usage = chunk.usage
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                delta = choice.delta
                finish = choice.finish_reason or finish
                for call in delta.tool_calls or []:
                    slot = calls.setdefault(call.index, {"name": "", "arguments": ""})
                    if call.function is not None:
                        slot["name"] += call.function.name or ""
                        slot["arguments"] += call.function.arguments or ""
                rounds = (choice.model_extra or {}).get("diffusion")
                if rounds and delta.content is not None:
                    text = delta.content
                    canvas, frame = self._round(rounds, canvas, started)
                elif delta.content and not self.diffusing:
                    text += delta.content
                    canvas = [*canvas, self.vocab.id(delta.content)]
                    frame = Frame(nfe=len(frames) + 1, block=len(canvas) - 1, round=0,
                                  committed=[(len(canvas) - 1, canvas[-1], 1.0)], canvas=list(canvas),
                                  elapsed_s=time.perf_counter() - started)
                else:
                    continue
                frames.append(frame)
                yield frame
        except openai.APIError as error:
            raise _sentence(error, self) from None
        finally:
            chunks.close()
        hermes = [tools.render(c["name"], _arguments(c["arguments"])) for _, c in sorted(calls.items())] \
            if tools is not None else []
        if hermes and tools.open not in text:           # a server that parsed the calls out of the text
            text += "".join(hermes)
            canvas = [*canvas, self.vocab.id("".join(hermes))]
            frames.append(Frame(nfe=len(frames) + 1, block=len(canvas) - 1, round=0,
                                committed=[(len(canvas) - 1, canvas[-1], 1.0)], canvas=list(canvas),
                                elapsed_s=time.perf_counter() - started))
        stop = "length" if finish == "length" else "eos"
        result = summarize(self, frames, time.perf_counter() - started, stop)
        result.text = text
        if usage is not None:
            result.stats = _with_usage(result.stats, usage, self.kind)
        return result

    def _create(self, body: dict[str, Any]) -> Any:
        """The streamed call. A server started without tool calling (vLLM without
        --enable-auto-tool-choice) refuses `tools` with a 400: ask again without them, and from
        then on, so the model still answers (its calls then arrive as text, if it writes them)."""
        import openai

        client = self.client()
        if not self.tools_refused:
            try:
                return client.chat.completions.create(**body)
            except openai.BadRequestError as error:
                if "tool" not in str(error).lower():
                    raise
                self.tools_refused = True
        return client.chat.completions.create(**{k: v for k, v in body.items() if k != "tools"})

    def _round(self, rounds: dict[str, Any], before: list[int], started: float) -> tuple[list[int], Frame]:
        """One denoising round from the server's `diffusion` field -> (canvas, Frame)."""
        pieces = rounds.get("canvas") or []
        canvas = [MASK if p is None else self.vocab.id(p) for p in pieces]
        eos_at = rounds.get("eos_at")
        if isinstance(eos_at, int):
            canvas[eos_at:] = [EOS] * (len(canvas) - eos_at)
        committed = [(i, t, 1.0) for i, t in enumerate(canvas)
                     if t != MASK and (i >= len(before) or before[i] == MASK)]
        noise = self._noise_step(rounds.get("noise"))
        if noise is not None:       # a uniform-noise canvas: nothing is decided before the canvas ends
            committed = [(noise.start + i, t, 1.0) for i, t in enumerate(noise.draft)] if noise.stop_rule else []
        frame = Frame(nfe=int(rounds.get("nfe", 0)), block=int(rounds.get("block", 0)),
                      round=int(rounds.get("round", 0)), committed=committed, canvas=list(canvas),
                      elapsed_s=time.perf_counter() - started, noise=noise)
        return canvas, frame

    def _noise_step(self, step: Any) -> NoiseStep | None:
        """A uniform-noise step from this playground's /v1 (`diffusion.noise`, app/api/canvas.py),
        pieces turned into local ids; None when the round has none. A model that streams them is
        a uniform-noise model (its Result says so)."""
        if not isinstance(step, dict):
            return None
        try:
            made = NoiseStep(start=int(step["start"]), draft=[self.vocab.id(str(p)) for p in step["draft"]],
                             noisy=[self.vocab.id(str(p)) for p in step["noisy"]],
                             accepted=[int(p) for p in step["accepted"]], changed=[int(p) for p in step["changed"]],
                             temperature=float(step["temperature"]), mean_entropy=float(step["mean_entropy"]),
                             stop_rule=str(step.get("stop_rule") or ""))
        except (KeyError, TypeError, ValueError):
            return None
        self.uniform_noise = True
        return made


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {"_unreadable": text}
    return value if isinstance(value, dict) else {"_value": value}


def _with_usage(stats: Any, usage: Any, kind: str) -> Any:
    """The server's counts where it sends them: completion tokens, and nfe from this playground."""
    tokens = int(getattr(usage, "completion_tokens", 0) or stats.new_tokens)
    extra = getattr(usage, "model_extra", None) or {}
    nfe = int(extra.get("nfe") or (tokens if kind == "autoregressive" else stats.nfe) or 0)
    seconds = stats.seconds
    return dataclasses.replace(stats, new_tokens=tokens, nfe=nfe, tokens_per_forward=tokens / nfe if nfe else 0.0,
                               tokens_per_s=tokens / seconds if seconds > 0 else 0.0)


def _sentence(error: Exception, backend: RemoteBackend) -> Exception:
    import openai

    where = f"{backend.url} ({backend.model})"
    if not backend.api_key_env:               # a URL a request named: one sentence for every failure
        return unusable(backend.url, backend.model, error)
    if isinstance(error, openai.APIConnectionError):
        return BackendError(f"Cannot reach the model server at {where}: is it running? ({type(error).__name__})")
    status = getattr(error, "status_code", None)
    body = getattr(error, "body", None)
    message = body.get("message") if isinstance(body, dict) else None
    message = str(message or error)[:300]
    if status == 400:
        return ConfigError(f"The model server at {where} refused the settings: {message}")
    if status == 401:
        return BackendError(f"The model server at {where} wants an API key: set ${backend.api_key_env}.")
    return BackendError(f"The model server at {where} answered {status}: {message}")


def unusable(url: str, model: str, detail: Any) -> BackendError:
    """One sentence for every way a server can fail to be a model server (nothing listens, it
    answers with an error, it serves other models): which one goes to the log only, so an error
    never tells an open port from a closed one."""
    log.warning("model server %s (%s) unusable: %s", url, model, str(detail)[:300])
    return BackendError(f"The model server at {url} could not be used for '{model}': nothing answered there as "
                        "an OpenAI-compatible server serving that model (the details are in this server's log).")


def load(spec: str, name: str | None = None, api_key_env: str | None = API_KEY_ENV,
         kind: str | None = None) -> RemoteBackend:
    """Ask the server which models it serves (GET /models); a diffusion model on this
    playground's /v1 (its listing says `kind`) streams its canvases round by round. `api_key_env`
    None: send no key (a URL a request named, engine/model_access.py)."""
    import openai

    url, model = parse_spec(spec)
    probe = RemoteBackend(url, model, "autoregressive", name=name or spec, api_key_env=api_key_env)
    configured = api_key_env is not None      # a server the operator set up gets the details; a request's URL not
    try:
        rows = probe.client().models.list().data
    except openai.APIError as error:
        raise (_sentence(error, probe) if configured else unusable(url, model, error)) from None
    except Exception as error:  # noqa: BLE001 - a reply that is not an OpenAI listing at all
        raise unusable(url, model, f"{type(error).__name__}: {error}") from None
    row = next((r for r in rows if getattr(r, "id", None) == model), None)
    if row is None:
        served = ", ".join(str(getattr(r, "id", "?")) for r in rows[:12]) or "none"
        if not configured:
            raise unusable(url, model, f"serves {served}")
        raise BackendError(f"The server at {url} does not serve '{model}'; it serves: {served}.")
    listed = (row.model_extra or {}).get("kind")
    kind = kind or listed or "autoregressive"
    if kind not in ("diffusion", "autoregressive"):
        raise BackendError(f"'{spec}': kind must be diffusion or autoregressive, got {kind!r}.")
    probe.kind, probe.diffusing = kind, listed is not None
    return probe
