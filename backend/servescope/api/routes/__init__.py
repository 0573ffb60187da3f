"""One router per resource: pages, presets, sessions, traces, ws."""
