// The lesson bar: the Lesson playback button, one "next" button per event kind (with its key),
// the kinds lesson playback pauses at, and event markers on the scrubber and on the charts.

import { EVENT_KINDS } from "../state/events.js";

const MAX_MARKS = 400;
const colourOf = (kind) => EVENT_KINDS.find((k) => k.kind === kind)?.colour ?? "#999";

function button(doc, text, title, onClick) {
  const b = doc.createElement("button");
  b.type = "button";
  b.textContent = text;
  b.title = title;
  b.addEventListener("click", onClick);
  return b;
}

/** Build the bar's buttons and pause-at choices; `lesson` is a ui/lesson.js Lesson. */
export function bindLessonBar(doc, lesson, drive) {
  const bar = doc.getElementById("lesson-bar");
  const play = button(doc, "Lesson (Shift+L)", "lesson playback: a few steps a second, captions held, pauses at the ticked events", () => drive(() => lesson.toggle()));
  play.id = "btn-lesson";
  const tour = button(doc, "Tour (T)", "a guided tour of this run: stops at each concept's first occurrence", () => drive(() => lesson.startTour()));
  tour.id = "btn-tour";
  const next = EVENT_KINDS.map((k) => {
    const b = button(doc, `${k.label} (${k.key.toUpperCase()})`, `jump to the next ${k.label}`, () => drive(() => lesson.next(k.kind)));
    b.dataset.event = k.kind;
    b.style.borderBottom = `3px solid ${k.colour}`;
    return b;
  });
  const pause = doc.createElement("details");
  pause.innerHTML = "<summary>pause at</summary>";
  for (const k of EVENT_KINDS) {
    const label = doc.createElement("label");
    const box = doc.createElement("input");
    box.type = "checkbox";
    box.checked = lesson.pauseAt.has(k.kind);
    box.addEventListener("change", () => (box.checked ? lesson.pauseAt.add(k.kind) : lesson.pauseAt.delete(k.kind)));
    label.append(box, ` ${k.label}`);
    pause.append(label);
  }
  const nextLabel = doc.createElement("span");
  nextLabel.textContent = "next:";
  bar.append(tour, play, nextLabel, ...next, pause);
}

/** The lesson note, the Lesson button's state and the markers on the scrubber. */
export function drawLessonBar(doc, lesson, pane) {
  const note = doc.getElementById("lesson-note");
  const text = lesson.note ?? "";
  if (note.dataset.text !== text || note.dataset.anchor !== (lesson.anchor ?? "")) {
    note.dataset.text = text;
    note.dataset.anchor = lesson.anchor ?? "";
    note.textContent = text;
    if (lesson.anchor) {
      const a = doc.createElement("a");
      a.href = `/explain#${lesson.anchor}`;
      a.target = "_blank";
      a.rel = "noopener";
      a.textContent = " Read more.";
      note.append(a);
    }
  }
  note.hidden = !text;
  // a follower's button shows whether the driver's lesson playback runs
  doc.getElementById("btn-lesson")?.setAttribute("aria-pressed", String(lesson.on || !!lesson.following?.on));
  const marks = doc.getElementById("event-marks");
  const total = Math.max(1, pane?.history.length ?? 1, pane?.init.num_records ?? 0);
  const key = `${lesson.events.length}:${total}`;
  if (marks.dataset.key === key) return;
  marks.dataset.key = key;
  const frag = doc.createDocumentFragment();
  for (const e of lesson.events.slice(0, MAX_MARKS)) {
    const m = doc.createElement("span");
    m.className = "event-mark";
    m.dataset.kind = e.kind;
    m.style.left = `${(100 * Math.max(0, e.iter)) / Math.max(1, total - 1)}%`;
    m.style.background = colourOf(e.kind);
    frag.appendChild(m);
  }
  marks.replaceChildren(frag);
}

/** Ticks over the request timeline at each event's time; `xOf` is the timeline's time axis. */
export function drawTimelineMarks(doc, events, xOf) {
  const box = doc.getElementById("timeline-marks");
  if (!box || !xOf) return;
  const key = `${events.length}:${xOf(0)}:${xOf(1)}`;
  if (box.dataset.key === key) return;
  box.dataset.key = key;
  const frag = doc.createDocumentFragment();
  const step = Math.max(1, Math.ceil(events.length / MAX_MARKS));
  for (let i = 0; i < events.length; i += step) {
    const m = doc.createElement("span");
    m.className = "event-mark";
    m.dataset.kind = events[i].kind;
    m.style.left = `${Math.round(xOf(events[i].t))}px`;
    m.style.background = colourOf(events[i].kind);
    frag.appendChild(m);
  }
  box.replaceChildren(frag);
}

/** A uPlot plugin: a tick at the top of the plot for each event, in its kind's colour. */
export function eventMarksPlugin(events) {
  return {
    hooks: {
      draw: (u) => {
        const { ctx, bbox } = u;
        const list = events();
        const step = Math.max(1, Math.ceil(list.length / MAX_MARKS));
        ctx.save();
        for (let i = 0; i < list.length; i += step) {
          const x = u.valToPos(list[i].t, "x", true);
          if (!(x >= bbox.left && x <= bbox.left + bbox.width)) continue;
          ctx.fillStyle = colourOf(list[i].kind);
          ctx.fillRect(Math.round(x) - 1, bbox.top, 3, Math.max(6, bbox.height * 0.06));
        }
        ctx.restore();
      },
    },
  };
}
