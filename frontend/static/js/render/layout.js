// Layout as data: where each block cell sits on the pool canvas, computed once per size and
// reused by drawing and hit testing.

/** Square cells, as large as fit `width` x `maxHeight`, with a 1 px gap when cells allow. */
export function gridLayout(numBlocks, width, maxHeight) {
  const n = Math.max(1, numBlocks);
  let pitch = Math.max(2, Math.floor(Math.sqrt((width * maxHeight) / n)));
  let cols, rows;
  for (;;) {
    cols = Math.max(1, Math.floor(width / pitch));
    rows = Math.ceil(n / cols);
    if (rows * pitch <= maxHeight || pitch <= 2) break;
    pitch -= 1;
  }
  const gap = pitch >= 5 ? 1 : 0;
  return { cols, rows, pitch, cell: pitch - gap, gap, width: cols * pitch, height: rows * pitch };
}

/** The block under canvas pixel (x, y), or -1. */
export function blockAt(layout, numBlocks, x, y) {
  const col = Math.floor(x / layout.pitch);
  const row = Math.floor(y / layout.pitch);
  if (col < 0 || row < 0 || col >= layout.cols || row >= layout.rows) return -1;
  const b = row * layout.cols + col;
  return b < numBlocks ? b : -1;
}

/** Top-left pixel of block b's cell. */
export function cellOrigin(layout, b) {
  return [(b % layout.cols) * layout.pitch, Math.floor(b / layout.cols) * layout.pitch];
}
