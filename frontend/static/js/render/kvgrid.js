// The block pool on a canvas: one cell per physical KV block, coloured by owning request, filled
// from the bottom by how many of its token slots hold state, with marks for shared (ref > 1)
// and prefix-cached blocks and the null block. Only changed cells are repainted.
//
//   cell:  +------+  top-left dot: shared (ref count > 1)
//          |.    ^|  top-right notch: holds a prefix-cache hash
//          |######|  solid part: filled token slots; pale part: empty slots
//          +------+  free cached block: pale tint of its last owner
// A block held by a placeholder (ids "~...": in use, request unknown) is one neutral colour.

import { blockAt, cellOrigin, gridLayout } from "./layout.js";
import { packedFor, rgbFor } from "../state/palette.js";

const FLASH_MS = 450;
const PUT_CELLS_MAX = 48;
const PLACEHOLDER = -2; // what a cell shows as its owner when a placeholder holds it

/** The owner a cell shows: placeholders are one, so one taking over from another is no change. */
function shownOwnerOf(run, b) {
  const owner = run.owner[b];
  return owner >= 0 && run.reqs[owner]?.placeholder ? PLACEHOLDER : owner;
}

function pack(r, g, b, a = 255) {
  return ((a << 24) | (b << 16) | (g << 8) | r) >>> 0;
}

function tint([r, g, b], k) {
  return pack(...[r, g, b].map((c) => Math.round(c + (255 - c) * k)));
}

/** Colours for one theme; projection mode passes a dark one. */
export function gridTheme(dark = false) {
  return dark
    ? { free: pack(38, 42, 48), nul: pack(90, 90, 90), mark: pack(255, 255, 255),
      flash: pack(255, 255, 255), bg: pack(0, 0, 0), emptyTint: 0.55, placeholder: pack(107, 122, 140) }
    : { free: pack(230, 233, 237), nul: pack(110, 110, 110), mark: pack(0, 0, 0),
      flash: pack(0, 0, 0), bg: pack(255, 255, 255), emptyTint: 0.7, placeholder: pack(140, 150, 163) };
}

export class KvGrid {
  constructor(canvas) {
    this.canvas = canvas;
    this.ctx = canvas.getContext("2d");
    this.layout = null;
    this.image = null;
    this.pixels = null;
    this.theme = gridTheme(false);
    this.colourCache = new Map();
    this.flashUntil = null;
    this.flashQueue = [];
    this.flashHead = 0;
    this.numBlocks = 0;
  }

  /** Size the canvas for `numBlocks`; returns the layout. */
  resize(numBlocks, width, maxHeight) {
    this.numBlocks = numBlocks;
    this.layout = gridLayout(numBlocks, width, maxHeight);
    this.canvas.width = this.layout.width;
    this.canvas.height = this.layout.height;
    this.image = this.ctx.createImageData(this.layout.width, this.layout.height);
    this.pixels = new Uint32Array(this.image.data.buffer);
    this.pixels.fill(this.theme.bg);
    this.flashUntil = new Float64Array(numBlocks);
    this.flashQueue = [];
    this.flashHead = 0;
    this.shownOwner = new Int32Array(numBlocks).fill(-1);
    this.shownWho = new Int32Array(numBlocks);
    this.shownBits = new Uint16Array(numBlocks).fill(0xffff); // nothing shown yet
    this.shownCached = new Uint8Array(numBlocks);
    return this.layout;
  }

  setTheme(dark) {
    this.theme = gridTheme(dark);
    this.colourCache.clear();
  }

  colours(index) {
    let c = this.colourCache.get(index);
    if (!c) {
      const rgb = rgbFor(index);
      c = { solid: packedFor(index), empty: tint(rgb, this.theme.emptyTint), cachedFree: tint(rgb, 0.82) };
      this.colourCache.set(index, c);
    }
    return c;
  }

  /** Repaint all cells (after a resize, a theme change or a keyframe). */
  drawAll(run) {
    this.pixels.fill(this.theme.bg);
    this.flashUntil.fill(0);
    this.flashQueue.length = 0;
    this.flashHead = 0;
    this.shownBits.fill(0xffff);
    for (let b = 0; b < run.numBlocks; b++) this.shownOwner[b] = shownOwnerOf(run, b);
    this.shownCached.set(run.cached);
    for (let b = 0; b < run.numBlocks; b++) this.paintCell(run, b, false);
    this.ctx.putImageData(this.image, 0, 0);
  }

  /** Repaint the given cells, and those whose flash just ended; true while flashes remain.
   * A cell flashes when its owner changed (allocated, freed, evicted), not when it fills.
   * Flashes end in the order they started, so a queue holds them: [block, until, ...]. */
  drawChanged(run, blocks, now, animate = true) {
    const painted = [];
    for (const b of blocks) {
      const owner = shownOwnerOf(run, b);
      const flash = animate && (this.shownOwner[b] !== owner || this.cachedShown(run, b));
      this.shownOwner[b] = owner;
      if (flash) {
        this.flashUntil[b] = now + FLASH_MS;
        this.flashQueue.push(b, now + FLASH_MS);
      }
      if (this.paintCell(run, b, flash || this.flashUntil[b] > now)) painted.push(b);
    }
    const q = this.flashQueue;
    while (this.flashHead < q.length && q[this.flashHead + 1] <= now) {
      const b = q[this.flashHead];
      this.flashHead += 2;
      if (this.flashUntil[b] <= now && this.flashUntil[b] > 0) {
        this.flashUntil[b] = 0;
        if (this.paintCell(run, b, false)) painted.push(b);
      }
    }
    if (this.flashHead === q.length) {
      q.length = 0;
      this.flashHead = 0;
    }
    this.put(painted);
    return q.length > 0;
  }

  // Copy painted cells to the canvas: one small ImageData per cell when few changed (a paused
  // run's last flashes), else one whole-canvas put (in bench/render.py it beats per-cell puts
  // from about fifty cells on).
  put(blocks) {
    if (blocks.length === 0) return;
    if (blocks.length > PUT_CELLS_MAX) return this.ctx.putImageData(this.image, 0, 0);
    const { cell, cols, pitch, width } = this.layout;
    if (!this.cellImage || this.cellImage.width !== cell) {
      this.cellImage = this.ctx.createImageData(cell, cell);
      this.cellPixels = new Uint32Array(this.cellImage.data.buffer);
    }
    const px = this.pixels, out = this.cellPixels;
    for (const b of blocks) {
      const x0 = (b % cols) * pitch;
      const y0 = Math.floor(b / cols) * pitch;
      for (let y = 0; y < cell; y++) {
        const row = (y0 + y) * width + x0;
        out.set(px.subarray(row, row + cell), y * cell);
      }
      this.ctx.putImageData(this.cellImage, x0, y0);
    }
  }

  cachedShown(run, b) {
    const was = this.shownCached[b];
    this.shownCached[b] = run.cached[b];
    return was === 1 && run.cached[b] === 0; // an eviction
  }

  /** Paint block b's cell unless it would look as it does; returns whether it painted.
   * (A decode adds one token to a block: most steps change no cell's pixels.) */
  paintCell(run, b, flash) {
    const { cell, cols, pitch } = this.layout;
    const owner = shownOwnerOf(run, b);
    const filledRows = owner === PLACEHOLDER ? cell
      : owner >= 0 ? Math.round((run.fill[b] / run.blockSize) * cell) : 0;
    const freeCached = owner === -1 && run.cached[b] && run.lastOwner[b] >= 0 && !run.reqs[run.lastOwner[b]]?.placeholder;
    const who = b === 0 ? -3 : owner !== -1 ? owner : freeCached ? -4 - run.lastOwner[b] : -1;
    const bits = filledRows | (run.cached[b] << 8) | ((run.ref[b] > 1) << 9) | (flash << 10) |
      ((run.lookahead?.[b] ?? 0) << 11);
    if (this.shownWho[b] === who && this.shownBits[b] === bits) return false;
    this.shownWho[b] = who;
    this.shownBits[b] = bits;
    const w = this.layout.width;
    const x0 = (b % cols) * pitch;
    const y0 = Math.floor(b / cols) * pitch;
    const px = this.pixels;
    let top, bottom;
    if (b === 0) top = bottom = this.theme.nul;
    else if (owner === PLACEHOLDER) top = bottom = this.theme.placeholder;
    else if (owner >= 0) ({ empty: top, solid: bottom } = this.colours(owner));
    else if (freeCached) top = bottom = this.colours(run.lastOwner[b]).cachedFree;
    else top = bottom = this.theme.free;
    for (let y = 0; y < cell; y++) {
      const colour = y >= cell - filledRows ? bottom : top;
      const row = (y0 + y) * w + x0;
      for (let x = 0; x < cell; x++) px[row + x] = colour;
    }
    this.paintMarks(run, b, x0, y0, flash);
    return true;
  }

  paintMarks(run, b, x0, y0, flash) {
    const { cell } = this.layout;
    const w = this.layout.width;
    const px = this.pixels;
    const mark = this.theme.mark;
    if (b === 0) {
      for (let i = 0; i < cell; i++) px[(y0 + i) * w + x0 + i] = this.theme.bg; // null: a slash
    }
    const dot = Math.max(1, Math.floor(cell / 4));
    if (run.ref[b] > 1) {
      for (let y = 0; y < dot; y++) for (let x = 0; x < dot; x++) px[(y0 + y) * w + x0 + x] = mark;
    }
    if (run.cached[b] && cell >= 3) {
      for (let y = 0; y < dot; y++) {
        for (let x = cell - dot + y; x < cell; x++) px[(y0 + y) * w + x0 + x] = mark;
      }
    }
    const lookahead = run.lookahead?.[b] ?? 0;
    if (lookahead && cell >= 3) { // a dotted top edge: lookahead slots, kept (mark) or released
      const colour = lookahead === 1 ? mark : this.theme.free;
      for (let x = 0; x < cell; x += 2) px[y0 * w + x0 + x] = colour;
      if (lookahead === 2) for (let i = 0; i < cell; i += 2) px[(y0 + i) * w + x0 + cell - 1 - i] = colour;
    }
    if (flash && cell >= 4) {
      for (let i = 0; i < cell; i++) {
        px[y0 * w + x0 + i] = this.theme.flash;
        px[(y0 + cell - 1) * w + x0 + i] = this.theme.flash;
        px[(y0 + i) * w + x0] = this.theme.flash;
        px[(y0 + i) * w + x0 + cell - 1] = this.theme.flash;
      }
    }
  }

  blockAt(x, y) {
    return this.layout ? blockAt(this.layout, this.numBlocks, x, y) : -1;
  }

  cellOrigin(b) {
    return cellOrigin(this.layout, b);
  }
}

/** The size block numbers are drawn at in a cell of `cell` pixels, or 0 for none: `fontPx`
 * (projection's type size) only where the widest number fits a cell, else 55% of the cell from
 * 14-pixel cells up (pure). */
export function numberFontPx(cell, maxNumber, fontPx = null) {
  if (!fontPx) return cell >= 14 ? Math.max(8, Math.floor(cell * 0.55)) : 0;
  const width = String(maxNumber).length * 0.6 * fontPx; // digits are about 0.6 em wide
  return fontPx <= cell - 2 && width <= cell - 2 ? Math.ceil(fontPx) : 0;
}

/** Outline the blocks of one request's table on the overlay canvas, numbered by logical index
 * where the numbers are readable (numberFontPx); drawn at device pixels over the grid's CSS
 * box. The overlay says the size it drew numbers at (data-font-px, empty for none). */
export function drawHighlight(overlay, grid, table, ink = "#000", fontPx = null) {
  const ctx = overlay.getContext("2d");
  const ratio = overlay.ownerDocument?.defaultView?.devicePixelRatio || 1;
  const [w, h] = [grid.canvas.width, grid.canvas.height]; // the grid: one CSS pixel a pixel
  const sized = overlay.width === Math.round(w * ratio) && overlay.height === Math.round(h * ratio);
  if (!table && sized && !overlay.dataset.drawn) return; // nothing drawn, nothing to draw
  if (!sized) {
    overlay.width = Math.round(w * ratio);
    overlay.height = Math.round(h * ratio);
    overlay.style.width = `${w}px`;
    overlay.style.height = `${h}px`;
  }
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, w, h);
  overlay.dataset.drawn = table ? "1" : "";
  overlay.dataset.fontPx = "";
  if (!table) return;
  const { cell } = grid.layout;
  const font = numberFontPx(cell, Math.max(0, ...table.map((t) => t.logical)), fontPx);
  ctx.lineWidth = Math.max(1, Math.min(3, cell / 5));
  ctx.strokeStyle = ink;
  ctx.font = `${font}px sans-serif`;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  if (font) overlay.dataset.fontPx = String(font);
  for (const { logical, block } of table) {
    const [x, y] = grid.cellOrigin(block);
    ctx.strokeRect(x + 0.5, y + 0.5, cell - 1, cell - 1);
    if (font) {
      ctx.fillStyle = ink;
      ctx.fillText(String(logical), x + cell / 2, y + cell / 2);
    }
  }
}
