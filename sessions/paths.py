"""Where the session database lives by default: the per-user data folder (XDG)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

DB_PATH_ENV = "DIFFUSION_PLAYGROUND_DB"


def default_db_path(environ: Mapping[str, str] | None = None) -> Path:
    """$DIFFUSION_PLAYGROUND_DB if set, else $XDG_DATA_HOME (or ~/.local/share)/diffusion-playground/sessions.db.

    Only computes the path; SessionStore creates the folder when it opens the file.
    """
    env = os.environ if environ is None else environ
    if env.get(DB_PATH_ENV):
        return Path(env[DB_PATH_ENV]).expanduser()
    base = Path(env["XDG_DATA_HOME"]).expanduser() if env.get("XDG_DATA_HOME") else Path.home() / ".local" / "share"
    return base / "diffusion-playground" / "sessions.db"
