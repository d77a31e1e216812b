"""Agents acting on web pages through WebMCP: a driver that opens pages in Chromium (playwright),
lists the tools each page registered and runs calls in the page (driver.py, polyfill.js), and the
venue that puts an agent episode's world behind the web apps (venue.py)."""
