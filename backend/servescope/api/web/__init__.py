"""The HTTP and WebSocket edge: body and number limits, origin checks, the per-viewer outflow of
frames and the handling of control messages. Imports sessions and the wings below; not reports."""
