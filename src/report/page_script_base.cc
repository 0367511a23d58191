// The report page's script, part 1: reading the embedded JSON, formatting,
// the header, findings and the bar charts (top kernels, call sites,
// utilization and idle causes, steps, copies). Plain JS, no library: the page
// must open offline, and these are a few dozen SVG rectangles each.
#include "page_assets.h"

namespace tracesmith::report {

const char kPageScriptBase[] = R"JS(
'use strict';
const TS = {};
TS.json = function (id) {
  const node = document.getElementById(id);
  if (!node) return null;
  const text = node.textContent.trim();
  return text ? JSON.parse(text) : null;
};
TS.esc = function (s) {
  return String(s).replace(/[&<>"']/g, function (c) {
    return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c];
  });
};
TS.ns = function (ns) {
  ns = Number(ns);
  if (ns < 1e3) return ns.toFixed(0) + ' ns';
  if (ns < 1e6) return (ns / 1e3).toFixed(ns < 1e4 ? 2 : 1) + ' \u00b5s';
  if (ns < 1e9) return (ns / 1e6).toFixed(ns < 1e7 ? 2 : 1) + ' ms';
  return (ns / 1e9).toFixed(3) + ' s';
};
TS.bytes = function (b) {
  b = Number(b);
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return (i ? b.toFixed(2) : b.toFixed(0)) + ' ' + u[i];
};
TS.pct = function (v) { return Number(v).toFixed(v < 10 ? 2 : 1) + '%'; };
TS.stepRange = function (a, b) { return a === b ? 'step ' + a : 'steps ' + a + '-' + b; };
TS.set = function (id, html) { const e = document.getElementById(id); if (e) e.innerHTML = html; return e; };
TS.tip = function (ev, text) {
  const t = document.getElementById('ts-tip');
  if (!t) return;
  if (text == null) { t.style.display = 'none'; return; }
  t.textContent = text;
  t.style.display = 'block';
  const x = Math.min(ev.clientX + 14, window.innerWidth - 420);
  t.style.left = Math.max(0, x) + 'px';
  t.style.top = (ev.clientY + 16) + 'px';
};
// Shortens long C++ names for labels; the tooltip keeps the whole name.
TS.short = function (s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + '\u2026' : s; };
// A counter's value in at most 6 significant digits (as the page's data holds it).
TS.num = function (v) { return Math.abs(v) >= 1e9 || (v !== 0 && Math.abs(v) < 1e-4) ? v.toExponential(4) : String(+v.toPrecision(6)); };

// A horizontal bar chart as SVG markup. rows: {label, value, text, cls, tip}.
TS.bars = function (rows, opts) {
  opts = opts || {};
  const width = opts.width || 1100, labelW = opts.labelWidth || 470, rowH = 20;
  const max = Math.max.apply(null, rows.map(function (r) { return r.value; }).concat([1e-12]));
  const barW = width - labelW - (opts.textWidth || 300);
  let svg = '<svg width="' + width + '" height="' + (rows.length * rowH + 4) + '">';
  rows.forEach(function (r, i) {
    const y = i * rowH + 2, w = Math.max(1, barW * r.value / max);
    svg += '<g><title>' + TS.esc(r.tip || r.label) + '</title>' +
      '<text class="label" x="0" y="' + (y + 14) + '">' + TS.esc(TS.short(r.label, 72)) + '</text>' +
      '<rect class="bar ' + (r.cls || '') + '" x="' + labelW + '" y="' + (y + 3) + '" width="' +
      w.toFixed(1) + '" height="' + (rowH - 6) + '"></rect>' +
      '<text class="value" x="' + (labelW + w + 6).toFixed(1) + '" y="' + (y + 14) + '">' +
      TS.esc(r.text) + '</text></g>';
  });
  return svg + '</svg>';
};

TS.header = function (A, P) {
  const m = P.meta, rows = [];
  m.processes.forEach(function (p) {
    let what = p.name || '?';
    if (p.rank != null) what = 'rank ' + p.rank + ': ' + what;
    rows.push(['Program', '<span class="mono">' + TS.esc(what) + ' (pid ' + p.pid + ')</span>']);
    if (p.cmdline) rows.push(['Command line', '<code>' + TS.esc(p.cmdline) + '</code>']);
    if (p.hostname) rows.push(['Host', TS.esc(p.hostname)]);
  });
  m.devices.forEach(function (d) {
    rows.push(['GPU ' + d.device + (m.processes.length > 1 ? ' (pid ' + d.pid + ')' : ''), TS.esc(d.name || '?') + (d.sm_count ? ' \u00b7 ' + d.sm_count + ' SMs' : '') +
      (d.memory_bytes ? ' \u00b7 ' + TS.bytes(d.memory_bytes) : '')]);
  });
  const w = A.window, wu = A.warmup;
  rows.push(['Duration', TS.ns(m.duration_ns) + ' traced; analysed ' + TS.ns(w.wall_ns) +
    (w.active_region ? (wu ? ' (the steady state, step ' + (wu.steps + 1) + ' to the last GPU op; start-up ' :
      ' (first kernel to last GPU op; start-up ') + TS.ns(A.startup.end_ns - A.startup.begin_ns) +
      (wu ? ', warm-up ' + TS.ns(wu.end_ns - wu.begin_ns) + ' (' + TS.stepRange(1, wu.steps) + ', ' + TS.pct(wu.share_pct) +
        ' of first kernel to last GPU op)' : '') +
      ', teardown ' + TS.ns(A.teardown.end_ns - A.teardown.begin_ns) + ' apart)' : '') +
    (w.note ? ' \u00b7 ' + TS.esc(w.note) : '')]);
  rows.push(['Events', A.events + ' analysed; ' + A.kernel_count + ' kernels, ' + TS.ns(A.kernel_ns) + ' of kernel time']);
  if (m.capture_cost.length)
    m.capture_cost.forEach(function (c) { rows.push(['Capture cost', 'pid ' + c.pid + ': ' + TS.esc(c.line)]); });
  else rows.push(['Capture cost', '<span class="empty">not recorded in this trace</span>']);
  // The capture's loss counters (drops, ring overflows, refused buffers).
  const drops = m.stats.filter(function (s) { return s.value !== 0; });
  rows.push(['Drops', drops.length ? drops.map(function (s) {
    return '<span class="mono">' + TS.esc(s.name) + ' = ' + s.value + '</span>';
  }).join(', ') : m.stats.length ? 'none (' + m.stats.length + ' loss counters, all 0)'
    : '<span class="empty">no loss counters in this trace</span>']);
  let html = '<h1>TraceSmith report: ' + TS.esc(A.source) + '</h1><table class="kv">';
  rows.forEach(function (r) { html += '<tr><td>' + r[0] + '</td><td>' + r[1] + '</td></tr>'; });
  TS.set('ts-header', html + '</table>');
  // A job's cross-rank findings (stragglers, waiting, step variance) first.
  const findings = ((A.ranks && A.ranks.findings) || []).concat(A.findings);
  TS.set('findings-body', findings.length ? '<ul class="findings">' + findings.map(function (f) {
    return '<li>' + TS.esc(f) + '</li>';
  }).join('') + '</ul>' : '<p class="empty">No findings.</p>');
};

TS.named = function (list, total, id, empty) {
  if (!list.length) { TS.set(id, '<p class="empty">' + empty + '</p>'); return; }
  const top = list.slice(0, 20);
  TS.set(id, TS.bars(top.map(function (k) {
    const d = k.duration;
    return { label: k.name, value: d.total_ns,
      text: TS.ns(d.total_ns) + '  ' + TS.pct(k.share_pct) + '  \u00d7' + d.count,
      tip: k.name + '\n' + TS.ns(d.total_ns) + ' in ' + d.count + ' launches (' + TS.pct(k.share_pct) +
        ' of kernel time)\nmean ' + TS.ns(d.mean_ns) + ', p50 ' + TS.ns(d.p50_ns) + ', p95 ' + TS.ns(d.p95_ns) +
        ', max ' + TS.ns(d.max_ns) };
  })) + (list.length > top.length ? '<p class="note">' + (list.length - top.length) +
    ' more, ' + TS.ns(total - top.reduce(function (s, k) { return s + k.duration.total_ns; }, 0)) +
    ' in all (analyze --json lists every one).</p>' : ''));
};

TS.IDLE = [['host_launch', '#f7b731', 'waiting for the host to launch'],
  ['launch_latency', '#fa8231', 'launch latency'], ['sync', '#eb3b5a', 'host synchronization'],
  ['other_stream', '#8854d0', 'waiting on another stream'], ['nothing_queued', '#a5b1c2', 'nothing queued']];

TS.utilization = function (A) {
  const wall = A.window.wall_ns;
  let html = '<div class="legend"><span><i style="background:var(--kernel)"></i>busy</span>';
  TS.IDLE.forEach(function (c) { html += '<span><i style="background:' + c[1] + '"></i>idle: ' + c[2] + '</span>'; });
  html += '</div>';
  const rows = A.devices.map(function (d) { return { name: 'GPU ' + d.device, busy: d.busy_ns, idle: d.idle_ns }; })
    .concat(A.streams.map(function (s) { return { name: s.name, busy: s.busy_ns, idle: s.idle_ns }; }));
  const W = 1100, L = 240, H = 20, bw = W - L - 120;
  let svg = '<svg width="' + W + '" height="' + (rows.length * H + 4) + '">';
  rows.forEach(function (r, i) {
    const y = i * H + 2;
    let x = L, tip = r.name + ': busy ' + TS.ns(r.busy) + ' (' + TS.pct(100 * r.busy / Math.max(1, wall)) + ')';
    svg += '<text x="0" y="' + (y + 14) + '">' + TS.esc(r.name) + '</text>';
    const parts = [['busy', 'var(--kernel)', r.busy]].concat(TS.IDLE.map(function (c) { return [c[2], c[1], r.idle[c[0]] || 0]; }));
    parts.forEach(function (p) {
      const w = bw * p[2] / Math.max(1, wall);
      if (p[0] !== 'busy' && p[2]) tip += '\nidle, ' + p[0] + ': ' + TS.ns(p[2]);
      if (w > 0) svg += '<rect x="' + x.toFixed(1) + '" y="' + (y + 3) + '" width="' + w.toFixed(1) + '" height="' + (H - 6) + '" fill="' + p[1] + '"></rect>';
      x += w;
    });
    svg += '<rect x="' + L + '" y="' + y + '" width="' + bw + '" height="' + H + '" fill="transparent"><title>' + TS.esc(tip) + '</title></rect>';
    svg += '<text class="value" x="' + (L + bw + 8) + '" y="' + (y + 14) + '">' + TS.pct(100 * r.busy / Math.max(1, wall)) + ' busy</text>';
  });
  TS.set('utilization-body', html + '<div class="chart">' + svg + '</svg></div>' +
    '<p class="note">Each bar is the analysed window (' + TS.ns(wall) + '). Idle time is split by its cause ' +
    '(docs/analysis.md): what the GPU or stream was waiting for while nothing ran.</p>');
};

TS.steps = function (A) {
  const s = A.steps;
  if (!s || !s.list || !s.list.length) {
    TS.set('steps-body', '<p class="empty">No steps detected (fewer than 3 iterations, no ProfilerStep ranges and no repeating kernel sequence).</p>');
    return;
  }
  const outliers = {}, warmup = s.warmup || 0;
  (s.outliers || []).forEach(function (i) { outliers[i] = true; });
  const rows = s.list.map(function (st, i) {
    const d = st.end_ns - st.begin_ns;
    return { label: 'step ' + (i + 1), value: d, cls: outliers[i + 1] ? 'outlier' : '',
      text: TS.ns(d) + '  GPU busy ' + TS.ns(st.gpu_busy_ns) + ' (' + TS.pct(100 * st.gpu_busy_ns / Math.max(1, d)) + ')  ' + st.kernels + ' kernels' +
        (i < warmup ? '  warm-up' : ''),
      tip: 'step ' + (i + 1) + (i < warmup ? ' (outlier, warm-up: not in the analysed window)' : outliers[i + 1] ? ' (outlier)' : '') +
        ': ' + TS.ns(d) + ', GPU busy ' + TS.ns(st.gpu_busy_ns) };
  });
  const note = '<p class="note">' + s.list.length + ' steps, ' + TS.esc(s.method) + (s.anchor ? ' (anchor: ' + TS.esc(TS.short(s.anchor, 120)) + ')' : '') +
    '; median ' + TS.ns(s.median_ns) + '; outliers in red' +
    (warmup ? '; ' + TS.stepRange(1, warmup) + ': the warm-up, left out of the other figures (analyze --with-warmup keeps it)' : '') + '.</p>';
  if (rows.length <= 60) {
    TS.set('steps-body', note + '<div class="chart">' + TS.bars(rows, { labelWidth: 90, textWidth: 380 }) + '</div>');
    return;
  }
  // Many steps: one column per step (or, past one per pixel, the longest of
  // the steps under each pixel), height = duration.
  const W = 1100, H = 170, L = 70, plotW = W - L - 10, n = rows.length;
  const max = Math.max.apply(null, rows.map(function (r) { return r.value; }));
  const cols = Math.min(n, plotW);
  let svg = '<svg width="' + W + '" height="' + (H + 20) + '"><text x="0" y="12">' + TS.ns(max) + '</text><text x="0" y="' + H + '">0</text>';
  for (let c = 0; c < cols; c++) {
    const a = Math.floor(c * n / cols), b = Math.max(a + 1, Math.floor((c + 1) * n / cols));
    let top = a;
    for (let i = a; i < b; i++) if (rows[i].value > rows[top].value) top = i;
    const out = rows[top].cls === 'outlier';  // the step drawn
    const h = Math.max(1, (H - 10) * rows[top].value / max), x = L + plotW * c / cols;
    svg += '<rect class="bar' + (out ? ' outlier' : '') + '" x="' + x.toFixed(1) + '" y="' + (H - h).toFixed(1) + '" width="' +
      Math.max(0.8, plotW / cols - 0.4).toFixed(1) + '" height="' + h.toFixed(1) + '"><title>' +
      TS.esc((b - a > 1 ? 'steps ' + (a + 1) + '-' + b + ', longest: ' : '') + rows[top].tip) + '</title></rect>';
  }
  svg += '<text class="value" x="' + L + '" y="' + (H + 16) + '">step 1</text><text class="value" x="' + (W - 10) + '" y="' + (H + 16) +
    '" text-anchor="end">step ' + n + '</text></svg>';
  TS.set('steps-body', note + '<p class="note">One column per ' + (n > cols ? (n / cols).toFixed(1) + ' steps: the longest of them' : 'step') +
    ' (hover for its time).</p><div class="chart">' + svg + '</div>');
};

// The program's own counters (tracesmith.counter; analyze's app_counters) under the steps:
// each counter's mean per step as a line, step 1 at the left, its min and max at the side.
TS.appCounters = function (A) {
  const a = A.app_counters, e = document.getElementById('steps-body');
  if (!a || !a.counters || !a.counters.length || !e) return;
  const W = 1100, H = 56, L = 160, plotW = W - L - 90;
  let html = '<p class="note">The program\'s own counters (tracesmith.counter), the mean of each in every step' +
    ' (the first 8 counters; analyze gives min, mean and max per step):</p><div class="chart">';
  a.counters.slice(0, 8).forEach(function (c) {
    const n = c.steps.length, vals = c.steps.map(function (s) { return s.mean; });
    const have = vals.filter(function (v) { return v !== null; });
    if (!n || !have.length) return;
    const lo = Math.min.apply(null, have), hi = Math.max.apply(null, have), span = hi - lo || 1;
    let pts = '';
    vals.forEach(function (v, i) {
      if (v === null) return;
      pts += (L + plotW * (i + 0.5) / n).toFixed(1) + ',' + (H - 6 - (H - 12) * (v - lo) / span).toFixed(1) + ' ';
    });
    html += '<svg class="app-counter" width="' + W + '" height="' + H + '"><text x="0" y="' + (H / 2 + 4) + '">' +
      TS.esc(TS.short(c.name, 24)) + '</text><polyline fill="none" stroke="#3465a4" stroke-width="1.5" points="' + pts +
      '"><title>' + TS.esc(c.name + ': ' + c.values + ' values; per step ' + lo.toPrecision(4) + ' to ' + hi.toPrecision(4)) +
      '</title></polyline><text class="value" x="' + (L + plotW + 6) + '" y="12">' + hi.toPrecision(4) + '</text><text class="value" x="' +
      (L + plotW + 6) + '" y="' + (H - 4) + '">' + lo.toPrecision(4) + '</text></svg>' +
      (c.correlation && c.correlation.note ? '<p class="note">' + TS.esc(c.correlation.note) + '.</p>' : '');
  });
  e.insertAdjacentHTML('beforeend', html + '</div>');
};

TS.copies = function (A) {
  if (!A.copies.length) { TS.set('copies-body', '<p class="empty">No memcpy or memset in the window.</p>'); return; }
  TS.set('copies-body', '<div class="chart">' + TS.bars(A.copies.map(function (c) {
    return { label: c.direction, value: c.gb_per_s, cls: 'copy',
      text: c.gb_per_s.toFixed(1) + ' GB/s  ' + TS.bytes(c.bytes) + ' in ' + c.count + ' ops, ' + TS.ns(c.busy_ns) + ' busy' };
  }), { labelWidth: 110, textWidth: 400 }) + '</div><p class="note">Bandwidth = bytes / busy time of each direction (overlapping copies counted once).</p>');
};
)JS";

}  // namespace tracesmith::report
