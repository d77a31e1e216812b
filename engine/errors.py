"""The engine's user-facing error types. Each message is a sentence for the person who chose
the setting or the model; callers show it as it is (no traceback), the app and the API alike."""

from __future__ import annotations


class ConfigError(ValueError):
    """A setting a person chose that cannot work; the message is a sentence for them."""


class ContextFull(ConfigError):
    """The prompt (with the generation length) does not fit in the model's context. An agent loop
    whose transcript grew past it is out of budget, which is not the same as a setting that can
    never work (those stay plain ConfigErrors and reach the person as they are)."""


class BackendError(RuntimeError):
    """A model could not be loaded or run; the message is a sentence for a person."""
