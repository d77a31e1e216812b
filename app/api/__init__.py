"""The playground's OpenAI-compatible API (/v1), served by the same process and the same model
registry and session store as the page. `mount(demo.app, ctx, ApiOptions(...))` adds it."""

from .protocol import ApiError
from .routes import mount
from .service import ApiOptions, ChatService

__all__ = ["ApiError", "ApiOptions", "ChatService", "mount"]
