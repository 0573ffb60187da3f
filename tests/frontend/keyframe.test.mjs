import assert from "node:assert/strict";
import test from "node:test";

import { applyKeyframe } from "../../frontend/static/js/state/keyframe.js";
import { applyRecord, createRun } from "../../frontend/static/js/state/reduce.js";
import { INIT, RECORDS } from "./scenario.mjs";

test("a keyframe rebuilds the same blocks as replaying the records", () => {
  const replayed = createRun(INIT);
  for (const r of RECORDS.slice(0, 3)) applyRecord(replayed, r);
  const jumped = createRun(INIT);
  for (const r of RECORDS) applyRecord(jumped, r); // somewhere else entirely
  applyKeyframe(jumped, {
    step: 2, tables: { a: [1, 2, 3], b: [1, 4] }, cached_blocks: [1, 2],
    requests: {
      a: { num_computed_tokens: 11, num_output_tokens: 2, status: "running" },
      b: { num_computed_tokens: 7, num_output_tokens: 2, status: "running" },
    },
    running: ["a", "b"], waiting: [], record: RECORDS[2],
  });
  for (const k of ["owner", "ref", "fill", "cached"]) {
    assert.deepEqual([...jumped[k]], [...replayed[k]], k);
  }
  assert.deepEqual([...jumped.tables], [...replayed.tables]);
  assert.equal(jumped.cursor, 2);
  assert.equal(jumped.reqs[1].status, "running");
});
