// One WebSocket that reconnects with backoff and queues what is sent while it is down.
// The server keeps the session; on reconnect it sends init and keyframes again (a rejoin).
// `url` may be a function: it is asked again on every reconnect (a new session's id and token
// are known only after its first init).

const MAX_QUEUE = 32;

export function openSocket(url, { onOpen, onText, onClose }, { WebSocketImpl = globalThis.WebSocket, setTimer = setTimeout } = {}) {
  let ws = null;
  let closed = false;
  let attempts = 0;
  const queue = [];

  function connect() {
    ws = new WebSocketImpl(typeof url === "function" ? url() : url);
    ws.addEventListener("open", () => {
      const reconnected = attempts > 0;
      attempts = 0;
      queue.splice(0).forEach((t) => ws.send(t));
      onOpen?.({ reconnected });
    });
    ws.addEventListener("message", (ev) => onText(ev.data));
    ws.addEventListener("close", (ev) => {
      onClose?.(ev);
      // 44xx: the server refused (unknown session, origin, limit); retrying will not help.
      if (closed || (ev.code >= 4400 && ev.code < 4500)) return;
      attempts += 1;
      setTimer(connect, Math.min(8000, 250 * 2 ** Math.min(attempts, 5)));
    });
  }

  connect();
  return {
    send(text) {
      if (ws && ws.readyState === 1) ws.send(text);
      else if (queue.length < MAX_QUEUE) queue.push(text);
    },
    close() {
      closed = true;
      ws?.close();
    },
  };
}
