"""Built-in scenarios: presets, the lesson's exercises, the synthetic workloads a session runs,
and the re-simulation checks behind diagnosis."""
