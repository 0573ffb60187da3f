// Decodes a packed stream the server wrote (argv[2], JSON) with the browser's transport and
// checks every record and keyframe against the server's own to_dict() form.
import { readFileSync } from "node:fs";
import { deepStrictEqual } from "node:assert/strict";
import { Decoder } from "../../frontend/static/js/transport/index.js";

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
