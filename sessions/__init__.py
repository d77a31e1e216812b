"""The local session store (sqlite-utils): conversations, turns, generations, frames, tool calls."""
