"""Playground UI (Gradio): layout, event wiring, throttling, CSS. The only package that imports gradio."""
