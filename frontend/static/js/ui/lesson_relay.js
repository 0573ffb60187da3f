// The driver's lesson note to its followers: each time the page's Lesson changes what it says,
// a driver's page sends it to the session (a `lesson` message), which relays it to every
// follower (docs/protocol.md); the same state is not sent twice.

const NOTE_CHARS = 2000; // the protocol's longest note

/** `send(msg)`: the socket's; `driving()`: whether this page drives the session. Returns
 * relay(lesson), to call whenever the lesson changed. */
export function createLessonRelay(send, driving) {
  let last = null;
  return (lesson) => {
    if (!driving()) return;
    const state = lesson.shared();
    const key = JSON.stringify(state);
    if (key === last) return;
    last = key;
    const note = state.note == null ? null : state.note.slice(0, NOTE_CHARS);
    send({ type: "lesson", ...state, note });
  };
}
