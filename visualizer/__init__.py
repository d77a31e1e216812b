"""Pure functions from traces to HTML, plots, standalone replays and LaTeX."""

from .cells import decision_matrix
from .code_export import extract_code, fenced_code, sandboxed_preview
from .grid import GRID_CSS, render_grid
from .latex import latex_document, latex_escape
from .pieces import visible_piece
from .plots import commits_per_forward, decision_heatmap, race_plot, turn_race_plot
from .replay import standalone_replay_html

__all__ = [
    "GRID_CSS", "commits_per_forward", "decision_heatmap", "decision_matrix", "extract_code",
    "fenced_code",
    "latex_document", "latex_escape", "race_plot", "render_grid", "sandboxed_preview",
    "standalone_replay_html", "turn_race_plot", "visible_piece",
]
