// Canvas sizes measured once and cached, so drawing never forces a layout in the middle of a
// frame; call forgetSizes() when the window or the view changes.

const measured = new WeakMap();
let generation = 0;

export function forgetSizes() {
  generation += 1;
}

/** Bumps whenever sizes are forgotten: caches of other measures compare against it. */
export const sizeGeneration = () => generation;

/** Make the canvas's backing store its CSS box in device pixels (cached), so what is drawn is
 * never stretched, and each axis is scaled alike; returns [w, h, ratio] (device pixels, and
 * device pixels per CSS pixel). The CSS must size the canvas (width and height), not its
 * backing store. */
export function fitCanvas(canvas, minW = 1, minH = 1) {
  let m = measured.get(canvas);
  if (!m || m.generation !== generation) {
    const ratio = canvas.ownerDocument?.defaultView?.devicePixelRatio || 1;
    m = {
      generation, ratio,
      w: Math.round(ratio * Math.max(minW, canvas.clientWidth || canvas.width / ratio)),
      h: Math.round(ratio * Math.max(minH, canvas.clientHeight || canvas.height / ratio)),
    };
    measured.set(canvas, m);
  }
  if (canvas.width !== m.w) canvas.width = m.w;
  if (canvas.height !== m.h) canvas.height = m.h;
  return [m.w, m.h, m.ratio];
}

/** A cached width of any element. */
export function widthOf(el, generationKey = "w") {
  return measure(el, generationKey, () => el.clientWidth);
}

/** A cached [clientWidth, clientHeight] of any element. */
export function boxOf(el) {
  return measure(el, "box", () => [el.clientWidth, el.clientHeight]);
}

function measure(el, key, read) {
  let m = measured.get(el);
  if (!m || m.generation !== generation) measured.set(el, (m = { generation }));
  if (!(key in m)) m[key] = read();
  return m[key];
}
