"""What a scaffolded generation writes, and the check of what it wrote.

A tool call is `<tool_call>{"name":..,"arguments":{..}}</tool_call>` with the name one of the
registry's and the arguments its tool's inputSchema (the tools come in as engine.tool_calls.ToolCalls): the
up to the name is forced, the name is the model's first choice (among the registry's names
only), and once its tokens single one tool out, the rest of the skeleton follows from that
tool's schema. A structured answer is one JSON value of the given schema, nothing around it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jsonschema

from engine.errors import ConfigError
from engine.scaffold.schema import Alt, Lit, Seq, compile_schema, dumps
from engine.tool_calls import ToolCalls
from engine.trace import GenerationConfig

STUCK = ("No token of this model's vocabulary can continue the answer: it needs more room than the generation "
         "length leaves, or a pattern cannot end within its length budget. Raise the generation length or "
         "loosen the schema.")


@dataclass(frozen=True)
class Target:
    shape: Any                                  # engine.scaffold.schema shapes, the whole answer
    schema: dict[str, Any] | None               # None: a registry tool call
    tools: ToolCalls | None = None              # the registry, for a tool call

    def problem(self, text: str, complete: bool) -> str:
        """Why `text` (the answer without EOS) does not follow the target, in a sentence; "" if it does."""
        if not complete:
            return ("The answer ran out of room before its JSON was complete: raise the generation length "
                    "or lower the schema's maxLength / maxItems.")
        if self.schema is None:
            problem = self.tools.problem(text) if self.tools is not None else ""
            return f"The tool call does not follow its tool's schema: {problem}" if problem else ""
        try:
            value = json.loads(text)
        except ValueError as error:
            return f"The answer is not valid JSON ({error})."
        found = next(iter(jsonschema.Draft202012Validator(self.schema).iter_errors(value)), None)
        return "" if found is None else f"The answer does not follow the schema: {found.message[:160]}."


@lru_cache(maxsize=8)
def tool_call_shape(tools: ToolCalls) -> Seq:
    """Every call of the registry: the name first, then that tool's arguments."""
    calls = tuple(Seq((Lit(f'{{"name":{dumps(t["name"])},"arguments":'), compile_schema(t["inputSchema"]), Lit("}")))
                  for t in tools.tools)
    return Seq((Lit(tools.open), Alt(calls), Lit(tools.close)))


NO_TOOLS = ("Scaffolded decoding writes either a tool call or an answer of a JSON schema, and this generation "
            "was given neither the tools it may call nor a schema: pass the tools (the agent world's registry) "
            "or set response_format / schema.")


def target_for(config: GenerationConfig, tools: ToolCalls | None) -> Target:
    if config.schema is not None:
        return Target(compile_schema(config.schema), config.schema)
    if tools is None:
        raise ConfigError(NO_TOOLS)
    return Target(tool_call_shape(tools), None, tools)
