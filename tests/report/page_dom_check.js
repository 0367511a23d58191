// Runs the report page's script under node against a minimal DOM stub: the
// script must parse, render every section without throwing, draw on both
// canvases, and survive the interactions (timeline drag/wheel/reset, flame
// click/search/reset); with --counters, the program's counters' rows; with
// --gpu-metrics, the GPU metrics' rows (a band, the mean's line, the scale).
// Usage: node page_dom_check.js report.html [--counters] [--gpu-metrics]
'use strict';
const fs = require('fs');
const vm = require('vm');

const html = fs.readFileSync(process.argv[2], 'utf8');
const blocks = {};
const jsonRe = /<script type="application\/json" id="([\w-]+)">([\s\S]*?)<\/script>/g;
let m;
while ((m = jsonRe.exec(html))) blocks[m[1]] = m[2];
const code = html.match(/<script>([\s\S]*?)<\/script>/);
if (!code) { console.error('no inline script'); process.exit(1); }

let drawn = { timeline: 0, flame: 0 };
const rects = { timeline: [], flame: [] }, texts = { timeline: [], flame: [] };
function makeElement(id) {
  const listeners = {};
  const el = {
    id, innerHTML: '', textContent: blocks[id] !== undefined ? blocks[id] : '', style: {}, width: 0, height: 0,
    attrs: {},
    setAttribute(k, v) { this.attrs[k] = v; },
    insertAdjacentHTML(where, h) { this.innerHTML += h; },
    addEventListener(type, fn) { (listeners[type] = listeners[type] || []).push(fn); },
    fire(type, ev) { (listeners[type] || []).forEach((fn) => fn(Object.assign({ preventDefault() {} }, ev))); },
    getContext() {
      const key = id.startsWith('flame') ? 'flame' : 'timeline';
      return new Proxy({}, {
        get(target, prop) {
          if (prop === 'fillRect') return (x, y, w, h) => { drawn[key]++; rects[key].push([x, y, w, h, target.fillStyle]); };
          if (prop === 'fillText') return (t, x, y) => { texts[key].push([String(t), x, y]); };
          if (prop in target) return target[prop];
          return () => {};
        },
        set(target, prop, v) { target[prop] = v; return true; },
      });
    },
  };
  return el;
}
const elements = {};
const document = {
  readyState: 'complete',
  body: makeElement('body'),
  getElementById(id) { return elements[id] || (elements[id] = makeElement(id)); },
  addEventListener() {},
};
const window = { devicePixelRatio: 2, innerWidth: 1400 };
vm.runInNewContext(code[1], { document, window, console, Math, JSON, String, Number, RegExp });

const failures = [];
if (document.body.attrs['data-rendered'] !== 'yes') failures.push('page did not finish rendering');
for (const id of ['ts-header', 'findings-body', 'kernels-body', 'callsites-body', 'utilization-body',
  'steps-body', 'memory-body', 'copies-body'])
  if (!elements[id] || !elements[id].innerHTML) failures.push(id + ' is empty');
if (!drawn.timeline) failures.push('timeline canvas not drawn');
if (!drawn.flame) failures.push('flame canvas not drawn');
// --counters, --gpu-metrics: the program's counters and the GPU metrics are
// drawn under the streams, each a row with its name and a line (1-px columns
// in the plot, inside the row); fn(series, row top, the row's columns).
const page = JSON.parse(blocks['ts-page']);
function checkRows(what, list, fn) {
  if (!list.length) failures.push('no ' + what + ' in the page');
  list.forEach(function (c) {
    const label = texts.timeline.find(function (t) { return t[0].length > 3 && c.name.startsWith(t[0].replace('\u2026', '')); });
    if (!label) { failures.push(what + ' ' + c.name + ': no row'); return; }
    const top = label[2] - 15, line = rects.timeline.filter(function (r) { return r[2] === 1 && r[1] >= top && r[1] < top + 40 && r[0] >= 230; });
    if (line.length < 100) failures.push(what + ' ' + c.name + ': ' + line.length + ' line columns');
    if (fn) fn(c, top, line);
  });
}
if (process.argv.includes('--counters')) checkRows('counter', page.timeline.counters || []);
// A metric: the samples' range as a light band, the mean as a dark line over
// it (at the first bin's mean in the first column), percent on 0..100; its
// tooltip gives the mean.
if (process.argv.includes('--gpu-metrics')) {
  checkRows('GPU metric', page.timeline.gpu_metrics || [], function (c, top, line) {
    const mean = line.filter(function (r) { return r[3] === 1.5 && r[4] === '#3465a4'; });
    if (mean.length < 100) failures.push('GPU metric ' + c.name + ': ' + mean.length + ' mean columns');
    const bottom = c.unit === '%' ? 0 : c.min, range = (c.unit === '%' ? 100 : c.max) - bottom || 1;
    const want = top + 35 - 30 * (c.mean[0] - bottom) / range - 0.75, first = mean.find(function (r) { return r[0] === 230; });
    if (c.mean[0] !== null && (!first || Math.abs(first[1] - want) > 0.01)) failures.push('GPU metric ' + c.name + ': first column not at its mean ' + c.mean[0]);
    if (c.unit === '%' && !texts.timeline.some(function (t) { return t[0] === '0 .. 100' && t[2] === top + 31; }))
      failures.push('GPU metric ' + c.name + ': not on 0 .. 100');
    elements['timeline-canvas'].fire('mousemove', { offsetX: 240, offsetY: top + 20, clientX: 240, clientY: top + 20 });
    const tip = elements['ts-tip'] ? elements['ts-tip'].textContent : '';
    if (!tip.startsWith(c.name) || !tip.includes('mean ')) failures.push('GPU metric ' + c.name + ': tooltip ' + JSON.stringify(tip));
  });
}
// Interactions.
const tl = elements['timeline-canvas'], fl = elements['flame-canvas'];
tl.fire('mousedown', { offsetX: 300, offsetY: 40 });
tl.fire('mousemove', { offsetX: 600, offsetY: 40, clientX: 600, clientY: 40 });
tl.fire('mouseup', {});
tl.fire('wheel', { offsetX: 500, offsetY: 40, deltaY: -1 });
tl.fire('mousemove', { offsetX: 500, offsetY: 50, clientX: 500, clientY: 50 });
elements['timeline-reset'].fire('click', {});
fl.fire('mousemove', { offsetX: 10, offsetY: 20, clientX: 10, clientY: 20 });
fl.fire('click', { offsetX: 10, offsetY: 20 });
elements['flame-search'].fire('input', { target: { value: 'gemm|(no stack)' } });
elements['flame-search'].fire('input', { target: { value: '([' } });  // not a regex: taken literally
elements['flame-reset'].fire('click', {});
if (failures.length) { console.error('FAIL: ' + failures.join('; ')); process.exit(1); }
console.log('OK: sections rendered; fillRect calls: timeline ' + drawn.timeline + ', flame ' + drawn.flame +
  '; ' + (elements['flame-match'].textContent || 'no search match text'));
