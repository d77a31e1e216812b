"""The page's CSS: the visualizer's token grid plus the app's panels and tables."""

from visualizer import GRID_CSS
from visualizer.marks import MARK_CSS

from .world_page import FRAME_HEIGHT_PX

APP_CSS = """
.dp-panel { min-height: 140px; padding: .6rem .7rem; border: 1px solid rgba(127,127,127,.3); border-radius: 8px; }
.dp-live-head { font-size: 12px; font-weight: 600; margin-bottom: .35rem; }
.dp-panel[data-mode="live"] .dp-live-head { color: #92400e; }
.dark .dp-panel[data-mode="live"] .dp-live-head { color: #fcd34d; }
.dp-empty { font-size: 13px; padding: .4rem 0; }
.dp-table { border-collapse: collapse; font-size: 13px; width: 100%; }
.dp-table th, .dp-table td { text-align: left; padding: 3px 8px; border-bottom: 1px solid rgba(127,127,127,.2);
  vertical-align: top; }
.dp-table code { white-space: pre-wrap; word-break: break-word; font-size: 12px; }
.dp-transcript pre { white-space: pre-wrap; word-break: break-word; margin: .2rem 0 .6rem; font-size: 13px; }
.dp-role { font-size: 12px; font-weight: 600; }
.dp-meta { font-size: 12px; margin-bottom: .5rem; }
.dp-call { font-size: 12px; margin: -.3rem 0 .6rem; }
.dp-notice { border-left: 4px solid #d97706; padding-left: .6rem; }
/* Compare: a finished side's answer as text, under its grid */
.dp-answer-text { white-space: pre-wrap; word-break: break-word; font-size: 14px; margin-top: .5rem;
  padding: .4rem .6rem; border-left: 3px solid rgba(127,127,127,.5); }
/* placeholders readable at >= 4.5:1 (Gradio's own grey was about 1.9:1 on white) */
textarea::placeholder, input::placeholder { color: #5b6270; opacity: 1; }
.dark textarea::placeholder, .dark input::placeholder { color: #a9afba; }
/* a fixed height: a long answer scrolls inside its panel instead of pushing the settings down */
#live-panel .dp-panel, #agent-panel .dp-panel, #compare-diffusion-panel .dp-panel,
#compare-baseline-panel .dp-panel, #replay-panel .dp-panel { height: 360px; overflow-y: auto; box-sizing: border-box; }
/* the legend stays in view at the panel's foot however long the grid is */
.dp-panel .dp-legend { position: sticky; bottom: -.6rem; padding: .35rem 0 .1rem;
  background: var(--block-background-fill, #fff); }
/* the panels' persistent live line (app/page_script.py): heard, not seen */
.dp-sr-status { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%);
  white-space: nowrap; }
.dp-card { font-size: 13px; }
/* the tab's world as its web pages (app/world_page.py): the frame takes the column's width */
.dp-world-head { font-size: 12px; margin: 0 0 .35rem; }
/* the same height before the frame arrives (the page's load event) as after: nothing below jumps */
.dp-world-page { min-height: calc(__FRAME__px + 3.4rem); }
.dp-world-page iframe { width: 100%; border: 1px solid rgba(127,127,127,.35); border-radius: 8px; background: #fff;
  box-sizing: border-box; }
.dp-card p { margin: .15rem 0; }
"""

# Text contrast >= 4.5:1 (WCAG AA) for Gradio's subdued text (info lines, slider ends, footer):
# its default light-theme grey (#bbbbc2) reads at 1.9:1 on white.
CONTRAST_CSS = """
.gradio-container { --body-text-color-subdued: #52525b; --block-info-text-color: #52525b; }
/* the theme's orange and red under white or on white text read at 2.8-3.8:1; one shade darker reads >= 4.5:1 */
body .gradio-container { --color-accent: #c2410c; --button-primary-background-fill: #c2410c;
  --button-primary-background-fill-hover: #9a3412; --button-cancel-background-fill: #b91c1c;
  --button-cancel-background-fill-hover: #991b1b; }
.gradio-container button[role="tab"].selected { color: #c2410c; }
.dark .gradio-container { --body-text-color-subdued: #a1a1aa; --block-info-text-color: #a1a1aa; }
.gradio-container .info-text, .gradio-container .min_value, .gradio-container .max_value { color: #52525b; }
.dark .gradio-container .info-text, .dark .gradio-container .min_value, .dark .gradio-container .max_value {
  color: #a1a1aa; }
footer, footer * { color: #52525b !important; }
.dark footer, .dark footer * { color: #a1a1aa !important; }
.dark .gradio-container button[role="tab"].selected { color: #fb923c; }
/* the Chatbot's code highlighting (a structured answer is a JSON block): its light-theme token colours
   read at 2.1-3.5:1; these read >= 5:1 on the code block in both themes, under the 0.8 opacity Gradio
   gives a bot message */
.gradio-container #chatbot pre .token.property { color: #7c2d12; }
.gradio-container #chatbot pre .token.string { color: #14532d; }
.gradio-container #chatbot pre .token.number, .gradio-container #chatbot pre .token.boolean,
.gradio-container #chatbot pre .token.null, .gradio-container #chatbot pre .token.keyword { color: #1e3a8a; }
.gradio-container #chatbot pre .token.punctuation, .gradio-container #chatbot pre .token.operator { color: #27272a; }
.dark .gradio-container #chatbot pre .token.property { color: #fdba74; }
.dark .gradio-container #chatbot pre .token.string { color: #86efac; }
.dark .gradio-container #chatbot pre .token.number, .dark .gradio-container #chatbot pre .token.boolean,
.dark .gradio-container #chatbot pre .token.null, .dark .gradio-container #chatbot pre .token.keyword {
  color: #93c5fd; }
.dark .gradio-container #chatbot pre .token.punctuation, .dark .gradio-container #chatbot pre .token.operator {
  color: #d4d4d8; }
/* an answer's versions (app/chat_tree.py): the arrows are buttons to the eye, 28 px wide to hit */
.gradio-container #chatbot .dp-versions { white-space: nowrap; }
.gradio-container #chatbot .dp-versions a { display: inline-block; min-width: 28px; padding: 0 6px;
  text-align: center; text-decoration: none; border: 1px solid var(--border-color-primary); border-radius: 6px; }
/* the links to the world's pages: Gradio's link blue reads at 4.05:1 in the dark theme */
.gradio-container .dp-world-head a { color: #1d4ed8; }
.dark .gradio-container .dp-world-head a { color: #93c5fd; }
"""

# Plotly draws its own white paper; the figures ask for a transparent one (visualizer/plots.py), so a
# plot sits on the block's background in either theme; in dark mode its text and lines turn light.
PLOT_CSS = """
.dark .js-plotly-plot .main-svg text { fill: #e4e4e7 !important; }
.dark .js-plotly-plot .gridlayer path, .dark .js-plotly-plot .zerolinelayer path {
  stroke: rgba(228,228,231,.18) !important; }
.dark .js-plotly-plot .legend .bg, .dark .js-plotly-plot .infolayer .legend rect.bg { fill: transparent !important; }
"""

# At a phone's width: the message box and its buttons stay on the first screen (the Chatbot's height
# follows the window, app/chat.py), and pickers take the whole row instead of a cut-off half.
NARROW_CSS = """
@media (max-width: 640px) {
  .gradio-container h1 { font-size: 1.35rem; margin-bottom: .2rem; }
  #intro p { font-size: 13px; margin: 0; }
}
"""

APP_CSS = APP_CSS.replace("__FRAME__", str(FRAME_HEIGHT_PX))
CSS = GRID_CSS + MARK_CSS + APP_CSS + CONTRAST_CSS + PLOT_CSS + NARROW_CSS
