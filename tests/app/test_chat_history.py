"""In Chat, a follow-up ("Now invoice her for $40") reaches a model whose weights read the whole
conversation with the earlier requests, their tool calls and their responses: the customer's id
it needs is only there."""

from __future__ import annotations

from app.chat import ChatHandlers
from app.names import with_names
from tests.app.test_app_handlers import OUT, ask
from tests.e2e.app_fakes import fake_context
from tests.fakes import FakeDiffusionBackend
from tests.world.scripted import conversation_oracle_target, world_format
from world import conversations
from world.start import world_for

SETTINGS = (128, 32, 32, "threshold", 0.9, 0.0, 0)


def _lookup_then_invoice():
    plan = ["office_customer", "follow_invoice"]
    return next(c for s in range(100) if (c := conversations.draw("heldout", s, "heldout", plan=plan)))


def test_a_follow_up_reaches_a_conversation_model_with_its_history(tmp_path):
    conversation = _lookup_then_invoice()
    lookup, invoice = conversation["turns"]
    customer_id = invoice["gold_actions"][0]["arguments"]["customer_id"]
    assert customer_id not in invoice["instruction"]
    backend = world_format(FakeDiffusionBackend(conversation_oracle_target([conversation]), max_length=8192,
                                                name="fake-bd"))
    assert not backend.__dict__.get("one_request_per_chat")    # weights that read the whole conversation
    context = fake_context(tmp_path, backends={"fake-bd": backend})
    try:
        chat = ChatHandlers(context, updates_per_second=1e9)
        world = world_for({"split": conversation["split"], "world": conversation["world"]})
        first = ask(chat, lookup["instruction"], world=world, settings=SETTINGS)[-1]
        # the chat shows the answer with the world's names beside its ids (app/names.py)
        assert first[OUT["chatbot"]][-1]["content"] == with_names(lookup["gold_actions"][-1]["arguments"]["answer"],
                                                                  world)
        second = ask(chat, invoice["instruction"], first[OUT["history"]], first[OUT["conversation_id"]], world=world,
                     tree=first[OUT["tree"]], settings=SETTINGS)[-1]
        prompt = backend.tokenizer.decode(backend.prompts[-1])
        assert lookup["instruction"] in prompt and invoice["instruction"] in prompt
        assert '"name":"get_customer"' in prompt and f'"id":"{customer_id}"' in prompt
        made = [i for i in world.invoices.values() if i["customer"] == customer_id and i["amount"] ==
                invoice["slots"]["amount"]]
        assert len(made) == 1                                   # the follow-up acted on the right customer
        assert second[OUT["chatbot"]][-1]["content"] == with_names(invoice["gold_actions"][-1]["arguments"]["answer"],
                                                                   world)
    finally:
        context.close()


def test_a_latest_request_model_gets_no_history_so_the_follow_up_cannot_be_resolved(tmp_path):
    """The same two messages to weights that declare the latest-request rule: the prompt holds
    the follow-up alone (the conversation oracle finds no such request and gives no call)."""
    conversation = _lookup_then_invoice()
    lookup, invoice = conversation["turns"]
    target = conversation_oracle_target([conversation])
    prompts = []

    def recording(prompt: str) -> str:
        prompts.append(prompt)
        try:
            return target(prompt)
        except KeyError:
            return "I do not know who that is."
    backend = world_format(FakeDiffusionBackend(recording, max_length=8192, name="fake-bd"))
    backend.one_request_per_chat = True
    context = fake_context(tmp_path, backends={"fake-bd": backend})
    try:
        chat = ChatHandlers(context, updates_per_second=1e9)
        world = world_for({"split": conversation["split"], "world": conversation["world"]})
        first = ask(chat, lookup["instruction"], world=world, settings=SETTINGS)[-1]
        ask(chat, invoice["instruction"], first[OUT["history"]], first[OUT["conversation_id"]], world=world,
            tree=first[OUT["tree"]], settings=SETTINGS)
        assert invoice["instruction"] in prompts[-1] and lookup["instruction"] not in prompts[-1]
        assert not any(i["amount"] == invoice["slots"]["amount"] for i in world.invoices.values()
                       if i["customer"] == invoice["slots"]["customer_id"])
    finally:
        context.close()
