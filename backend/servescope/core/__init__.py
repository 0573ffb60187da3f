"""The simulation core: a pure function of (config, requests, seed). Stdlib and numpy only."""
