"""vLLM's OpenAI-compatible API on a live engine (`servescope serve --openai`): the live engine
whose clock follows wall time (live.py), prompt and output token counts (tokens.py), vLLM's
error JSON (errors.py), the request and response shapes (protocol.py, chunks.py), the routes
(routes.py), the app that serves them beside the explorer (app.py) and one server a port
(replicas.py)."""
