// Decodes a packed stream the server wrote (argv[2], JSON) with the browser's transport and
// checks every record and keyframe against the server's own to_dict() form.
import { readFileSync } from "node:fs";
import { deepStrictEqual } from "node:assert/strict";
import { Decoder } from "../../../frontend/static/js/transport/index.js";

const fx = JSON.parse(readFileSync(process.argv[2], "utf8"));
let checked = 0;
for (const [at, kf] of fx.keyframes) {
  const d = new Decoder();
  d.decode({ type: "init", v: 1, engines: [{}], requests: fx.requests });
  const decodedKf = d.decode(kf);
  deepStrictEqual(decodedKf.requests, fx.kf_requests[String(at)]);
  const blocks = fx.kf_blocks[String(at)];
  for (const name of ["block_owner", "block_ref_count", "cached_blocks", "tables"]) {
    deepStrictEqual(decodedKf[name], blocks[name], name);
  }
  const got = d.decode({ type: "step", v: 1, engine: 0, records: fx.packed.slice(at + 1) }).records;
  deepStrictEqual(got, fx.records.slice(at + 1));
  checked += got.length;
}
console.log(`ok ${checked}`);

// The request list in pages (init carries only num_requests): a decoder holds back what names
// a request whose page has not arrived, and gives the same records once the pages are in.
const PAGE = 5;
const pager = new Decoder();
const loaded = new Set();
const out = [];
let heldBack = 0;
const take = (msgs) => {
  for (const m of msgs) {
    if (m.type === "requests") m.requests.forEach((r) => loaded.add(r.id));
    for (const rec of m.records ?? []) {
      for (const id of [...rec.arrivals, ...rec.running, ...rec.waiting]) {
        if (!loaded.has(id)) throw new Error(`record ${rec.iter} names ${id} before its page`);
      }
    }
    out.push(m);
  }
};
take(pager.push({ type: "init", v: 1, engines: [{}], num_requests: fx.requests.length }));
let offset = 0;
const nextPage = () => {
  if (offset >= fx.requests.length) return;
  take(pager.addRequests({ total: fx.requests.length, offset, requests: fx.requests.slice(offset, offset + PAGE) }));
  offset += PAGE;
};
const [, first] = fx.keyframes[0];
const messages = [first];
for (let k = 0; k < fx.packed.length; k += 10) {
  messages.push({ type: "step", v: 1, engine: 0, records: fx.packed.slice(k, k + 10) });
}
messages.forEach((m, k) => {
  const got = pager.push(m);
  if (!got.length) heldBack += 1;
  take(got);
  if (k % 3 === 2) nextPage(); // pages come slower than frames
});
while (offset < fx.requests.length) nextPage();
if (fx.requests.length > PAGE && heldBack === 0) throw new Error("nothing waited for a page");
deepStrictEqual(out.filter((m) => m.type === "step").flatMap((m) => m.records), fx.records);
deepStrictEqual(out.filter((m) => m.type === "requests").flatMap((m) => m.requests), fx.requests);
// a keyframe late in the run waits for the pages of every request it names
const [lastAt, lastKf] = fx.keyframes[fx.keyframes.length - 1];
const late = new Decoder();
late.push({ type: "init", v: 1, engines: [{}], num_requests: fx.requests.length });
let decodedKf = late.push(lastKf);
for (let k = 0; !decodedKf.length && k < fx.requests.length; k += PAGE) {
  decodedKf = late.addRequests({ total: fx.requests.length, offset: k, requests: fx.requests.slice(k, k + PAGE) })
    .filter((m) => m.type === "keyframe");
}
const want = Object.entries(fx.kf_requests[String(lastAt)]).filter(([, c]) => c.status !== "pending");
if (!want.length || late.requests.length < want.length) throw new Error("the late keyframe named no request");
deepStrictEqual(Object.entries(decodedKf[0].requests).filter(([, c]) => c.status !== "pending"), want);
