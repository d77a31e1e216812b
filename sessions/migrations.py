"""Schema of the session store, as sqlite-utils migrations (applied in order, each once).

Tables are written as SQL so the foreign keys can say ON DELETE CASCADE: deleting a
conversation removes its turns, generations, frames and tool calls in the same statement.
A new schema change is a new function at the bottom; never edit one that has shipped.
"""

from __future__ import annotations

from sqlite_utils import Database, Migrations

MIGRATIONS = Migrations("diffusion-playground-sessions")

_INITIAL_SCHEMA = """
CREATE TABLE conversations (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('chat', 'compare', 'agent')),
    title TEXT NOT NULL,
    created_at TEXT NOT NULL,          -- ISO 8601, UTC
    updated_at TEXT NOT NULL,
    model TEXT,
    meta TEXT NOT NULL DEFAULT '{}'    -- JSON object
);
CREATE INDEX conversations_updated ON conversations (updated_at);
CREATE INDEX conversations_kind_updated ON conversations (kind, updated_at);

CREATE TABLE turns (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,              -- 0, 1, 2 ... inside the conversation
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (conversation_id, idx)
);

CREATE TABLE generations (
    id INTEGER PRIMARY KEY,
    turn_id INTEGER NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
    model TEXT,
    config TEXT,                       -- JSON GenerationConfig.to_dict(), or null
    stats TEXT NOT NULL,               -- JSON Stats.to_dict()
    text TEXT NOT NULL,
    token_ids TEXT NOT NULL,           -- JSON list of ids
    mask_id INTEGER,
    pieces TEXT NOT NULL               -- JSON {"id": "display text"}
);
CREATE INDEX generations_turn ON generations (turn_id);

-- One row per generation: frames are always written together and read together (a replay
-- needs all of them), so one row is one insert and one JSON parse instead of one per forward.
CREATE TABLE frames (
    generation_id INTEGER PRIMARY KEY REFERENCES generations (id) ON DELETE CASCADE,
    count INTEGER NOT NULL,
    data TEXT NOT NULL                 -- sessions/codec.py format
);

CREATE TABLE tool_calls (
    id INTEGER PRIMARY KEY,
    turn_id INTEGER NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
    step INTEGER NOT NULL,
    name TEXT NOT NULL,
    arguments TEXT NOT NULL DEFAULT '{}',  -- JSON object
    observation TEXT,
    error_type TEXT
);
CREATE INDEX tool_calls_turn ON tool_calls (turn_id, step);
"""


@MIGRATIONS(name="0001_initial")
def initial(db: Database) -> None:
    db.executescript(_INITIAL_SCHEMA)
    # Triggers keep the index in step with inserts, edits and (cascaded) deletes of turns.
    # Porter stemming lets "generation" find "generations".
    db["turns"].enable_fts(["content"], create_triggers=True, tokenize="porter unicode61 remove_diacritics 2")


@MIGRATIONS(name="0002_api_kind", transactional=False)
def api_kind(db: Database) -> None:
    """Let conversations have kind 'api' (calls to /v1). SQLite cannot alter a CHECK, so the
    table is rebuilt (sqlite.org/lang_altertable.html, "other kinds of table schema changes"):
    with foreign keys off, dropping the old table does not cascade into turns, and the new table
    takes its name, so turns' references find it again."""
    db.conn.execute("PRAGMA foreign_keys = OFF")
    try:
        db.conn.executescript("""
            BEGIN;
            CREATE TABLE conversations_new (
                id INTEGER PRIMARY KEY,
                kind TEXT NOT NULL CHECK (kind IN ('chat', 'compare', 'agent', 'api')),
                title TEXT NOT NULL,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                model TEXT,
                meta TEXT NOT NULL DEFAULT '{}'
            );
            INSERT INTO conversations_new SELECT id, kind, title, created_at, updated_at, model, meta
                FROM conversations;
            DROP TABLE conversations;
            ALTER TABLE conversations_new RENAME TO conversations;
            CREATE INDEX conversations_updated ON conversations (updated_at);
            CREATE INDEX conversations_kind_updated ON conversations (kind, updated_at);
            COMMIT;
        """)
        problems = db.conn.execute("PRAGMA foreign_key_check").fetchall()
        if problems:
            raise RuntimeError(f"foreign keys broken after the rebuild: {problems[:3]}")
    finally:
        db.conn.execute("PRAGMA foreign_keys = ON")


@MIGRATIONS(name="0003_generation_ends")
def generation_ends(db: Database) -> None:
    """The ids that are not answer text (EOS, pad) of each generation, as JSON
    {"eos_ids": [...], "pad_id": n}: a replay draws them as the answer's end and never counts
    them (engine/metrics.py). Null for generations stored before; their readers infer it."""
    db.execute("ALTER TABLE generations ADD COLUMN ends TEXT")


@MIGRATIONS(name="0004_presets")
def presets(db: Database) -> None:
    """Named generation settings a person saved (the playground's preset picker)."""
    db.execute("""
        CREATE TABLE presets (
            name TEXT PRIMARY KEY,
            settings TEXT NOT NULL,            -- JSON {control name: value}
            updated_at TEXT NOT NULL
        )""")
