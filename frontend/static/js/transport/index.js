// The transport: a session link that hands the state layer decoded messages. `step` messages
// carry records shaped like StepRecord.to_dict(); `keyframe` messages carry ids, not indices.
// `init` says how many requests the session runs; their list comes in pages over REST
// (transport/requests.js), each handed on as a `requests` message {offset, total, requests}.
// A keyframe or record that names a request whose page is not in yet waits, with everything
// after it, until that page arrives.

import { openSocket } from "./socket.js";
import { MissingRequests, StreamState, decodeKeyframe, loadKeyframe, resolveFinal, unpack } from "./decode.js";
import { expandKeyframe } from "./compact.js";
import { loadRequests } from "./requests.js";

export { StreamState, decodeKeyframe, loadKeyframe, unpack } from "./decode.js";

/** Decodes one session's message stream; keeps one StreamState per engine. */
export class Decoder {
  constructor() {
    this.requests = [];
    this.total = 0;
    this.states = [];
    this.queue = []; // messages waiting for a page of the request list
  }

  get complete() {
    return this.requests.length >= this.total;
  }

  /** The decoded messages ready now: `msg`, unless it (or one before it) must wait. */
  push(msg) {
    if (msg.type === "init") {
      this.queue = [];
      return [this.decode(msg)];
    }
    this.queue.push(msg);
    return this.drain();
  }

  /** A page of the request list: the `requests` message, then what waited for it. */
  addRequests(page) {
    if (page.offset !== this.requests.length || !page.requests?.length) return [];
    this.requests.push(...page.requests);
    for (const state of this.states) state?.addRequests(page.requests);
    return [{ type: "requests", offset: page.offset, total: page.total, requests: page.requests },
      ...this.drain()];
  }

  drain() {
    const out = [];
    while (this.queue.length) {
      try {
        out.push(this.decode(this.queue[0]));
        this.queue.shift();
      } catch (err) {
        if (!(err instanceof MissingRequests)) throw err;
        if (err.decoded) out.push(err.decoded); // a frame's records before the missing one
        if (err.rest) this.queue[0] = err.rest;
        break;
      }
    }
    return out.filter(Boolean);
  }

  /** One message decoded now; MissingRequests when it names a request not loaded yet. */
  decode(msg) {
    if (msg.type === "init") {
      this.requests = msg.requests ? msg.requests.slice() : []; // a stand-in server's whole list
      this.total = msg.num_requests ?? this.requests.length;
      this.states = (msg.engines ?? [msg]).map(() => new StreamState(this.requests, this.total));
      return msg;
    }
    // Messages already in decoded form (a test's stand-in server) pass through unchanged.
    if (msg.type === "keyframe" && msg.status !== undefined) {
      const kf = resolveFinal(this.requests, expandKeyframe(msg));
      const state = loadKeyframe(this.requests, kf, this.total);
      this.states[msg.engine] = state;
      return decodeKeyframe(state, kf);
    }
    if (msg.type === "step") return this.decodeStep(msg);
    return msg;
  }

  decodeStep(msg) {
    const engine = msg.engine ?? 0;
    const state = this.states[engine];
    const packed = msg.records ?? [msg.record];
    const records = [];
    for (const [k, p] of packed.entries()) {
      try {
        records.push("scheduled" in p ? p : state && unpack(state, p));
      } catch (err) {
        if (err instanceof MissingRequests && k > 0) {
          err.decoded = { type: "step", v: msg.v, engine, records: records.filter(Boolean) };
          err.rest = { ...msg, record: undefined, records: packed.slice(k) };
        }
        throw err;
      }
    }
    return { type: "step", v: msg.v, engine, records: records.filter(Boolean) };
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
  const deliver = (msgs) => msgs.forEach((m) => onMessage(m));
  let generation = 0; // bumps on every init: pages of an older list are dropped
  const socket = openSocket(options.url ?? (() => wsUrl(boot)), {
    onOpen,
    onClose,
    onText: (text) => {
      const msg = JSON.parse(text);
      deliver(decoder.push(msg));
      if (msg.type !== "init") return;
      const mine = ++generation;
      if (decoder.complete) return;
      loadRequests(msg.session_id, decoder.total, {
        onPage: (page) => deliver(decoder.addRequests(page)),
        current: () => mine === generation,
      }, options);
    },
  }, options);
  return {
    send: (msg) => socket.send(JSON.stringify({ v: 1, ...msg })),
    close: () => socket.close(),
    decoder,
  };
}
