"""The agent world: WebMCP-style tools over a seeded shop / back-office state, tasks, oracle, grader."""
