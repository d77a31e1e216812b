"""Migration 0002 lets conversations have kind 'api' without touching what a database held."""

from __future__ import annotations

from sqlite_utils import Database

from sessions import SessionStore
from sessions.migrations import MIGRATIONS


def test_an_old_database_gains_the_api_kind_and_keeps_its_turns(tmp_path):
    path = tmp_path / "old.db"
    db = Database(path)
    db.conn.execute("PRAGMA foreign_keys = ON")
    MIGRATIONS.apply(db, stop_before="0002_api_kind")
    db.execute("INSERT INTO conversations (kind, title, created_at, updated_at) VALUES ('chat', 't', 'a', 'a')")
    db.execute("INSERT INTO turns (conversation_id, idx, role, content, created_at) "
               "VALUES (1, 0, 'user', 'hello world', 'a')")
    db.conn.commit()
    db.conn.close()

    store = SessionStore(path)
    assert [t["content"] for t in store.get_conversation(1)["turns"]] == ["hello world"]
    assert store.search("hello")[0]["id"] == 1
    api = store.create_conversation("api", "a call")
    store.add_turn(api, "user", "hi")
    assert [c["id"] for c in store.list_conversations(kind="api")] == [api]
    assert store.delete_conversation(1) and store.get_conversation(api)["turns"][0]["content"] == "hi"
    store.close()
