"""Everything that generates: trace types, samplers, backends, catalog, agent loop, benchmarks.
How the parts fit and where to change what: docs/ARCHITECTURE.md."""
