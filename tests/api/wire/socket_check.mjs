// The transport's socket with a fake WebSocket: queues while down, reconnects with backoff,
// reports the rejoin, gives up on 44xx refusals, and decodes messages for the state layer.
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { openSocket } from "../../../frontend/static/js/transport/socket.js";
import { openLink, wsUrl } from "../../../frontend/static/js/transport/index.js";

class FakeWS {
  static all = [];
  constructor(url) { this.url = url; this.sent = []; this.readyState = 0; this.l = {}; FakeWS.all.push(this); }
  addEventListener(kind, fn) { (this.l[kind] ??= []).push(fn); }
  emit(kind, ev = {}) { (this.l[kind] ?? []).forEach((fn) => fn(ev)); }
  open() { this.readyState = 1; this.emit("open"); }
  send(t) { this.sent.push(t); }
  close() { this.readyState = 3; }
  drop(code = 1006) { this.readyState = 3; this.emit("close", { code }); }
}
const timers = [];
const setTimer = (fn, ms) => timers.push([fn, ms]);

const opens = [];
const texts = [];
const s = openSocket("ws://x/ws/sessions/a", { onOpen: (i) => opens.push(i), onText: (t) => texts.push(t) },
  { WebSocketImpl: FakeWS, setTimer });
s.send("early");
FakeWS.all[0].open();
deepStrictEqual(FakeWS.all[0].sent, ["early"]);
FakeWS.all[0].drop();
strictEqual(timers.length, 1);
s.send("while down");
timers.shift()[0]();
strictEqual(FakeWS.all.length, 2);
FakeWS.all[1].open();
deepStrictEqual(opens, [{ reconnected: false }, { reconnected: true }]);
deepStrictEqual(FakeWS.all[1].sent, ["while down"]);
FakeWS.all[1].drop(4404);
strictEqual(timers.length, 0); // refused: no retry

// A link decodes packed frames into to_dict()-shaped records.
const got = [];
const link = openLink({ ws_path: "/ws/sessions/b" }, { onMessage: (m) => got.push(m) },
  { WebSocketImpl: FakeWS, setTimer, url: "ws://x/ws/sessions/b" });
const ws = FakeWS.all.at(-1);
ws.open();
const requests = [{ id: "a", prompt_len: 3, output_len: 2 }];
const kf = { type: "keyframe", v: 1, engine: 0, iter: -1, step: 0, time_s: 0, status: [0],
  num_computed_tokens: [0], num_output_tokens: [0], num_cached_tokens: [0], num_preemptions: [0],
  tables: [], block_owner: [null, null], block_ref_count: [0, 0], cached_blocks: [], running: [],
  waiting: [], record: null };
for (const m of [{ type: "init", v: 1, engines: [{}], requests }, kf,
  { type: "step", v: 1, engine: 0, records: [{ i: 0, s: 0, t: 0, ms: 5, nf: 0, a: [0], nw: [0], nb: [0, 1, 1],
    nu: 1, tb: 8, mx: 4, kw: {} }] }]) {
  ws.emit("message", { data: JSON.stringify(m) });
}
const rec = got[2].records[0];
deepStrictEqual(rec.scheduled, [{ id: "a", n: 3, start: 0, sampled: true, kind: "prefill" }]);
deepStrictEqual(rec.running, ["a"]);
deepStrictEqual(rec.new_blocks, { a: [1] });
strictEqual(rec.kv_usage, 1);
strictEqual(got[1].requests.a.status, "pending");
link.send({ type: "play", speed: 2 });
deepStrictEqual(JSON.parse(ws.sent[0]), { v: 1, type: "play", speed: 2 });
strictEqual(wsUrl({ session_id: "z", follow: true }, { protocol: "https:", host: "h" }), "wss://h/ws/sessions/z?follow=1");
console.log("ok");
