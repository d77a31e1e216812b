"""world/office_six.py: the seed's six office tasks in one conversation, held-out values, the
committed set is what the generator draws, and the oracle holds every request and every chain."""

from engine.trace import GenerationConfig
from tests.world.heldout_values import assert_heldout_values
from world import conversation_sets, conversations, office_six
from world.agent import run_conversation
from world.format import render_call
from world.oracle import OracleModel
from world.start import world_for
from world.task_sets import write_task_list


def test_the_committed_set_is_what_the_generator_draws(tmp_path):
    path = tmp_path / "again.json"
    write_task_list(office_six.make_office_six(), path)
    assert path.read_text() == office_six.OFFICE_SIX_PATH.read_text()


def test_every_chain_is_the_six_office_tasks_in_order_on_held_out_values():
    chains = office_six.load_office_six()
    assert len(chains) >= 10 and len({c["id"] for c in chains}) == len(chains)
    named = [t["instruction"] for c in chains for t in c["turns"] if not t["intent"].startswith("follow_")]
    assert len(set(named)) == len(named) == 5 * len(chains)      # a follow-up ("and her invoices?") may repeat
    for chain in chains:
        assert chain["split"] == "heldout" and [t["intent"] for t in chain["turns"]] == conversation_sets.SIX_OFFICE
        assert all(t["domain"] == "office" for t in chain["turns"])
        for k in range(len(chain["turns"])):
            task = conversations.turn_task(chain, k)
            assert_heldout_values(task, world_for(task))
        assert conversations.count_tokens(conversations.conversation_messages(chain)) <= conversations.MAX_TOKENS


def test_the_oracle_succeeds_on_every_request_of_every_chain():
    runs = [run_conversation(None, c, GenerationConfig(), system=None, generate_for=OracleModel)
            for c in office_six.load_office_six()]
    assert [t.task_id for ran in runs for t in ran.requests if not t.success] == []
    assert all(ran.success for ran in runs) and sum(len(ran.requests) for ran in runs) == 6 * len(runs)


def test_only_a_right_answer_passes_a_request():
    """Every request changes the world or must name something, so a model that calls nothing and
    answers "nothing found" fails each one."""
    chains = office_six.load_office_six()
    assert all(office_six.gradable(t) for c in chains for t in c["turns"])
    assert not office_six.gradable({"gold_actions": [{"name": "find_invoices"}, {"name": "finish"}], "outputs": []})
    idle = lambda task: lambda messages: render_call("finish", {"answer": "No invoices found."})  # noqa: E731
    runs = [run_conversation(None, c, GenerationConfig(), system=None, generate_for=idle) for c in chains]
    assert [t.task_id for ran in runs for t in ran.requests if t.success] == []


def test_one_wrong_request_fails_its_chain_and_no_other_request():
    chain = office_six.load_office_six()[0]

    def wrong_sum(task):
        if task["intent"] == "office_sum":
            return lambda messages: render_call("finish", {"answer": "The total is 1."})
        return OracleModel(task)

    ran = run_conversation(None, chain, GenerationConfig(), system=None, generate_for=wrong_sum)
    assert not ran.success
    assert [t.success for t in ran.requests] == [intent != "office_sum" for intent in conversation_sets.SIX_OFFICE]


def test_validation_chains_are_drawn_alike_and_none_is_the_benchmarks():
    validation = office_six.validation_office_six(3)
    assert len(validation) == 3
    assert all([t["intent"] for t in c["turns"]] == conversation_sets.SIX_OFFICE for c in validation)
    assert not {c["id"] for c in validation} & {c["id"] for c in office_six.load_office_six()}
