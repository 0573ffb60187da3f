"""The FastAPI server: sessions that stream step records over WebSockets, the wire protocol,
REST for presets, uploads, runs and scenarios, and the SQLite store."""
