"""Sprout's chat format: its special tokens and the template it was trained on.

    <|system|>{text}\\n                                   (optional)
    <|user|>{text}\\n
    <|assistant|>{text}<|eos|>\\n
    <|tool|><tool_response>{json}</tool_response>\\n

It belongs to the model as a transformers model's `chat_template` belongs to its tokenizer:
the tokenizer makes each marker one token (sprout/tokenizer.py), the backend encodes a
chat with `render_chat`, and the agent world writes its corpus in it (world/format.py).
Plain Python with no imports, so the world can use it without torch.
"""

from __future__ import annotations

MASK, EOS, PAD = "<|mask|>", "<|eos|>", "<|pad|>"
ROLE_MARKERS = {"system": "<|system|>", "user": "<|user|>", "assistant": "<|assistant|>", "tool": "<|tool|>"}
CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
RESPONSE_OPEN, RESPONSE_CLOSE = "<tool_response>", "</tool_response>"
# Order fixes the ids 0..10 in a trained tokenizer (mask 0, eos 1, pad 2), so it never changes.
SPECIAL_TOKENS = [MASK, EOS, PAD, *ROLE_MARKERS.values(), CALL_OPEN, CALL_CLOSE, RESPONSE_OPEN, RESPONSE_CLOSE]


def render_chat(messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
    """The chat as Sprout reads it; ends with `<|assistant|>` when a reply is wanted. A tool
    message's content is the bare JSON of the response; the template adds its tags."""
    parts = []
    for message in messages:
        role, content = message["role"], message["content"]
        if role == "assistant":
            parts.append(f"{ROLE_MARKERS[role]}{content}{EOS}\n")
        elif role == "tool":
            parts.append(f"{ROLE_MARKERS[role]}{RESPONSE_OPEN}{content}{RESPONSE_CLOSE}\n")
        elif role in ("system", "user"):
            parts.append(f"{ROLE_MARKERS[role]}{content}\n")
        else:
            raise ValueError(f"Unknown chat role {role!r}; use system, user, assistant or tool.")
    if add_generation_prompt:
        parts.append(ROLE_MARKERS["assistant"])
    return "".join(parts)
