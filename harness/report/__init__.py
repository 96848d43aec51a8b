"""Report stage: metrics.json / metrics.md / per_query.json / runinfo.json, and --compare."""
