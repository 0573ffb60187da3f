// The overview strip: the whole run's series in one canvas, each in its own band, broken where
// no step ran; the brushed window and the playback cursor drawn over them.

import { scaledSeries } from "../state/overview.js";

const COLORS = ["#0072b2", "#e69f00", "#009e73", "#cc79a7"]; // Okabe-Ito: colour-blind safe

/** Draw `data` (an overview answer) with `brush` ([a, b] fractions or null) and `cursor_s`. */
export function drawOverview(canvas, data, brush, cursorS) {
  const ctx = canvas.getContext("2d");
  const w = (canvas.width = canvas.clientWidth || 600);
  const h = (canvas.height = canvas.clientHeight || 96);
  ctx.clearRect(0, 0, w, h);
  if (!data) return;
  const series = scaledSeries(data.columns);
  const band = h / series.length;
  series.forEach((s, k) => {
    const top = k * band;
    ctx.fillStyle = "#555";
    ctx.font = "10px sans-serif";
    ctx.fillText(`${s.label} (max ${s.max.toFixed(s.max < 10 ? 2 : 0)} ${s.unit})`, 4, top + 10);
    ctx.strokeStyle = COLORS[k];
    ctx.beginPath();
    let pen = false;
    s.points.forEach((v, i) => {
      if (v == null) { pen = false; return; } // a gap: nothing ran in this bin
      const x = ((i + 0.5) / s.points.length) * w;
      const y = top + band - 2 - v * (band - 12);
      if (pen) ctx.lineTo(x, y);
      else ctx.moveTo(x, y);
      pen = true;
    });
    ctx.stroke();
  });
  if (brush) {
    const [a, b] = brush[0] <= brush[1] ? brush : [brush[1], brush[0]];
    ctx.fillStyle = "rgba(0, 114, 178, 0.15)";
    ctx.fillRect(a * w, 0, (b - a) * w, h);
  }
  const span = data.end_s - data.start_s;
  if (cursorS != null && span > 0) {
    ctx.strokeStyle = "#000";
    const x = ((cursorS - data.start_s) / span) * w;
    ctx.beginPath();
    ctx.moveTo(x, 0);
    ctx.lineTo(x, h);
    ctx.stroke();
  }
}
