"""Pure functions from traces to HTML, plots, standalone replays and LaTeX."""
