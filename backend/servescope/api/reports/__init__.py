"""What is computed over a session's run on request: exports, summaries, diagnosis, the overview
strip, the request timeline, finished requests and GET /metrics. Imports sessions and the wings
below; not web."""
