"""/v1 `response_format` json_schema through the official openai client: the reply's content
is JSON that validates against the schema (a diffusion model scaffolded, an AR model with
jump-forward), whatever the model would have written; json_object gives an object; a schema
the scaffold cannot follow, or a malformed response_format, is an OpenAI-style 400 with a
sentence."""

from __future__ import annotations

import json

import jsonschema
import openai
import pytest

from app.structured import EXAMPLE_SCHEMA

# the Chat tab's example order, with "size" left optional: the model decides whether to write it
SCHEMA = {**EXAMPLE_SCHEMA, "required": ["product", "colour", "quantity", "gift"]}


def response_format(schema) -> dict:
    return {"type": "json_schema", "json_schema": {"name": "order", "schema": schema}}


@pytest.mark.parametrize("model", ["json-bd", "json-ar", "fake-bd"])
def test_the_content_validates_against_the_schema(client, model):
    # fake-bd's own answer is prose: the scaffold still makes it a valid order
    reply = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Two blue jackets."}],
                                           response_format=response_format(SCHEMA), max_tokens=96, temperature=0)
    content = reply.choices[0].message.content
    jsonschema.validate(json.loads(content), SCHEMA)
    assert reply.choices[0].finish_reason == "stop"


def test_a_model_that_knows_the_answer_keeps_its_values(client):
    reply = client.chat.completions.create(model="json-bd", messages=[{"role": "user", "content": "Two blue jackets."}],
                                           response_format=response_format(SCHEMA), max_tokens=96, temperature=0)
    assert json.loads(reply.choices[0].message.content) == {"product": "rain jacket", "colour": "blue",
                                                            "quantity": 2, "gift": False}


@pytest.mark.parametrize("fmt, words", [
    (response_format({"type": "string", "pattern": "(unclosed"}), "pattern"),
    (response_format({"type": "object", "properties": {"a": {"$ref": "#/x"}}}), "$ref"),
    (response_format({"type": "object", "required": ["missing"]}), "missing"),
    ({"type": "json_schema", "json_schema": {"name": "x"}}, "schema"),
    ({"type": "xml"}, "response_format"),
], ids=["bad-pattern", "ref", "required-not-a-property", "no-schema", "unknown-type"])
def test_a_schema_the_scaffold_cannot_follow_is_a_400_sentence(client, fmt, words):
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="json-bd", messages=[{"role": "user", "content": "hi"}],
                                       response_format=fmt, max_tokens=32)
    error = caught.value.body
    assert caught.value.status_code == 400 and error["type"] == "invalid_request_error"
    assert words in error["message"] and error["message"].rstrip().endswith(".")
    assert "Traceback" not in error["message"]


@pytest.mark.parametrize("model", ["json-bd", "fake-bd", "json-ar"])
def test_json_object_is_any_object(client, model):
    reply = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "An order, as JSON."}],
                                           response_format={"type": "json_object"}, max_tokens=128, temperature=0)
    assert isinstance(json.loads(reply.choices[0].message.content), dict)


def test_tools_and_a_schema_together_are_refused(client):
    from world.tools import openai_tools

    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="json-bd", messages=[{"role": "user", "content": "hi"}],
                                       tools=openai_tools(), response_format=response_format(SCHEMA))
    assert "not both" in caught.value.body["message"]
