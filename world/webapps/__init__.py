"""The agent world as two web apps a person can use and an agent can drive through WebMCP: the
shop (/apps/shop/) and the office (/apps/office/). Plain HTML, CSS and JS in `pages/`; their state
lives on the server in a `World` per session, changed only by the registry's tool functions
(world/tools.py), so the oracle and the grader stay the one source of truth."""
