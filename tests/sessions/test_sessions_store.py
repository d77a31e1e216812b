"""The session store: round trips, search, threads, atomic turns, cascades and error sentences."""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.trace import GenerationConfig
from sessions import ConversationNotFound, SessionStore, StoreError, default_db_path
from tests.visualizer.test_visualizer_traces import CONFIG, make_result

TABLES = ("conversations", "turns", "generations", "frames", "tool_calls")
TOOL_CALLS = [
    {"step": 0, "name": "search_products", "arguments": {"query": "red shirt", "size": "M"},
     "observation": "<tool_response>[]</tool_response>", "error_type": None},
    {"step": 1, "name": "finish", "arguments": {"answer": "none"}, "observation": None, "error_type": "wrong_tool"},
]


@pytest.fixture
def store(tmp_path):
    with SessionStore(tmp_path / "sessions.db") as s:
        yield s


def counts(path: Path) -> dict[str, int]:
    conn = sqlite3.connect(path)
    try:
        return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        conn.close()


def chat_with_answer(store: SessionStore) -> int:
    cid = store.create_conversation("chat", "Shirts", model="sprout-bd", meta={"tab": "chat"})
    store.add_turn(cid, "user", "Find me a red shirt, please")
    store.add_turn(cid, "assistant", make_result().text, generation=make_result(), config=CONFIG,
                   model="sprout-bd", tool_calls=TOOL_CALLS)
    return cid


def test_round_trip_replays_identical_frames(store):
    cid = chat_with_answer(store)
    conversation = store.get_conversation(cid)
    assert conversation["kind"] == "chat" and conversation["meta"] == {"tab": "chat"}
    user, assistant = conversation["turns"]
    assert (user["idx"], user["role"], user["generation"]) == (0, "user", None)
    assert assistant["idx"] == 1 and assistant["model"] == "sprout-bd"
    assert assistant["generation"] == make_result()  # frames, stats, pieces, mask id, ids, text
    assert assistant["generation"].frames == make_result().frames
    assert assistant["config"] == CONFIG and isinstance(assistant["config"], GenerationConfig)
    calls = assistant["tool_calls"]
    assert [c["name"] for c in calls] == ["search_products", "finish"]
    assert calls[0]["arguments"] == {"query": "red shirt", "size": "M"}
    assert calls[1]["error_type"] == "wrong_tool" and calls[1]["observation"] is None


def test_an_ar_trace_stored_with_display_groups_reads_back_as_blocks_of_one(store):
    from tests.visualizer.test_visualizer_traces import make_ar_frames

    frames = make_ar_frames(6)
    grouped = [dataclasses.replace(f, block=i // 4, round=i % 4) for i, f in enumerate(frames)]
    result = dataclasses.replace(make_result(), frames=grouped, mask_id=None)
    cid = store.create_conversation("chat", "AR", model="sprout-ar")
    store.add_turn(cid, "assistant", result.text, generation=result, config=CONFIG, model="sprout-ar")
    assert store.get_conversation(cid)["turns"][0]["generation"].frames == frames


def test_reopen_keeps_data_and_schema(tmp_path):
    path = tmp_path / "s.db"
    with SessionStore(path) as first:
        cid = chat_with_answer(first)
    with SessionStore(path) as second:
        assert second.get_conversation(cid)["turns"][1]["generation"] == make_result()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    names = [name for (name,) in conn.execute("SELECT name FROM _sqlite_migrations").fetchall()]
    assert names == ["0001_initial", "0002_api_kind", "0003_generation_ends", "0004_presets"]
    conn.close()


def test_list_rename_and_kinds(store):
    a = store.create_conversation("chat", "first")
    b = store.create_conversation("agent", "second", meta={"task": "shop-01"})
    store.add_turn(a, "user", "hello")  # activity moves `a` to the top
    rows = store.list_conversations()
    assert [r["id"] for r in rows] == [a, b] and rows[0]["turn_count"] == 1
    assert [r["id"] for r in store.list_conversations(kind="agent")] == [b]
    assert store.list_conversations(limit=1, offset=1)[0]["id"] == b
    store.rename(b, "renamed")
    assert store.get_conversation(b)["title"] == "renamed"
    with pytest.raises(ConversationNotFound):
        store.rename(999, "x")
    with pytest.raises(ValueError, match="kind"):
        store.create_conversation("email", "x")


def test_search_finds_words_with_snippet(store):
    cid = chat_with_answer(store)
    other = store.create_conversation("chat", "Unrelated")
    store.add_turn(other, "user", "nothing to see")
    hits = store.search("shirt")
    assert [h["id"] for h in hits] == [cid]
    assert "«shirt»" in hits[0]["snippet"] or "«Shirts»" in hits[0]["snippet"]
    assert [h["id"] for h in store.search("red")] == [cid]
    assert [h["id"] for h in store.search("shi")] == [cid]  # prefix, for search-as-you-type
    assert store.search("shirts red")[0]["id"] == cid  # stemming: "shirts" finds "shirt"
    assert [h["id"] for h in store.search("unrel")] == [other]  # title match
    assert store.search("shirt", kind="agent") == []


ODD_QUERIES = ['"', 'a"b', "NEAR(a b)", "shirt AND", "OR", "*", "-shirt", "content:shirt", "^red", "(((", "it's",
               "", "   ", '""', "漢字", "a*b", "{x}", "\\", "shirt)", "%_", "\x00"]


@pytest.mark.parametrize("query", ODD_QUERIES, ids=[repr(q) for q in ODD_QUERIES])
def test_odd_search_syntax_does_not_raise(store, query):
    chat_with_answer(store)
    assert isinstance(store.search(query), list)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=20))
def test_any_search_text_does_not_raise(store, query):
    assert isinstance(store.search(query), list)


def test_concurrent_writes_from_two_threads(store):
    cid = store.create_conversation("compare", "race")
    errors: list[BaseException] = []

    def writer(tag: str) -> None:
        try:
            for i in range(15):
                store.add_turn(cid, "assistant", f"{tag} {i}", generation=make_result(), config=CONFIG)
        except BaseException as exc:  # surfaced below; a thread's exception is otherwise lost
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(tag,)) for tag in ("left", "right")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    turns = store.get_conversation(cid)["turns"]
    assert [t["idx"] for t in turns] == list(range(30))
    assert sorted(t["content"] for t in turns) == sorted(f"{s} {i}" for s in ("left", "right") for i in range(15))
    assert all(t["generation"] == make_result() for t in turns)


@pytest.mark.parametrize("step", ["_write_generation", "_write_frames", "_write_tool_calls"])
def test_turn_is_atomic_under_injected_failure(store, step, monkeypatch):
    cid = chat_with_answer(store)
    before = counts(store.path)
    updated_before = store.get_conversation(cid)["updated_at"]

    def fail(*args, **kwargs):
        raise RuntimeError("disk unplugged mid-write")

    monkeypatch.setattr(store, step, fail)
    with pytest.raises(RuntimeError, match="unplugged"):
        store.add_turn(cid, "assistant", "zebra answer", generation=make_result(), config=CONFIG,
                       tool_calls=TOOL_CALLS)
    assert counts(store.path) == before
    assert store.search("zebra") == []  # the FTS trigger's insert was rolled back too
    conversation = store.get_conversation(cid)
    assert len(conversation["turns"]) == 2 and conversation["updated_at"] == updated_before
    monkeypatch.undo()
    store.add_turn(cid, "assistant", "zebra answer")  # the store still works afterwards
    assert [h["id"] for h in store.search("zebra")] == [cid]


@dataclasses.dataclass
class ParsedCall:
    step: int
    name: str
    arguments: object
    observation: str | None = None
    error_type: str | None = None


def test_tool_calls_from_dataclasses_and_raw_text(store):
    cid = store.create_conversation("agent", "shop task")
    raw = '{"name": "add_to_cart", "arguments": {"size": '  # a call the parser could not read
    store.add_turn(cid, "assistant", "calling tools", tool_calls=[
        ParsedCall(0, "add_to_cart", raw, "parse error: unexpected end", "parse_error"),
        ParsedCall(1, "view_cart", {}, "[]"),
    ])
    calls = store.get_conversation(cid)["turns"][0]["tool_calls"]
    assert [(c["step"], c["name"], c["arguments"], c["error_type"]) for c in calls] == [
        (0, "add_to_cart", raw, "parse_error"), (1, "view_cart", {}, None)]


def test_bad_tool_call_writes_nothing(store):
    cid = chat_with_answer(store)
    before = counts(store.path)
    with pytest.raises(ValueError, match="name"):
        store.add_turn(cid, "assistant", "x", tool_calls=[{"arguments": {}}])
    assert counts(store.path) == before


def test_delete_cascades(store):
    cid = chat_with_answer(store)
    keep = chat_with_answer(store)
    assert store.delete_conversation(cid) is True
    assert counts(store.path) == {"conversations": 1, "turns": 2, "generations": 1, "frames": 1, "tool_calls": 2}
    assert [h["id"] for h in store.search("shirt")] == [keep]
    assert store.delete_conversation(cid) is False
    with pytest.raises(ConversationNotFound):
        store.get_conversation(cid)
    with pytest.raises(ConversationNotFound):
        store.add_turn(cid, "user", "too late")


def test_unwritable_path_is_a_sentence(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(StoreError) as info:
        SessionStore(blocker / "sessions.db")
    message = str(info.value)
    assert message.startswith(f"Cannot open the session database at {blocker / 'sessions.db'}: ")
    assert message.endswith("Choose another --db path.")
    with pytest.raises(StoreError, match="folder"):
        SessionStore(tmp_path)


def test_corrupt_file_is_left_untouched(tmp_path):
    path = tmp_path / "sessions.db"
    garbage = b"this is not sqlite" * 100
    path.write_bytes(garbage)
    with pytest.raises(StoreError, match="damaged or is not a session database"):
        SessionStore(path)
    assert path.read_bytes() == garbage


def test_locked_database_is_a_sentence_and_loses_nothing(tmp_path):
    path = tmp_path / "sessions.db"
    store = SessionStore(path, busy_timeout_s=0.1)
    cid = chat_with_answer(store)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # another program holds the write lock
    try:
        with pytest.raises(StoreError, match="locked .* nothing was changed"):
            store.add_turn(cid, "user", "blocked")
        assert len(store.get_conversation(cid)["turns"]) == 2  # WAL readers are not blocked
    finally:
        other.execute("ROLLBACK")
        other.close()
    store.add_turn(cid, "user", "after")
    assert [t["content"] for t in store.get_conversation(cid)["turns"]][-1] == "after"
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.list_conversations()


def test_default_db_path(tmp_path):
    assert default_db_path({"XDG_DATA_HOME": str(tmp_path)}) == tmp_path / "diffusion-playground" / "sessions.db"
    assert default_db_path({"DIFFUSION_PLAYGROUND_DB": str(tmp_path / "x.db")}) == tmp_path / "x.db"
    assert default_db_path({}) == Path.home() / ".local" / "share" / "diffusion-playground" / "sessions.db"
