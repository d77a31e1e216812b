"""The page's CSS: the visualizer's token grid plus the app's panels and tables."""

from visualizer import GRID_CSS

APP_CSS = """
.dp-panel { min-height: 140px; padding: .6rem .7rem; border: 1px solid rgba(127,127,127,.3); border-radius: 8px; }
.dp-live-head { font-size: 12px; font-weight: 600; margin-bottom: .35rem; opacity: .9; }
.dp-panel[data-mode="live"] .dp-live-head { color: #d97706; }
.dp-empty { opacity: .65; font-size: 13px; padding: .4rem 0; }
.dp-table { border-collapse: collapse; font-size: 13px; width: 100%; }
.dp-table th, .dp-table td { text-align: left; padding: 3px 8px; border-bottom: 1px solid rgba(127,127,127,.2);
  vertical-align: top; }
.dp-table code { white-space: pre-wrap; word-break: break-word; font-size: 12px; }
.dp-transcript pre { white-space: pre-wrap; word-break: break-word; margin: .2rem 0 .6rem; font-size: 13px; }
.dp-role { font-size: 12px; font-weight: 600; opacity: .8; }
.dp-meta { font-size: 12px; opacity: .7; margin-bottom: .5rem; }
.dp-call { font-size: 12px; margin: -.3rem 0 .6rem; }
.dp-notice { border-left: 4px solid #d97706; padding-left: .6rem; }
"""

CSS = GRID_CSS + APP_CSS
