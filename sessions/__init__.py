"""The local session store (sqlite-utils): conversations, turns, generations, frames, tool calls."""

from .fts import fts_literal_query
from .paths import DB_PATH_ENV, default_db_path
from .records import TurnRecord
from .store import KINDS, ConversationNotFound, SessionStore, StoreError

__all__ = ["DB_PATH_ENV", "KINDS", "ConversationNotFound", "SessionStore", "StoreError", "default_db_path",
           "TurnRecord", "fts_literal_query"]
