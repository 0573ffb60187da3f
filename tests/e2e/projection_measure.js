// What tests/e2e/test_projection_sizes.py reads from a projected page: an object of two
// functions the test calls through page.evaluate.
({
  /** Whether the views have laid out for this window: each chart box's charts fill it. */
  fitted() {
    const s = window.__servescope;
    const groups = s.store.panes.length > 1
      ? s.compare().panes.map((p) => [p.chartBox, p.charts.charts])
      : [[document.getElementById('charts'), s.explore().charts.charts]];
    return groups.every(([box, charts]) => {
      const gap = parseFloat(getComputedStyle(box).columnGap) || 0;
      const width = Math.floor((box.clientWidth - gap * (charts.length - 1)) / charts.length);
      const tall = Math.max(...charts.map((c) => c.u.root.getBoundingClientRect().height));
      return charts.every((c) => Math.abs(c.u.width - width) <= 1)
        && tall <= box.clientHeight + 1 && tall >= box.clientHeight - 2;
    });
  },

  /** The screen's text sizes, canvases, boxes and the note, at shares TEXT and LEAD of the
   * viewport's height; canvases matching NO_TEXT draw no text. */
  measure([TEXT, LEAD, NO_TEXT]) {
    const H = innerHeight;
    const ratio = devicePixelRatio || 1;
    const visible = (el) => {
      const r = el.getBoundingClientRect();
      const s = getComputedStyle(el);
      return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none'
        && r.bottom > 0 && r.right > 0 && r.top < innerHeight && r.left < innerWidth;
    };
    const name = (el) => `${el.tagName}#${el.id}.${String(el.className).replaceAll(' ', '.')}`;
    const inside = (r, q) => r.bottom <= q.bottom + 0.5 && r.right <= q.right + 0.5
      && r.top >= q.top - 0.5 && r.left >= q.left - 0.5;
    const overlaps = (r, q) => r.bottom > q.top + 0.5 && r.top < q.bottom - 0.5
      && r.right > q.left && r.left < q.right;

    const small = [];
    const lead = new Set();
    for (const el of document.querySelectorAll('body *')) {
      if (['SCRIPT', 'STYLE', 'OPTION'].includes(el.tagName)) continue;
      const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
      if (!own || !visible(el)) continue;
      const px = parseFloat(getComputedStyle(el).fontSize);
      const leader = el.closest('#caption, #lesson-note');
      if (leader) lead.add(leader.id);
      if (px < (leader ? LEAD : TEXT) * H - 0.01) {
        small.push([name(el), el.textContent.trim().slice(0, 30), px]);
      }
    }

    // a canvas's text: data-font-px on the canvas, or on the uPlot chart's box around it
    const canvases = [];
    for (const c of document.querySelectorAll('canvas')) {
      if (!visible(c)) continue;
      const holder = c.hasAttribute('data-font-px') ? c : c.closest('.chart[data-font-px]');
      const font = holder ? holder.dataset.fontPx : null;
      const sx = c.width / c.clientWidth;
      const sy = c.height / c.clientHeight;
      const bad = [];
      if (Math.abs(sx - sy) > 0.02 * Math.max(sx, sy)) bad.push('stretched');
      if (font === null && !c.matches(NO_TEXT)) bad.push('says no font size');
      if (font && Math.abs(sx - ratio) > 0.02 * ratio) bad.push('not at device pixels');
      if (font && +font < TEXT * H - 0.01) bad.push('small text');
      if (bad.length) canvases.push([name(c), font, sx, sy, bad]);
    }

    // cut: off the screen, showing less than its content, or outside a box that clips it
    const clips = (el) => getComputedStyle(el).overflow !== 'visible';
    const screen = { top: 0, left: 0, bottom: innerHeight, right: innerWidth };
    const cut = [];
    const boxes = ['#explore', '#compare', '.panel', '.pane', '.kv-wrap', '.live', '.lesson',
      '.uplot', '.chip.more', '#caption', '#lesson-note'].join(', ');
    for (const el of document.querySelectorAll(boxes)) {
      if (!visible(el)) continue;
      const r = el.getBoundingClientRect();
      if (!inside(r, screen)) cut.push([name(el), 'off screen']);
      if (clips(el) && (el.scrollHeight > el.clientHeight + 1
        || el.scrollWidth > el.clientWidth + 1)) cut.push([name(el), 'overflows']);
      for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
        if (clips(a) && !inside(r, a.getBoundingClientRect())) {
          cut.push([name(el), `clipped by ${name(a)}`]);
        }
      }
    }

    const s = window.__servescope;
    const charts = s.store.panes.length > 1
      ? s.compare().panes.flatMap((p) => p.charts.charts) : s.explore().charts.charts;
    const plots = charts.map((c) => c.u.bbox.height / ratio);

    const note = document.getElementById('lesson-note');
    const n = note.getBoundingClientRect();
    const others = '.top, .controls, #caption, .panel, .pane, .lesson, #keys';
    const covered = !visible(note) ? [] : [...document.querySelectorAll(others)]
      .filter((el) => visible(el) && overlaps(el.getBoundingClientRect(), n)).map(name);

    const root = document.documentElement;
    const body = document.body;
    const scrolls = root.scrollHeight > innerHeight || root.scrollWidth > innerWidth
      || body.scrollHeight > body.clientHeight || body.scrollWidth > body.clientWidth;
    return { small, lead: [...lead], canvases, cut, covered, plots, text: TEXT * H, scrolls };
  },
})
