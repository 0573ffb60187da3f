// Canvas sizes measured once and cached, so drawing never forces a layout in the middle of a
// frame; call forgetSizes() when the window or the view changes.

const measured = new WeakMap();
let generation = 0;

export function forgetSizes() {
  generation += 1;
}

/** Bumps whenever sizes are forgotten: caches of other measures compare against it. */
export const sizeGeneration = () => generation;

/** Make the canvas's backing store match its CSS box (cached); returns [w, h]. */
export function fitCanvas(canvas, minW = 100, minH = 20) {
  let m = measured.get(canvas);
  if (!m || m.generation !== generation) {
    m = {
      generation,
      w: Math.max(minW, Math.floor(canvas.clientWidth || canvas.width)),
      h: Math.max(minH, Math.floor(canvas.clientHeight || canvas.height)),
    };
    measured.set(canvas, m);
  }
  if (canvas.width !== m.w) canvas.width = m.w;
  if (canvas.height !== m.h) canvas.height = m.h;
  return [m.w, m.h];
}

/** A cached width of any element. */
export function widthOf(el, generationKey = "w") {
  let m = measured.get(el);
  if (!m || m.generation !== generation) {
    m = { generation, [generationKey]: el.clientWidth };
    measured.set(el, m);
  }
  return m[generationKey];
}
