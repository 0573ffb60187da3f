import { test } from "node:test";
import assert from "node:assert/strict";
import { openSocket } from "../../frontend/static/js/transport/socket.js";
import { ConnectionLine, closedWord } from "../../frontend/static/js/ui/connection.js";

/** A WebSocket stand-in: records what was opened; the test fires its events. */
class FakeSocket {
  static made = [];
  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.listeners = {};
    FakeSocket.made.push(this);
  }
  addEventListener(kind, fn) { this.listeners[kind] = fn; }
  fire(kind, event = {}) { this.listeners[kind]?.(event); }
  send() {}
  close() {}
}

test("a socket closed for a message over the limit (1009) reconnects, asking the URL again", () => {
  FakeSocket.made = [];
  let token = null;
  const timers = [];
  const closes = [];
  openSocket(() => `/ws/sessions/${token ? `s1?token=${token}` : "new"}`,
    { onText: () => {}, onClose: (ev) => closes.push(ev.code) },
    { WebSocketImpl: FakeSocket, setTimer: (fn) => timers.push(fn) });
  FakeSocket.made[0].fire("open");
  token = "t0k"; // the first init named the session and its token
  FakeSocket.made[0].fire("close", { code: 1009 });
  assert.deepEqual(closes, [1009]);
  assert.equal(timers.length, 1);
  timers[0]();
  assert.equal(FakeSocket.made[1].url, "/ws/sessions/s1?token=t0k");
});

test("a refusal (44xx) is not retried", () => {
  FakeSocket.made = [];
  const timers = [];
  openSocket("/ws/sessions/x", { onText: () => {} },
    { WebSocketImpl: FakeSocket, setTimer: (fn) => timers.push(fn) });
  FakeSocket.made[0].fire("close", { code: 4404 });
  assert.equal(timers.length, 0);
});

test("the header says why the socket closed while the page reconnects", async () => {
  assert.match(closedWord(1009), /over the server's size limit/);
  assert.equal(closedWord(1006), "disconnected");
  const conn = { textContent: "" };
  const refused = { hidden: true, textContent: "" };
  const doc = { getElementById: (id) => (id === "conn" ? conn : refused) };
  const line = new ConnectionLine(doc, { origin: "http://h", follow: false, check: async () => ({ allowed: true }) });
  await line.closed({ code: 1009 });
  assert.match(conn.textContent, /reconnecting/);
  assert.equal(refused.hidden, true);
});
