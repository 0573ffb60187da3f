// The pool of a big engine (above DENSITY_ABOVE blocks) on the pool canvas: a density map, one
// cell per group of blocks split into used (dark), cached (green) and free (pale) shares; a click
// drills into a region drawn cell by cell in request colours; "whole pool" (bound by
// ui/explore.js) goes back.

import { gridLayout } from "./layout.js";
import { cssFor } from "../state/palette.js";
import { DENSITY_ABOVE, groupSize, poolDensity, regionAround } from "../state/pool_density.js";

const USED = "#2b4c7e";
const CACHED = "#3aa35b";

export class PoolDensity {
  constructor(canvas, back) {
    this.canvas = canvas;
    this.back = back; // the "whole pool" button, shown while drilled in
    this.region = null; // [start, end) while drilled in
    this.numBlocks = 0;
  }

  get active() {
    return this.numBlocks > DENSITY_ABOVE;
  }

  resize(numBlocks, width, maxHeight) {
    if (numBlocks !== this.numBlocks) this.region = null;
    Object.assign(this, { numBlocks, width, maxHeight, size: groupSize(numBlocks) });
    this.relayout();
  }

  relayout() {
    if (!this.active) return;
    const cells = this.region ? this.region[1] - this.region[0] : Math.ceil(this.numBlocks / this.size);
    this.layout = gridLayout(cells, this.width, this.maxHeight);
    this.canvas.width = this.layout.width;
    this.canvas.height = this.layout.height;
    this.canvas.dataset.mode = this.region ? "cells" : "density";
    if (this.region) this.canvas.dataset.region = this.region.join("-");
    else delete this.canvas.dataset.region;
    if (this.back) this.back.hidden = !this.region;
  }

  /** What the pool canvas shows, for the line above it ("" for a pool drawn cell by cell). */
  caption() {
    if (!this.active) return "";
    return this.region ? ` · blocks ${this.region[0]}-${this.region[1] - 1}, cell by cell`
      : ` · ${this.size} blocks a cell: used (blue), cached (green), free; click to see cells`;
  }

  zoomOut() {
    this.region = null;
    this.relayout();
    this.onChange?.();
  }

  /** A click at canvas pixel (x, y): drills into the group there; true when it did. */
  click(x, y) {
    if (!this.active || this.region) return false;
    const g = this.cellAt(x, y);
    if (g < 0) return false;
    this.region = regionAround(g, this.size, this.numBlocks);
    this.relayout();
    return true;
  }

  cellAt(x, y) {
    const { pitch, cols, rows } = this.layout;
    const col = Math.floor(x / pitch);
    const row = Math.floor(y / pitch);
    return col < 0 || row < 0 || col >= cols || row >= rows ? -1 : row * cols + col;
  }

  /** The block under (x, y) while drilled in (-1 on the density map). */
  blockAt(x, y) {
    if (!this.region) return -1;
    const c = this.cellAt(x, y);
    return c >= 0 && this.region[0] + c < this.region[1] ? this.region[0] + c : -1;
  }

  draw(run, theme) {
    const ctx = this.canvas.getContext("2d");
    ctx.fillStyle = theme.bg;
    ctx.fillRect(0, 0, this.canvas.width, this.canvas.height);
    if (this.region) this.drawCells(ctx, run, theme);
    else this.drawDensity(ctx, run, theme);
  }

  drawDensity(ctx, run, theme) {
    const d = poolDensity(run, this.size);
    const { pitch, cell, cols } = this.layout;
    for (let g = 0; g < d.groups; g++) {
      const x = (g % cols) * pitch;
      const y = Math.floor(g / cols) * pitch;
      const total = d.used[g] + d.cached[g] + d.free[g];
      const hUsed = Math.round((cell * d.used[g]) / total);
      const hCached = Math.round((cell * d.cached[g]) / total);
      ctx.fillStyle = theme.track;
      ctx.fillRect(x, y, cell, cell);
      ctx.fillStyle = USED;
      ctx.fillRect(x, y + cell - hUsed, cell, hUsed);
      ctx.fillStyle = CACHED;
      ctx.fillRect(x, y + cell - hUsed - hCached, cell, hCached);
    }
  }

  drawCells(ctx, run, theme) {
    const { pitch, cell, cols } = this.layout;
    for (let b = this.region[0]; b < this.region[1]; b++) {
      const k = b - this.region[0];
      const owner = run.owner[b];
      ctx.fillStyle = owner >= 0 ? cssFor(owner) : run.cached[b] ? CACHED : theme.track;
      ctx.fillRect((k % cols) * pitch, Math.floor(k / cols) * pitch, cell, cell);
    }
  }
}
