"""How playground values become table rows and come back: configs, generations, tool calls.

JSON columns are compact text (sqlite-utils 4 hands JSON columns back as text anyway).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from engine.json_limits import read_stored
from engine.trace import ConfigError, GenerationConfig, Result

from .codec import decode_frames, encode_frames


def to_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def config_to_json(config: GenerationConfig | Mapping[str, Any] | None) -> str | None:
    if config is None:
        return None
    return to_json(config.to_dict() if isinstance(config, GenerationConfig) else dict(config))


def config_from_json(text: str | None) -> GenerationConfig | dict[str, Any] | None:
    # A config written by an older or newer version may not validate any more; the person
    # still gets to see what was used, as a plain dict.
    if text is None:
        return None
    values = read_stored(text)
    try:
        return GenerationConfig.from_dict(values)
    except (ConfigError, TypeError):
        return values


def generation_row(result: Result, config: GenerationConfig | Mapping[str, Any] | None,
                   model: str | None) -> dict[str, Any]:
    """The generations row of a Result, without turn_id (frames go to their own table)."""
    return {
        "model": model, "config": config_to_json(config), "stats": to_json(result.stats.to_dict()),
        "text": result.text, "token_ids": to_json(list(result.token_ids)), "mask_id": result.mask_id,
        "pieces": to_json({str(k): v for k, v in result.pieces.items()}),
        # ends also says whether the canvas was uniform noise (no mask id, yet not autoregressive):
        # rows written before it have no such key and read as masked or autoregressive, as they were.
        "ends": to_json({"eos_ids": list(result.eos_ids), "pad_id": result.pad_id,
                         **({"uniform_noise": True} if result.uniform_noise else {})}),
    }


def result_from_row(row: Mapping[str, Any], frames_data: str | None) -> Result:
    """Rebuild the Result through Result.from_dict, the one reader of stored generations."""
    frames = decode_frames(frames_data) if frames_data else []
    # Rows from before the ends column: Result.from_dict infers the EOS id from the frames.
    ends = read_stored(row["ends"]) if row.get("ends") else {}
    return Result.from_dict({
        "token_ids": read_stored(row["token_ids"]), "text": row["text"], "frames": [f.to_dict() for f in frames],
        "stats": read_stored(row["stats"]), "mask_id": row["mask_id"], "pieces": read_stored(row["pieces"]), **ends,
    })


def tool_call_row(index: int, call: Any) -> dict[str, Any]:
    """A tool call as a row, from a mapping, a dataclass, or any object with those attributes.

    `arguments` is stored as JSON of whatever was given (a dict, or the raw text of a call the
    parser could not read), so reading it back returns exactly that value.
    """
    if dataclasses.is_dataclass(call) and not isinstance(call, type):
        call = dataclasses.asdict(call)
    get = call.get if isinstance(call, Mapping) else (lambda key, default=None: getattr(call, key, default))
    name = get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"Tool call {index} has no name; each tool call needs the tool's name.")
    observation = get("observation")
    error_type = get("error_type")
    return {
        "step": int(get("step", index)),
        "name": name,
        "arguments": to_json(get("arguments", {})),
        "observation": observation if observation is None or isinstance(observation, str) else to_json(observation),
        "error_type": None if error_type is None else str(error_type),
    }


def encode_turn(role: Any, content: Any, generation: Result | None, config: Any, model: str | None,
                 tool_calls: Sequence[Any] | None) -> dict[str, Any]:
    """A turn's rows, encoded before the write lock is taken: a bad value fails here with
    nothing written, and the lock is held only for the inserts."""
    if not isinstance(role, str) or not role:
        raise ValueError("A turn needs a role such as 'user' or 'assistant'.")
    if not isinstance(content, str):
        raise ValueError(f"Turn content must be text, got {type(content).__name__}.")
    encoded = {"role": role, "content": content, "generation": None, "frames": "", "frame_count": 0,
               "calls": [tool_call_row(i, call) for i, call in enumerate(tool_calls or [])]}
    if generation is not None:
        encoded.update(generation=generation_row(generation, config, model), frames=encode_frames(generation.frames),
                       frame_count=len(generation.frames))
    return encoded
