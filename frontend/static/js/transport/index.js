// The transport: a session link that hands the state layer decoded messages. `step` messages
// carry records shaped like StepRecord.to_dict(); `keyframe` messages carry ids, not indices.

import { openSocket } from "./socket.js";
import { StreamState, decodeKeyframe, loadKeyframe, unpack } from "./decode.js";
import { expandKeyframe } from "./compact.js";

export { StreamState, decodeKeyframe, loadKeyframe, unpack } from "./decode.js";

/** Decodes one session's message stream; keeps one StreamState per engine. */
export class Decoder {
  constructor() {
    this.requests = [];
    this.states = [];
  }

  decode(msg) {
    if (msg.type === "init") {
      this.requests = msg.requests;
      this.states = (msg.engines ?? [msg]).map(() => new StreamState(msg.requests));
      return msg;
    }
    // Messages already in decoded form (a test's stand-in server) pass through unchanged.
    if (msg.type === "keyframe" && msg.status !== undefined) {
      const kf = expandKeyframe(msg);
      const state = loadKeyframe(this.requests, kf);
      this.states[msg.engine] = state;
      return decodeKeyframe(state, kf);
    }
    if (msg.type === "step") {
      const engine = msg.engine ?? 0;
      const state = this.states[engine];
      const records = (msg.records ?? [msg.record]).map((p) => ("scheduled" in p ? p : state && unpack(state, p)));
      return { type: "step", v: msg.v, engine, records: records.filter(Boolean) };
    }
    return msg;
  }
}

export function wsUrl(boot, loc = globalThis.location) {
  const proto = loc.protocol === "https:" ? "wss:" : "ws:";
  const path = boot.ws_path ?? `/ws/sessions/${boot.session_id ?? "new"}${boot.follow ? "?follow=1" : ""}`;
  return `${proto}//${loc.host}${path}`;
}

/** Opens a session link: `onMessage` gets decoded messages; `send` takes plain objects. */
export function openLink(boot, { onOpen, onMessage, onClose }, options = {}) {
  const decoder = new Decoder();
  const socket = openSocket(options.url ?? (() => wsUrl(boot)), {
    onOpen,
    onClose,
    onText: (text) => {
      const msg = decoder.decode(JSON.parse(text));
      if (msg) onMessage(msg);
    },
  }, options);
  return {
    send: (msg) => socket.send(JSON.stringify({ v: 1, ...msg })),
    close: () => socket.close(),
    decoder,
  };
}
