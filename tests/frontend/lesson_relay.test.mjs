import assert from "node:assert/strict";
import test from "node:test";

import { Lesson } from "../../frontend/static/js/ui/lesson.js";
import { createLessonRelay } from "../../frontend/static/js/ui/lesson_relay.js";

function pages() {
  const sent = [];
  const driving = { now: true };
  let relay = () => {};
  const pane = { run: { record: { iter: 4, step: 4 }, reqs: [], index: new Map() } };
  const driver = new Lesson({ send: (m) => sent.push(m), lead: () => pane, changed: () => relay(driver), setTimer: () => {} });
  relay = createLessonRelay((m) => sent.push(m), () => driving.now);
  const follower = new Lesson({ send: () => assert.fail("a follower's lesson sends nothing"), lead: () => pane, changed: () => {} });
  return { sent, driving, driver, follower };
}

test("the driver's tour note goes to the session once, and a follower shows it", () => {
  const { sent, driver, follower } = pages();
  driver.startTour();
  const notes = sent.filter((m) => m.type === "lesson");
  assert.equal(notes.length, 1);
  assert.equal(notes[0].tour, true);
  assert.match(notes[0].note, /./);
  driver.changed(); // nothing new to say: nothing sent
  assert.equal(sent.filter((m) => m.type === "lesson").length, 1);
  follower.follow(notes[0]);
  assert.equal(follower.note, driver.note);
  assert.equal(follower.anchor, driver.anchor);
  driver.toggle(); // the tour plays on: the room reads that too
  const last = sent.filter((m) => m.type === "lesson").at(-1);
  assert.deepEqual([last.on, last.note], [true, "Tour: playing to the next stop…"]);
});

test("a follower's page relays nothing", () => {
  const { sent, driving, driver } = pages();
  driving.now = false;
  driver.startTour();
  assert.equal(sent.filter((m) => m.type === "lesson").length, 0);
});
