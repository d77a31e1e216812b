"""A message over the model's context, cut to the end that fits: what Chat's "Keep the end that
fits" button does after such a message was refused (the refusal said how long it is and what fits).

The model reads the system prompt, the conversation and the message through its own chat format
(world.agent.prompt_ids_for), and needs `gen_length` tokens left for the answer. So the message
keeps its last k tokens, the largest k whose whole prompt fits. The count is measured on the whole
prompt, never estimated: decoding a cut and encoding it again can merge or split tokens at the cut,
and the chat format wraps the message in tokens of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def kept_end(message: str, prompt_length: Callable[[str], int], limit: int, encode: Callable[[str], list[int]],
             decode: Callable[[list[int]], str]) -> str:
    """The longest end of `message` (cut at a token) whose whole prompt is at most `limit` tokens;
    "" when even an empty message leaves no room. `prompt_length(text)`: the prompt's tokens with
    `text` as the message. A bisection over how many tokens are kept: the prompt grows with the
    end kept, so about log2(tokens) prompts are measured (13 for a 5,000-token message)."""
    if prompt_length(message) <= limit:
        return message
    ids = encode(message)
    fits, too_long = 0, len(ids)          # keeping `fits` tokens fits; keeping `too_long` does not
    while too_long - fits > 1:
        middle = (fits + too_long) // 2
        if prompt_length(decode(ids[len(ids) - middle:])) <= limit:
            fits = middle
        else:
            too_long = middle
    return decode(ids[len(ids) - fits:]) if fits else ""


def plain_ids(tokenizer: Any, text: str) -> list[int]:
    """The text's ids without the tokenizer's own BOS or EOS (a cut keeps words, not markers)."""
    try:
        return list(tokenizer.encode(text, add_special_tokens=False))
    except TypeError:                                   # a tokenizer without the option adds none
        return list(tokenizer.encode(text))


def keep_end_of(ctx: Any, model: str, message: str, context_before: list[dict[str, str]], gen_length: int) -> str:
    """`message` cut to the end that fits `model`'s context after `context_before` (the system
    prompt and the conversation, as the turn would send them) with `gen_length` tokens to answer."""
    from world.agent import model_context, prompt_ids_for

    from .messages import user_error

    with ctx.registry.using(model) as backend:
        tokenizer = getattr(backend, "tokenizer", None)
        max_length = getattr(backend, "max_length", None)
        if tokenizer is None or not max_length:
            raise user_error(f"{model} does not say how it counts tokens, so the message cannot be cut to fit; "
                             "shorten it by hand.")

        def prompt_length(text: str) -> int:
            return len(prompt_ids_for(backend, model_context(backend, [*context_before,
                                                                        {"role": "user", "content": text}])))

        limit = int(max_length) - int(gen_length)
        if prompt_length(message) <= limit:
            raise user_error("The message fits the context as it is: send it.")
        kept = kept_end(message, prompt_length, limit, lambda text: plain_ids(tokenizer, text),
                        lambda ids: tokenizer.decode(ids))
    if not kept.strip():
        raise user_error(f"Nothing of the message fits: the conversation and the {gen_length} tokens of the answer "
                         "fill the context already. Start a new chat or lower the generation length.")
    return kept
