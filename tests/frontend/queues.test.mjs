import assert from "node:assert/strict";
import test from "node:test";

import { chipEdits } from "../../frontend/static/js/render/queues.js";

// Apply the edits to a plain list the way drawLane applies them to the lane's children.
function apply(old, ids) {
  const { remove, insert } = chipEdits(old, ids);
  let list = old.filter((id) => !remove.includes(id));
  for (const [id, before] of insert) {
    list = list.filter((x) => x !== id);
    const at = before === null ? list.length : list.indexOf(before);
    assert.ok(at >= 0, `reference ${before} is in the lane`);
    list.splice(at, 0, id);
  }
  return { list, edits: remove.length + insert.length };
}

test("a finish and an admission cost one removal and one insertion", () => {
  const old = ["r1", "r2", "r3", "r4"];
  const { list, edits } = apply(old, ["r2", "r3", "r4", "r5"]);
  assert.deepEqual(list, ["r2", "r3", "r4", "r5"]);
  assert.equal(edits, 2);
});

test("an unchanged lane needs no edits", () => {
  assert.equal(apply(["a", "b"], ["a", "b"]).edits, 0);
});

test("any reordering ends in the wanted order", () => {
  const cases = [
    [["a", "b", "c"], ["c", "a", "b"]], [["a", "b", "c"], ["b", "c", "a"]],
    [["a", "b", "c"], ["x", "c", "b", "a"]], [["a", "b"], []], [[], ["a", "b"]],
    [["a", "b", "c", "d"], ["d", "x", "b", "y"]],
  ];
  for (const [old, ids] of cases) assert.deepEqual(apply(old, ids).list, ids, `${old} -> ${ids}`);
});

test("a lane holds as many chips as fit its box, with room for +N more", async () => {
  const { chipCapacity } = await import("../../frontend/static/js/render/queues.js");
  const box = { laneW: 100, laneH: 40, chipW: 30, chipH: 18, gap: 2 }; // 3 a row, 2 rows
  assert.equal(chipCapacity(box, 6), 6);
  assert.equal(chipCapacity(box, 7), 4);
  assert.equal(chipCapacity({ ...box, chipW: 0 }, 7), 60); // not laid out: the plain cap
});
