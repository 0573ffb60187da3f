// Stable, colour-blind-safe colours per request: a request's colour follows its index in the
// workload, so every view (and every compare pane on the same workload) paints it alike.

// Paul Tol's "muted" scheme plus three Okabe-Ito hues; distinguishable under common CVD types.
export const BASE_COLOURS = [
  "#cc6677", "#332288", "#ddcc77", "#117733", "#88ccee", "#882255",
  "#44aa99", "#999933", "#aa4499", "#e69f00", "#0072b2", "#d55e00",
];

// Beyond twelve requests the hues repeat in a lighter, then a darker tier; beyond 36, rgbFor.
const TIERS = [0, 0.45, -0.35];

export function hexToRgb(hex) {
  const v = parseInt(hex.slice(1), 16);
  return [(v >> 16) & 255, (v >> 8) & 255, v & 255];
}

function shade([r, g, b], amount) {
  const mix = (c) => amount >= 0 ? c + (255 - c) * amount : c * (1 + amount);
  return [r, g, b].map((c) => Math.round(mix(c)));
}

const TIERED = BASE_COLOURS.length * TIERS.length;
const GOLDEN_DEG = 137.50776405; // consecutive indices land far apart on the hue circle

/** HSL (degrees, 0-1, 0-1) to an RGB triple. */
function hsl(h, s, l) {
  const a = s * Math.min(l, 1 - l);
  const f = (n) => {
    const k = (n + h / 30) % 12;
    return Math.round(255 * (l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
  };
  return [f(0), f(8), f(4)];
}

/** RGB triple for a request index (a non-negative integer). The first 36 are the tiers of the
 * colour-blind-safe scheme; after them the hue walks the circle by the golden angle with the
 * lightness and saturation cycling, so a run of thousands of consecutive indices (the requests
 * one view shows at once) never repeats a colour. */
export function rgbFor(index) {
  const n = BASE_COLOURS.length;
  if (index < TIERED) return shade(hexToRgb(BASE_COLOURS[index % n]), TIERS[Math.floor(index / n)]);
  const k = index - TIERED;
  return hsl((k * GOLDEN_DEG) % 360, 0.45 + 0.25 * ((k >> 1) % 3) / 2, 0.38 + 0.24 * (k % 5) / 4);
}

const cssCache = [];

export function cssFor(index) {
  let css = cssCache[index];
  if (css === undefined) {
    const [r, g, b] = rgbFor(index);
    css = cssCache[index] = `rgb(${r}, ${g}, ${b})`;
  }
  return css;
}

/** Packed 0xAABBGGRR for writing straight into a little-endian ImageData Uint32Array. */
const packedCache = [];

export function packedFor(index) {
  let v = packedCache[index];
  if (v === undefined) {
    const [r, g, b] = rgbFor(index);
    v = packedCache[index] = ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
  }
  return v;
}

/** Black or white text, whichever reads better on the request's colour. */
export function inkFor(index) {
  const [r, g, b] = rgbFor(index);
  return 0.299 * r + 0.587 * g + 0.114 * b > 150 ? "#000" : "#fff";
}

/** Packed 0xAABBGGRR of a "#rgb" or "#rrggbb" colour (grey for anything else). */
export function packHex(css) {
  const full = css.length === 4 ? `#${css[1]}${css[1]}${css[2]}${css[2]}${css[3]}${css[3]}` : css;
  const m = full.match(/^#(..)(..)(..)$/);
  const [r, g, b] = m ? m.slice(1).map((x) => parseInt(x, 16)) : [200, 200, 200];
  return ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
}
