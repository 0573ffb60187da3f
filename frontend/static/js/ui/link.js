// Interim socket link until transport/ lands: one WebSocket per pane, JSON messages both ways,
// messages queued until the socket opens.

export function openLink(boot, { onOpen, onMessage, onClose }) {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const path = boot.ws_path ?? `/ws/sessions/${boot.session_id ?? "new"}`;
  const ws = new WebSocket(`${proto}//${location.host}${path}`);
  const queue = [];
  ws.addEventListener("open", () => {
    queue.splice(0).forEach((m) => ws.send(m));
    onOpen?.();
  });
  ws.addEventListener("message", (ev) => onMessage(JSON.parse(ev.data)));
  ws.addEventListener("close", () => onClose?.());
  return {
    send(msg) {
      const text = JSON.stringify({ v: 1, ...msg });
      if (ws.readyState === WebSocket.OPEN) ws.send(text);
      else queue.push(text);
    },
    close: () => ws.close(),
  };
}
