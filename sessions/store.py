"""SessionStore: conversations, turns and their generation traces in one SQLite file.

sqlite-utils over the stdlib driver, WAL journal, schema by `sqlite_utils.Migrations`
(migrations.py), full-text search over turn text. Gradio handlers run in worker threads and a
sqlite3 connection must stay in the thread that made it, so each thread gets its own
connection (threading.local). Every turn is written in one transaction: the turn, its
generation, its frames and its tool calls land together or not at all.

Failures reach callers as `StoreError` with a sentence for a person. The store never deletes
or rewrites a file it cannot read, so nothing already stored is lost on an error.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from engine.json_limits import read_stored
from engine.trace import GenerationConfig, Result

from .codec import FrameCodecError
from .fts import fts_literal_query
from .migrations import MIGRATIONS
from .records import TurnRecord
from .rows import config_from_json, encode_turn, result_from_row, to_json

KINDS = ("chat", "compare", "agent", "api")
_MIGRATION_LOCK = threading.Lock()  # one thread per process migrates; others wait, then see nothing pending


class StoreError(Exception):
    """The session store could not do what was asked; the message is a sentence for a person."""


class ConversationNotFound(StoreError):
    pass


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _rows(db: Database, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    cursor = db.execute(sql, list(params))
    keys = [d[0] for d in cursor.description]
    return [dict(zip(keys, row)) for row in cursor.fetchall()]


class SessionStore:
    """The session database at `path` (created with its folder when missing)."""

    def __init__(self, path: str | os.PathLike[str], busy_timeout_s: float = 5.0) -> None:
        self.path = Path(path).expanduser()
        self.busy_timeout_s = busy_timeout_s
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self._closed = False
        with self._errors("opening it"):
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(self._cannot_open(exc.strerror or str(exc))) from exc
            if self.path.is_dir():
                raise StoreError(self._cannot_open("that path is a folder, not a file"))
            db = self._db()
            with _MIGRATION_LOCK:
                if MIGRATIONS.pending(db):
                    MIGRATIONS.apply(db)

    # -- connections and errors -------------------------------------------------------------

    def _db(self) -> Database:
        db = getattr(self._local, "db", None)
        if db is not None:
            return db
        if self._closed:
            raise StoreError("The session store was closed; open it again to read or write sessions.")
        # timeout= is SQLite's busy timeout: wait for another writer instead of failing at once.
        # check_same_thread=False only so close() can close every thread's connection; each
        # connection is still used by its own thread alone.
        conn = sqlite3.connect(str(self.path), timeout=self.busy_timeout_s, check_same_thread=False)
        try:
            conn.execute("PRAGMA foreign_keys = ON")  # per connection; needed for ON DELETE CASCADE
            conn.execute("PRAGMA journal_mode = WAL")  # readers never block the writer
            db = Database(conn, execute_plugins=False)
        except BaseException:
            conn.close()
            raise
        with self._connections_lock:
            self._connections.append(conn)
        self._local.db = db
        return db

    def _cannot_open(self, reason: str) -> str:
        return f"Cannot open the session database at {self.path}: {reason}. Choose another --db path."

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Turn driver errors into StoreError sentences."""
        try:
            yield
        except StoreError:
            raise
        except FrameCodecError as exc:
            raise StoreError(str(exc)) from exc
        except sqlite3.Error as exc:
            message = str(exc)
            lowered = message.lower()
            if "locked" in lowered or "busy" in lowered:
                text = (f"The session database at {self.path} is locked by another program or window and stayed "
                        f"locked for {self.busy_timeout_s:g} s while {action}; nothing was changed. Close the "
                        "other program or try again.")
            elif "not a database" in lowered or "malformed" in lowered or "corrupt" in lowered:
                text = (f"The session database at {self.path} is damaged or is not a session database "
                        f"({message}). It was left untouched: move it aside to start a new one, or choose "
                        "another --db path.")
            elif "unable to open" in lowered or "readonly" in lowered or "read-only" in lowered or "i/o" in lowered:
                text = self._cannot_open(message)
            else:
                text = f"The session database at {self.path} failed while {action} ({message}); nothing was changed."
            raise StoreError(text) from exc

    @contextmanager
    def _write(self) -> Iterator[Database]:
        """One write transaction. BEGIN IMMEDIATE takes the write lock up front, so a second
        writer waits out the busy timeout instead of failing when it upgrades a read lock."""
        db = self._db()
        db.conn.execute("BEGIN IMMEDIATE")
        try:
            yield db
            db.conn.execute("COMMIT")
        except BaseException:
            if db.conn.in_transaction:
                db.conn.execute("ROLLBACK")
            raise

    @contextmanager
    def _read(self) -> Iterator[Database]:
        """One read snapshot, so a conversation is never read half-way through a write."""
        db = self._db()
        db.conn.execute("BEGIN")
        try:
            yield db
        finally:
            if db.conn.in_transaction:
                db.conn.execute("COMMIT")

    def close(self) -> None:
        """Close every thread's connection. Only call when no other thread is using the store."""
        with self._connections_lock:
            self._closed = True
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes -------------------------------------------------------------------------------

    def create_conversation(
        self, kind: str, title: str, model: str | None = None, meta: Mapping[str, Any] | None = None
    ) -> int:
        if kind not in KINDS:
            raise ValueError(f"Unknown conversation kind {kind!r}; use one of {', '.join(KINDS)}.")
        now = _now()
        meta_json = to_json(dict(meta or {}))
        with self._errors("creating a conversation"), self._write() as db:
            cursor = db.execute(
                "INSERT INTO conversations (kind, title, created_at, updated_at, model, meta) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [kind, title, now, now, model, meta_json],
            )
            return int(cursor.lastrowid)

    def add_turn(
        self,
        conversation_id: int,
        role: str,
        content: str,
        generation: Result | None = None,
        config: GenerationConfig | Mapping[str, Any] | None = None,
        model: str | None = None,
        tool_calls: Sequence[Any] | None = None,
    ) -> int:
        """Append a turn (with its generation trace and tool calls) atomically; returns its id."""
        turn = encode_turn(role, content, generation, config, model, tool_calls)
        now = _now()
        with self._errors("saving a turn"), self._write() as db:
            self._check_exists(db, conversation_id)
            turn_id = self._insert_turn(db, conversation_id, turn, now)
            db.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", [now, conversation_id])
        return turn_id

    def save_exchange(
        self,
        conversation_id: int | None,
        turns: Sequence[TurnRecord],
        kind: str = "chat",
        title: str = "",
        model: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> int:
        """Store one exchange -- the question, any tool steps, the answer -- in one transaction,
        so a crash leaves all of it or none of it; returns the conversation id.

        Each turn is a TurnRecord (sessions/records.py: add_turn's fields). With conversation_id None the conversation
        (kind, title, model, meta) is created in the same transaction: a run that never got to
        save leaves no empty conversation behind."""
        if conversation_id is None and kind not in KINDS:
            raise ValueError(f"Unknown conversation kind {kind!r}; use one of {', '.join(KINDS)}.")
        if not all(isinstance(t, TurnRecord) for t in turns):
            raise TypeError("save_exchange stores TurnRecord turns (sessions/records.py).")
        encoded = [encode_turn(t.role, t.content, t.generation, t.config, t.model, t.tool_calls) for t in turns]
        meta_json = to_json(dict(meta or {}))
        now = _now()
        with self._errors("saving an exchange"), self._write() as db:
            if conversation_id is None:
                conversation_id = int(db.execute(
                    "INSERT INTO conversations (kind, title, created_at, updated_at, model, meta) "
                    "VALUES (?, ?, ?, ?, ?, ?)", [kind, title, now, now, model, meta_json]).lastrowid)
            else:
                self._check_exists(db, conversation_id)
            for turn in encoded:
                self._insert_turn(db, conversation_id, turn, now)
            db.execute("UPDATE conversations SET updated_at = ? WHERE id = ?", [now, conversation_id])
        return conversation_id

    def _check_exists(self, db: Database, conversation_id: int) -> None:
        if db.execute("SELECT 1 FROM conversations WHERE id = ?", [conversation_id]).fetchone() is None:
            raise ConversationNotFound(f"There is no conversation {conversation_id}; it may have been deleted.")

    def _insert_turn(self, db: Database, conversation_id: int, turn: dict[str, Any], now: str) -> int:
        turn_id = self._write_turn(db, conversation_id, turn["role"], turn["content"], now)
        if turn["generation"] is not None:
            generation_id = self._write_generation(db, turn_id, turn["generation"])
            self._write_frames(db, generation_id, turn["frame_count"], turn["frames"])
        self._write_tool_calls(db, turn_id, turn["calls"])
        return turn_id

    # The steps of add_turn, separate so a test can make one fail half-way through.
    def _write_turn(self, db: Database, conversation_id: int, role: str, content: str, now: str) -> int:
        idx = db.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM turns WHERE conversation_id = ?",
                         [conversation_id]).fetchone()[0]
        cursor = db.execute(
            "INSERT INTO turns (conversation_id, idx, role, content, created_at) VALUES (?, ?, ?, ?, ?)",
            [conversation_id, idx, role, content, now],
        )
        return int(cursor.lastrowid)

    def _write_generation(self, db: Database, turn_id: int, row: dict[str, Any]) -> int:
        cursor = db.execute(
            "INSERT INTO generations (turn_id, model, config, stats, text, token_ids, mask_id, pieces, ends) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [turn_id, row["model"], row["config"], row["stats"], row["text"], row["token_ids"], row["mask_id"],
             row["pieces"], row["ends"]],
        )
        return int(cursor.lastrowid)

    def _write_frames(self, db: Database, generation_id: int, count: int, data: str) -> None:
        db.execute("INSERT INTO frames (generation_id, count, data) VALUES (?, ?, ?)", [generation_id, count, data])

    def _write_tool_calls(self, db: Database, turn_id: int, calls: list[dict[str, Any]]) -> None:
        for call in calls:
            db.execute(
                "INSERT INTO tool_calls (turn_id, step, name, arguments, observation, error_type) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [turn_id, call["step"], call["name"], call["arguments"], call["observation"], call["error_type"]],
            )

    def rename(self, conversation_id: int, title: str) -> None:
        with self._errors("renaming a conversation"), self._write() as db:
            cursor = db.execute("UPDATE conversations SET title = ?, updated_at = ? WHERE id = ?",
                                [title, _now(), conversation_id])
            if cursor.rowcount == 0:
                raise ConversationNotFound(f"There is no conversation {conversation_id} to rename.")

    def delete_conversation(self, conversation_id: int) -> bool:
        """Delete a conversation and everything under it (ON DELETE CASCADE); False if it did not exist."""
        with self._errors("deleting a conversation"), self._write() as db:
            return db.execute("DELETE FROM conversations WHERE id = ?", [conversation_id]).rowcount > 0

    # -- reads --------------------------------------------------------------------------------

    def list_conversations(self, kind: str | None = None, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
        """Newest activity first, each with its number of turns."""
        where, params = ("WHERE c.kind = ?", [kind]) if kind else ("", [])
        sql = (
            "SELECT c.*, (SELECT COUNT(*) FROM turns t WHERE t.conversation_id = c.id) AS turn_count "
            f"FROM conversations c {where} ORDER BY c.updated_at DESC, c.id DESC LIMIT ? OFFSET ?"
        )
        with self._errors("listing conversations"), self._read() as db:
            rows = _rows(db, sql, [*params, int(limit), int(offset)])
        for row in rows:
            row["meta"] = read_stored(row["meta"])
        return rows

    def get_conversation(self, conversation_id: int) -> dict[str, Any]:
        """The conversation with its turns in order; each turn has `generation` (a Result or None),
        `config` (GenerationConfig, or a dict if it no longer validates), `model` and `tool_calls`."""
        with self._errors("reading a conversation"), self._read() as db:
            found = _rows(db, "SELECT * FROM conversations WHERE id = ?", [conversation_id])
            if not found:
                raise ConversationNotFound(f"There is no conversation {conversation_id}; it may have been deleted.")
            turns = _rows(db, "SELECT * FROM turns WHERE conversation_id = ? ORDER BY idx", [conversation_id])
            generations = _rows(
                db,
                "SELECT g.*, f.data AS frames_data FROM generations g JOIN turns t ON t.id = g.turn_id "
                "LEFT JOIN frames f ON f.generation_id = g.id WHERE t.conversation_id = ? ORDER BY g.id",
                [conversation_id],
            )
            calls = _rows(
                db,
                "SELECT c.* FROM tool_calls c JOIN turns t ON t.id = c.turn_id WHERE t.conversation_id = ? "
                "ORDER BY c.turn_id, c.step, c.id",
                [conversation_id],
            )
            conversation = found[0]
            conversation["meta"] = read_stored(conversation["meta"])
            by_turn: dict[int, dict[str, Any]] = {}
            for turn in turns:
                turn.update(generation=None, config=None, model=None, tool_calls=[])
                by_turn[turn["id"]] = turn
            for row in generations:
                turn = by_turn[row["turn_id"]]
                if turn["generation"] is None:  # add_turn writes one generation per turn
                    turn.update(generation=result_from_row(row, row["frames_data"]),
                                config=config_from_json(row["config"]), model=row["model"])
            for call in calls:
                call["arguments"] = read_stored(call["arguments"])
                by_turn[call["turn_id"]]["tool_calls"].append(call)
            conversation["turns"] = turns
            return conversation

    def search(self, query: str, kind: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
        """Conversations whose turns match `query` (words, prefix-matched, any FTS syntax taken
        literally), best match first, then conversations whose title contains it. Each row has `snippet`: the
        matching text with the hits between « and » (plain text: escape it before showing)."""
        fts_query = fts_literal_query(query)
        if not fts_query and not query.strip():
            return []
        kind_filter = "AND c.kind = ?" if kind else ""
        kind_args = [kind] if kind else []
        with self._errors("searching"), self._read() as db:
            hits: list[dict[str, Any]] = []
            if fts_query:
                try:
                    hits = _rows(
                        db,
                        "SELECT c.*, t.id AS turn_id, t.role AS role, "
                        "snippet(turns_fts, 0, '«', '»', '…', 12) AS snippet "
                        "FROM turns_fts JOIN turns t ON t.id = turns_fts.rowid "
                        f"JOIN conversations c ON c.id = t.conversation_id WHERE turns_fts MATCH ? {kind_filter} "
                        "ORDER BY turns_fts.rank LIMIT ?",
                        [fts_query, *kind_args, int(limit) * 10],
                    )
                except sqlite3.OperationalError as exc:
                    # Quoting leaves no FTS syntax, but a chunk the tokenizer reduces to nothing
                    # could still upset the parser: that is "no hits", not an error.
                    if not any(word in str(exc).lower() for word in ("fts5", "syntax", "unterminated")):
                        raise
            titled = _rows(
                db,
                "SELECT c.*, NULL AS turn_id, NULL AS role, c.title AS snippet FROM conversations c "
                f"WHERE instr(lower(c.title), lower(?)) > 0 {kind_filter} ORDER BY c.updated_at DESC LIMIT ?",
                [query.strip(), *kind_args, int(limit)],
            )
        seen: set[int] = set()
        results: list[dict[str, Any]] = []
        for row in hits + titled:  # one row per conversation: its best-ranked turn, else its title
            if row["id"] in seen:
                continue
            seen.add(row["id"])
            row["meta"] = read_stored(row["meta"])
            results.append(row)
        return results[: int(limit)]

    # -- generation-setting presets -------------------------------------------------------------

    def save_preset(self, name: str, settings: Mapping[str, Any]) -> None:
        """Store (or replace) the named settings, a JSON object of control name -> value."""
        name = " ".join(str(name or "").split())
        if not name:
            raise ValueError("A preset needs a name: type one before saving.")
        if len(name) > PRESET_NAME_CHARS:
            raise ValueError(f"Preset names are at most {PRESET_NAME_CHARS} characters; this one has {len(name)}.")
        with self._errors("saving a preset"), self._write() as db:
            db.execute("INSERT INTO presets (name, settings, updated_at) VALUES (?, ?, ?) "
                       "ON CONFLICT (name) DO UPDATE SET settings = excluded.settings, "
                       "updated_at = excluded.updated_at", [name, to_json(dict(settings)), _now()])

    def presets(self) -> dict[str, dict[str, Any]]:
        """Every saved preset, name -> settings, by name."""
        with self._errors("reading presets"), self._read() as db:
            rows = _rows(db, "SELECT name, settings FROM presets ORDER BY name")
        return {row["name"]: read_stored(row["settings"]) for row in rows}

    def delete_preset(self, name: str) -> bool:
        with self._errors("deleting a preset"), self._write() as db:
            return db.execute("DELETE FROM presets WHERE name = ?", [name]).rowcount > 0


PRESET_NAME_CHARS = 60
