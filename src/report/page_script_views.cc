// The report page's script, part 2: the zoomable timeline overview (canvas,
// drawn from the pre-aggregated bins), memory over time (SVG lines) and the
// GPU-time flame graph (canvas: click to zoom, search, tooltips), then the
// start-up that renders every section.
#include "page_assets.h"

namespace tracesmith::report {

const char kPageScriptViews[] = R"JS(
TS.canvas = function (id, cssW, cssH) {
  const c = document.getElementById(id);
  const r = window.devicePixelRatio || 1;
  c.width = Math.round(cssW * r); c.height = Math.round(cssH * r);
  c.style.width = cssW + 'px'; c.style.height = cssH + 'px';
  const g = c.getContext('2d');
  g.setTransform(r, 0, 0, r, 0, 0);
  return g;
};

// Timeline: one row per stream, grouped by GPU (and rank); a bar per pixel
// column whose height is the busy fraction averaged over the bins under it.
// Under them the GPU metrics (profile --gpu-metrics), then the program's own
// counters (tracesmith.counter), one row each over the same bins: per pixel
// column, the lowest to the highest value in the bins under it (a counter: the
// value it held; a metric: its samples, a light band, with the time-weighted
// mean as a line). Drag to zoom into a range, wheel to zoom at the cursor,
// double-click or "reset" for the whole window.
TS.timeline = function (A, P) {
  const T = P.timeline, lanes = T.lanes, counters = T.counters || [], metrics = T.gpu_metrics || [];
  if (!lanes.length && !counters.length && !metrics.length) { TS.set('timeline-body', '<p class="empty">No GPU work in the window.</p>'); return; }
  const W = 1200, L = 230, rowH = 22, groupH = 18, axisH = 22, ctrH = 40;
  const rows = [];
  let y = axisH, last = null;
  lanes.forEach(function (l) {
    if (l.group !== last) { rows.push({ group: l.group, y: y }); y += groupH; last = l.group; }
    rows.push({ lane: l, y: y, h: rowH }); y += rowH;
  });
  function seriesGroup(title, list, omitted) {
    if (!list.length) return;
    rows.push({ group: title + (omitted ? ', ' + omitted + ' more not shown' : ''), y: y });
    y += groupH;
    list.forEach(function (c) { rows.push({ series: c, y: y, h: ctrH }); y += ctrH; });
  }
  seriesGroup('GPU metrics (profile --gpu-metrics)', metrics, T.gpu_metrics_omitted);
  seriesGroup('Program counters (tracesmith.counter)', counters, T.counters_omitted);
  const H = y + 4, plotW = W - L - 10, span = T.end_ns - T.begin_ns;
  let v0 = 0, v1 = T.bins, drag = null;
  const g = TS.canvas('timeline-canvas', W, H);
  const stepLines = (A.steps && A.steps.list) ? A.steps.list.map(function (s) { return s.begin_ns; }) : [];
  function binToNs(b) { return T.begin_ns + span * b / T.bins; }
  function xOf(b) { return L + plotW * (b - v0) / (v1 - v0); }
  // Each pixel column of the plot with the bins under it: fn(x, bin, weight).
  function columns(n, fn) {
    for (let x = 0; x < plotW; x++) {
      const a = v0 + (v1 - v0) * x / plotW, b = v0 + (v1 - v0) * (x + 1) / plotW;
      for (let k = Math.floor(a); k < Math.ceil(b) && k < n; k++) {
        const w = Math.min(b, k + 1) - Math.max(a, k);
        if (w > 0) fn(x, k, w);
      }
    }
  }
  // A counter's or a metric's row. Percent metrics on 0..100 (further if a
  // sample passes it), the rest from their lowest to their highest value.
  function seriesRow(r) {
    const c = r.series, lo = c.lo, hi = c.hi, mean = c.mean, pct = c.unit === '%';
    const bottom = pct ? Math.min(0, c.min) : c.min, top = pct ? Math.max(100, c.max) : c.max, range = top - bottom || 1;
    g.fillStyle = '#1d2330';
    g.fillText(TS.short(c.name, 32), 12, r.y + 15);
    g.fillStyle = '#667085';
    g.fillText(TS.num(bottom) + ' .. ' + TS.num(top), 12, r.y + 31);
    g.fillStyle = '#f8f9fb';
    g.fillRect(L, r.y + 2, plotW, ctrH - 4);
    const cl = new Array(plotW).fill(null), ch = new Array(plotW).fill(null);
    const cm = new Array(plotW).fill(0), cw = new Array(plotW).fill(0);
    columns(lo.length, function (x, k, w) {
      if (lo[k] === null) return;
      cl[x] = cl[x] === null ? lo[k] : Math.min(cl[x], lo[k]);
      ch[x] = ch[x] === null ? hi[k] : Math.max(ch[x], hi[k]);
      if (mean && mean[k] !== null) { cm[x] += mean[k] * w; cw[x] += w; }
    });
    function yOf(v) { return r.y + ctrH - 5 - (ctrH - 10) * (v - bottom) / range; }
    g.fillStyle = mean ? '#c3d0ea' : '#3465a4';
    for (let x = 0; x < plotW; x++) {
      if (cl[x] === null) continue;
      const t = yOf(ch[x]), b = yOf(cl[x]);
      g.fillRect(L + x, t - 0.75, 1, Math.max(1.5, b - t + 1.5));
    }
    if (!mean) return;
    g.fillStyle = '#3465a4';
    for (let x = 0; x < plotW; x++) if (cw[x]) g.fillRect(L + x, yOf(cm[x] / cw[x]) - 0.75, 1, 1.5);
  }
  function draw() {
    g.clearRect(0, 0, W, H);
    g.font = '12px system-ui, sans-serif';
    g.fillStyle = '#667085';
    for (let i = 0; i <= 6; i++) {
      const b = v0 + (v1 - v0) * i / 6, x = xOf(b);
      g.fillRect(x, axisH - 6, 1, 6);
      g.textAlign = i === 0 ? 'left' : i === 6 ? 'right' : 'center';
      g.fillText('+' + TS.ns(binToNs(b) - T.begin_ns), x, axisH - 9);
    }
    g.textAlign = 'left';
    rows.forEach(function (r) {
      if (r.group) { g.fillStyle = '#1d2330'; g.font = 'bold 12px system-ui, sans-serif'; g.fillText(r.group, 2, r.y + 13); g.font = '12px system-ui, sans-serif'; return; }
      if (r.series) { seriesRow(r); return; }
      const l = r.lane, busy = l.busy;
      g.fillStyle = '#1d2330';
      g.fillText(l.name + '  ' + TS.pct(100 * l.busy_ns / Math.max(1, span)), 12, r.y + 15);
      g.fillStyle = '#f1f3f7';
      g.fillRect(L, r.y + 2, plotW, rowH - 4);
      g.fillStyle = '#3867d6';
      const sum = new Array(plotW).fill(0), wsum = new Array(plotW).fill(0);
      columns(busy.length, function (x, k, w) { sum[x] += busy[k] * w; wsum[x] += w; });
      for (let x = 0; x < plotW; x++) {
        if (!wsum[x] || !sum[x]) continue;
        const h = (rowH - 4) * Math.min(1, sum[x] / wsum[x] / 1000);
        g.fillRect(L + x, r.y + rowH - 2 - h, 1, Math.max(1, h));
      }
    });
    // Step starts, when they are at least 4 px apart on average (zoom in
    // to see them on a run of thousands of steps).
    g.fillStyle = 'rgba(235,59,90,0.55)';
    const shown = stepLines.filter(function (ns) {
      const b = (ns - T.begin_ns) / span * T.bins;
      return b >= v0 && b <= v1;
    });
    if (shown.length * 4 <= plotW)
      shown.forEach(function (ns) { g.fillRect(xOf((ns - T.begin_ns) / span * T.bins), axisH, 1, H - axisH); });
    if (drag && drag.x1 != null) {
      g.fillStyle = 'rgba(56,103,214,0.18)';
      g.fillRect(Math.min(drag.x0, drag.x1), axisH, Math.abs(drag.x1 - drag.x0), H - axisH);
    }
    const note = document.getElementById('timeline-range');
    if (note) note.textContent = 'showing +' + TS.ns(binToNs(v0) - T.begin_ns) + ' .. +' + TS.ns(binToNs(v1) - T.begin_ns) +
      ' (' + TS.ns(span * (v1 - v0) / T.bins) + ')' +
      (shown.length * 4 > plotW ? '; ' + shown.length + ' step starts here: zoom in to see them' : '');
  }
  function binAt(px) { return v0 + (v1 - v0) * Math.min(Math.max(px - L, 0), plotW) / plotW; }
  function zoom(a, b) {
    const minW = Math.min(T.bins, 4);
    if (b - a < minW) { const c = (a + b) / 2; a = c - minW / 2; b = c + minW / 2; }
    v0 = Math.max(0, a); v1 = Math.min(T.bins, b); draw();
  }
  const c = document.getElementById('timeline-canvas');
  c.addEventListener('mousedown', function (e) { drag = { x0: e.offsetX, x1: null }; });
  c.addEventListener('mousemove', function (e) {
    if (drag) { drag.x1 = e.offsetX; draw(); return; }
    const row = rows.find(function (r) { return r.h && e.offsetY >= r.y && e.offsetY < r.y + r.h; });
    if (!row || e.offsetX < L) { TS.tip(e, null); return; }
    const b = Math.min(Math.floor(binAt(e.offsetX)), T.bins - 1), when = '+' + TS.ns(binToNs(b) - T.begin_ns) + ' .. +' +
      TS.ns(binToNs(b + 1) - T.begin_ns) + ': ';
    if (row.series) {
      const c = row.series, lo = c.lo[b], hi = c.hi[b], range = lo === hi ? TS.num(lo) : TS.num(lo) + ' to ' + TS.num(hi);
      TS.tip(e, c.name + ' (pid ' + c.pid + ')' + (c.metric ? '\n' + c.metric : '') + '\n' + when + (lo === null ? (c.mean ? 'no sample' : 'no value yet') :
        c.mean ? 'mean ' + TS.num(c.mean[b]) + ' (samples ' + range + ')' : range));
      return;
    }
    TS.tip(e, row.lane.group + ' ' + row.lane.name + '\n' + when + (row.lane.busy[b] / 10).toFixed(1) + '% busy');
  });
  c.addEventListener('mouseleave', function (e) { TS.tip(e, null); });
  c.addEventListener('mouseup', function () {
    const d = drag; drag = null;
    if (d && d.x1 != null && Math.abs(d.x1 - d.x0) > 3) zoom(binAt(Math.min(d.x0, d.x1)), binAt(Math.max(d.x0, d.x1)));
    else draw();
  });
  c.addEventListener('dblclick', function () { zoom(0, T.bins); });
  c.addEventListener('wheel', function (e) {
    e.preventDefault();
    const at = binAt(e.offsetX), f = e.deltaY > 0 ? 1.25 : 0.8;
    zoom(at - (at - v0) * f, at + (v1 - at) * f);
  }, { passive: false });
  document.getElementById('timeline-reset').addEventListener('click', function () { zoom(0, T.bins); });
  draw();
};

// Memory: max live bytes per bin for each process/device/space (the memory
// report's bins over the whole trace), and each owner's peak.
TS.OWNER_COLORS = ['#3867d6', '#fa8231', '#8854d0', '#eb3b5a', '#0fb9b1', '#f7b731', '#4b6584', '#a55eea'];
TS.memory = function (M, P) {
  if (!M || !M.memory || !M.memory.length) {
    TS.set('memory-body', '<p class="empty">No allocations in this trace (or none the memory model could place).</p>');
    return;
  }
  let html = M.findings && M.findings.length ? '<ul class="findings">' + M.findings.map(function (f) { return '<li>' + TS.esc(f) + '</li>'; }).join('') + '</ul>' : '';
  M.memory.forEach(function (k) {
    const W = 1100, H = 150, L = 80, bins = k.bins || [], n = Math.max(1, bins.length);
    const max = Math.max.apply(null, bins.concat([k.peak_bytes, 1]));
    function steps(values) {
      let pts = '';
      values.forEach(function (v, i) {
        const x0 = L + (W - L - 10) * i / n, x1 = L + (W - L - 10) * (i + 1) / n, y = H - 20 - (H - 30) * v / max;
        pts += x0.toFixed(1) + ',' + y.toFixed(1) + ' ' + x1.toFixed(1) + ',' + y.toFixed(1) + ' ';
      });
      return pts;
    }
    const pts = steps(bins);
    // The owners' series on the same bins (the memory report's OwnerPeak::bins).
    const series = ((P && P.memory_owners) || []).find(function (s) {
      return s.pid === k.pid && s.device_id === k.device_id && s.space === k.space;
    });
    let ownerLines = '', legend = '';
    if (series && series.owners.length) {
      series.owners.forEach(function (o, i) {
        const c = TS.OWNER_COLORS[i % TS.OWNER_COLORS.length];
        ownerLines += '<polyline fill="none" stroke="' + c + '" stroke-width="1.3" points="' + steps(o.bins) + '"><title>' +
          TS.esc(o.owner) + ': peak ' + TS.bytes(o.peak_bytes) + '</title></polyline>';
        legend += '<span><i style="background:' + c + '"></i>' + TS.esc(o.owner) + ' (peak ' + TS.bytes(o.peak_bytes) + ')</span>';
      });
      legend = '<div class="legend"><span><i style="background:#20bf6b"></i>all owners</span>' + legend + '</div>';
    }
    let svg = '<svg width="' + W + '" height="' + H + '"><text x="0" y="14">' + TS.bytes(max) + '</text><text x="0" y="' + (H - 20) + '">0</text>' +
      '<line x1="' + L + '" y1="' + (H - 20) + '" x2="' + (W - 10) + '" y2="' + (H - 20) + '" stroke="#e4e7ec"></line>' +
      '<polyline fill="none" stroke="#20bf6b" stroke-width="2.5" points="' + pts + '"><title>max live bytes per bin</title></polyline>' + ownerLines +
      '<text class="value" x="' + L + '" y="' + (H - 4) + '">0</text><text class="value" x="' + (W - 10) + '" y="' + (H - 4) + '" text-anchor="end">' + TS.ns(M.duration_ns) + '</text></svg>';
    html += '<h3>' + TS.esc(k.process) + ' \u00b7 ' + TS.esc(k.device) + ' \u00b7 ' + TS.esc(k.space) + '</h3>' +
      '<p class="note">peak ' + TS.bytes(k.peak_bytes) + ', ' + TS.bytes(k.end_bytes) + ' live at the end; ' + TS.esc(k.summary) +
      (k.peak_place && k.peak_place.text ? '; peak ' + TS.esc(k.peak_place.text) : '') +
      (k.peak_nvtx_range ? '; peak inside NVTX range ' + TS.esc(k.peak_nvtx_range) : '') + '</p>' + legend + '<div class="chart">' + svg + '</div>';
    if (k.owners && k.owners.length) html += '<div class="chart">' + TS.bars(k.owners.slice(0, 10).map(function (o) {
      return { label: o.owner + (o.library ? ' (' + o.library + ')' : ''), value: o.peak_bytes, cls: 'copy',
        text: 'peak ' + TS.bytes(o.peak_bytes) + ' at +' + TS.ns(o.peak_ns) +
          (o.peak_place && o.peak_place.text ? ' (' + o.peak_place.text + ')' : '') + ', ' + TS.bytes(o.end_bytes) + ' at the end' };
    })) + '</div>';
  });
  TS.set('memory-body', html);
};

// Flame graph (root at the top): x = share of the weight, one row per stack
// depth. Click a box to zoom into it, click the root row (or "reset") to zoom
// out; the search box highlights matching frames and totals their weight.
TS.flame = function (P) {
  const F = P.flame, names = F.names;
  if (!F.total) { TS.set('flame-body', '<p class="empty">No GPU ops in the window.</p>'); return; }
  const nodes = [];  // flattened: {name, value, depth, x (offset in weight), parent, leaf}
  let maxDepth = 0;
  (function walk(n, depth, x, parent) {
    const me = { name: n[0], value: n[1], depth: depth, x: x, parent: parent, leaf: !n[2] || !n[2].length };
    nodes.push(me);
    maxDepth = Math.max(maxDepth, depth);
    let cx = x;
    (n[2] || []).forEach(function (ch) { walk(ch, depth + 1, cx, me); cx += ch[1]; });
  })(F.tree, 0, 0, null);
  const W = 1200, rowH = 17, H = (maxDepth + 1) * rowH + 2;
  const g = TS.canvas('flame-canvas', W, H);
  let zoomed = nodes[0], query = null;
  const unit = F.weight === 'gpu-time' ? TS.ns : function (v) { return v + ' launches'; };
  function hue(s) { let h = 0; for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0; return h; }
  function color(n) {
    const s = names[n.name];
    if (query && query.test(s)) return '#e056fd';
    if (n.depth === 0) return '#a5b1c2';
    if (s === '(no stack)' || /^thread: /.test(s)) return '#c8ccd4';
    if (n.leaf) return 'hsl(' + (20 + hue(s) % 25) + ',85%,' + (58 + hue(s) % 12) + '%)';
    if (/\.py:\d+\)$/.test(s)) return 'hsl(' + (95 + hue(s) % 40) + ',50%,' + (60 + hue(s) % 12) + '%)';
    return 'hsl(' + (200 + hue(s) % 35) + ',45%,' + (66 + hue(s) % 12) + '%)';
  }
  function geom(n) {
    const x0 = (n.x - zoomed.x) / zoomed.value * W, w = n.value / zoomed.value * W;
    return { x: x0, w: w, y: n.depth * rowH };
  }
  function onPath(n) { for (let z = zoomed; z; z = z.parent) if (z === n) return true; return false; }
  function visible(n) {
    if (n.depth < zoomed.depth) return onPath(n);
    return n.x + n.value > zoomed.x && n.x < zoomed.x + zoomed.value;
  }
  function draw() {
    g.clearRect(0, 0, W, H);
    g.font = '11px ui-monospace, Menlo, Consolas, monospace';
    nodes.forEach(function (n) {
      if (!visible(n)) return;
      let r = geom(n);
      if (n.depth < zoomed.depth) r = { x: 0, w: W, y: r.y };
      if (r.w < 0.4) return;
      g.fillStyle = color(n);
      g.fillRect(r.x, r.y, Math.max(r.w - 0.5, 0.4), rowH - 1);
      if (r.w > 30) {
        const chars = Math.floor((r.w - 6) / 6.6), s = names[n.name];
        g.fillStyle = '#1d2330';
        g.fillText(s.length > chars ? s.slice(0, Math.max(1, chars - 1)) + '\u2026' : s, r.x + 3, r.y + 12);
      }
    });
  }
  function hit(e) {
    const depth = Math.floor(e.offsetY / rowH);
    let found = null;
    nodes.forEach(function (n) {
      if (found || n.depth !== depth || !visible(n)) return;
      let r = geom(n);
      if (n.depth < zoomed.depth) r = { x: 0, w: W };
      if (e.offsetX >= r.x && e.offsetX < r.x + r.w) found = n;
    });
    return found;
  }
  const c = document.getElementById('flame-canvas');
  c.addEventListener('mousemove', function (e) {
    const n = hit(e);
    if (!n) { TS.tip(e, null); return; }
    TS.tip(e, names[n.name] + '\n' + unit(n.value) + ' \u00b7 ' + TS.pct(100 * n.value / F.total) + ' of all' +
      (zoomed !== nodes[0] ? ', ' + TS.pct(100 * n.value / zoomed.value) + ' of the zoomed frame' : ''));
  });
  c.addEventListener('mouseleave', function (e) { TS.tip(e, null); });
  c.addEventListener('click', function (e) { const n = hit(e); if (n) { zoomed = n; draw(); } });
  document.getElementById('flame-reset').addEventListener('click', function () { zoomed = nodes[0]; draw(); });
  document.getElementById('flame-search').addEventListener('input', function (e) {
    const q = e.target.value.trim();
    const out = document.getElementById('flame-match');
    query = null;
    if (q) {
      try { query = new RegExp(q, 'i'); } catch (err) { query = new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i'); }
      // A matching frame's weight counts once even when a frame below it matches too.
      let sum = 0;
      nodes.forEach(function (n) {
        if (!query.test(names[n.name])) return;
        for (let p = n.parent; p; p = p.parent) if (query.test(names[p.name])) return;
        sum += n.value;
      });
      out.textContent = 'matches: ' + unit(sum) + ' (' + TS.pct(100 * sum / F.total) + ')';
    } else out.textContent = '';
    draw();
  });
  TS.set('flame-note', 'Weighted by ' + (F.weight === 'gpu-time' ? 'GPU time of the kernels, copies and memsets each stack launched' : 'launch count') +
    ': ' + unit(F.total) + ' from ' + F.ops + ' ops; ' + F.ops_without_stack + ' ops without a host stack are under \u201c(no stack)\u201d. ' +
    F.stacks + ' distinct stacks' + (F.pruned ? '; ' + F.pruned + ' subtrees under 0.01% left out' : '') +
    '. Python frames green, native blue, GPU ops orange; \u201cthread: \u2026\u201d stands for the thread\u2019s start-up frames (libc, libstdc++). The same data as <code>tracesmith export -f folded</code>.');
  draw();
};

TS.main = function () {
  const A = TS.json('ts-analysis'), P = TS.json('ts-page'), M = TS.json('ts-memory');
  TS.header(A, P);
  TS.timeline(A, P);
  TS.named(A.kernels, A.kernel_ns, 'kernels-body', 'No kernels in the window.');
  TS.named(A.call_sites, A.kernel_ns, 'callsites-body', 'No host call stacks in this trace (captured without stacks).');
  TS.utilization(A);
  TS.steps(A);
  TS.appCounters(A);
  TS.memory(M, P);
  TS.copies(A);
  TS.flame(P);
  document.body.setAttribute('data-rendered', 'yes');
};
if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', TS.main);
else TS.main();
)JS";

}  // namespace tracesmith::report
