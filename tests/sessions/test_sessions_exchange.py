"""SessionStore.save_exchange: a question, its tool steps and its answer land in one transaction.

The crash test forks a writer, lets it store exchanges and kills it with SIGKILL at a random
moment, 24 times; afterwards every stored question has its answer, no conversation is empty and
`PRAGMA integrity_check` is ok. A control run writes the same turns one transaction each, with a
pause between question and answer, and the same check finds the half-written exchanges: the
check can fail."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from engine.trace import Frame, GenerationConfig, Result, Stats
from sessions import ConversationNotFound, SessionStore, TurnRecord

CONFIG = GenerationConfig(gen_length=4, block_size=4, steps=4)
KILLS = 24


def answer(text: str) -> Result:
    frames = [Frame(nfe=i + 1, block=0, round=i, committed=[(i, 10 + i, 0.9)],
                    canvas=[10 + j if j <= i else 99 for j in range(4)], elapsed_s=0.01 * (i + 1)) for i in range(4)]
    stats = Stats(nfe=4, new_tokens=4, tokens_per_forward=1.0, seconds=0.04, tokens_per_s=100.0, first_token_s=0.01,
                  stop_reason="length")
    return Result(token_ids=[10, 11, 12, 13], text=text, frames=frames, stats=stats, mask_id=99)


def exchange(n: int) -> list[dict]:
    call = {"step": 0, "name": "search", "arguments": {"q": f"item {n}"}, "observation": {"hits": [n]},
            "error_type": None}
    return [{"role": "user", "content": f"question {n}"},
            {"role": "assistant", "content": f"call {n}", "generation": answer(f"call {n}"), "config": CONFIG,
             "model": "fake", "tool_calls": [call]},
            {"role": "tool", "content": f"hits {n}"},
            {"role": "assistant", "content": f"answer {n}", "generation": answer(f"answer {n}"), "config": CONFIG,
             "model": "fake"}]


def records(n: int) -> list[TurnRecord]:
    return [TurnRecord(**turn) for turn in exchange(n)]


def unanswered(path: Path) -> tuple[list[tuple[int, str]], int, str]:
    """(questions without a later assistant answer, empty conversations, integrity_check)."""
    conn = sqlite3.connect(path)
    try:
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        rows = conn.execute("SELECT conversation_id, idx, role, content FROM turns ORDER BY conversation_id, idx")
        by_conversation: dict[int, list[tuple[str, str]]] = {}
        for cid, _idx, role, content in rows:
            by_conversation.setdefault(cid, []).append((role, content))
        empty = conn.execute("SELECT COUNT(*) FROM conversations c WHERE NOT EXISTS "
                             "(SELECT 1 FROM turns t WHERE t.conversation_id = c.id)").fetchone()[0]
    finally:
        conn.close()
    missing = []
    for cid, turns in by_conversation.items():
        for i, (role, content) in enumerate(turns):
            if role == "user":
                rest = turns[i + 1:]
                following = rest[: next((j for j, t in enumerate(rest) if t[0] == "user"), len(rest))]
                if not following or following[-1] != ("assistant", content.replace("question", "answer")):
                    missing.append((cid, content))
    return missing, empty, integrity


def writer(path: str, split: bool, seed: int) -> None:
    """Store exchanges until killed: half in new conversations, half appended to the last one."""
    store = SessionStore(path)
    rng = random.Random(seed)
    cid = None
    n = seed * 100_000
    while True:
        n += 1
        turns = exchange(n)
        if split:                       # the old way: one transaction per turn
            if cid is None or rng.random() < 0.5:
                cid = store.create_conversation("chat", f"chat {n}")
            for i, turn in enumerate(turns):
                store.add_turn(cid, **turn)
                if i == 0:
                    time.sleep(0.02)    # the model answering
        else:
            cid = store.save_exchange(None if cid is None or rng.random() < 0.5 else cid,
                                      [TurnRecord(**turn) for turn in turns], kind="agent",
                                      title=f"chat {n}", model="fake")


def kill_writers(path: Path, split: bool, kills: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    fork = multiprocessing.get_context("fork")
    for i in range(kills):
        child = fork.Process(target=writer, args=(str(path), split, i + 1), daemon=True)
        child.start()
        time.sleep(rng.uniform(0.05, 0.35))
        os.kill(child.pid, signal.SIGKILL)
        child.join(timeout=10)
        assert child.exitcode == -signal.SIGKILL


@pytest.fixture
def store(tmp_path):
    with SessionStore(tmp_path / "s.db") as s:
        yield s


def test_save_exchange_creates_the_conversation_with_its_turns(store):
    cid = store.save_exchange(None, records(1), kind="agent", title="q1", model="fake", meta={"task": "t"})
    conversation = store.get_conversation(cid)
    assert (conversation["kind"], conversation["title"], conversation["meta"]) == ("agent", "q1", {"task": "t"})
    assert [t["role"] for t in conversation["turns"]] == ["user", "assistant", "tool", "assistant"]
    assert conversation["turns"][1]["tool_calls"][0]["arguments"] == {"q": "item 1"}
    assert conversation["turns"][3]["generation"].text == "answer 1"
    assert store.save_exchange(cid, records(2)) == cid
    assert len(store.get_conversation(cid)["turns"]) == 8


def test_the_store_reads_its_own_records_only(store):
    """The store defines what it stores (sessions/records.py): a mapping or another class's object
    is refused before anything is written, not read field by field as whatever it happens to hold."""
    class Turn:
        def __init__(self, role, content):
            self.role, self.content = role, content

    for stranger in ({"role": "user", "content": "q"}, Turn("user", "q")):
        with pytest.raises(TypeError, match="TurnRecord"):
            store.save_exchange(None, [TurnRecord("user", "q"), stranger], title="strangers")
    assert store.list_conversations() == []
    cid = store.save_exchange(None, [TurnRecord("user", "q"), TurnRecord("assistant", "a")], title="records")
    assert [t["content"] for t in store.get_conversation(cid)["turns"]] == ["q", "a"]


@pytest.mark.parametrize("step", ["_write_turn", "_write_generation", "_write_frames", "_write_tool_calls"])
def test_a_failure_half_way_writes_nothing_not_even_the_conversation(store, step, monkeypatch):
    calls = {"n": 0}
    original = getattr(SessionStore, step)

    def fail_on_second(self, *args):
        calls["n"] += 1
        if calls["n"] == 2:
            raise sqlite3.OperationalError("disk I/O error")
        return original(self, *args)

    monkeypatch.setattr(SessionStore, step, fail_on_second)
    with pytest.raises(Exception, match="I/O"):
        store.save_exchange(None, records(1) + records(2), title="half")
    assert store.list_conversations() == []


def test_a_bad_turn_writes_nothing(store):
    with pytest.raises(ValueError, match="role"):
        store.save_exchange(None, [TurnRecord("user", "q"), TurnRecord("", "a")], title="bad")
    assert store.list_conversations() == []


def test_appending_to_a_deleted_conversation_is_a_sentence(store):
    with pytest.raises(ConversationNotFound, match="no conversation 42"):
        store.save_exchange(42, records(1))


def test_sigkill_while_saving_exchanges_leaves_whole_exchanges(tmp_path):
    path = tmp_path / "crash.db"
    SessionStore(path).close()                      # schema first, so every kill lands in the writing
    kill_writers(path, split=False, kills=KILLS)
    missing, empty, integrity = unanswered(path)
    with SessionStore(path) as store:
        stored = sum(c["turn_count"] for c in store.list_conversations(limit=100_000))
    assert integrity == "ok"
    assert stored >= 4 * KILLS // 2, "the writers stored too little for the kills to mean anything"
    assert missing == [] and empty == 0


def test_control_one_transaction_per_turn_is_caught_half_written(tmp_path):
    path = tmp_path / "split.db"
    SessionStore(path).close()
    kill_writers(path, split=True, kills=8)
    missing, _empty, integrity = unanswered(path)
    assert integrity == "ok"
    assert missing, "the check found no question without its answer, so it could not fail"
