"""Everything that generates: trace types, samplers, backends, catalog, agent loop, benchmarks."""
