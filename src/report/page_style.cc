// The report page's style sheet (inline in the page).
#include "page_assets.h"

namespace tracesmith::report {

const char kPageStyle[] = R"CSS(
:root { --fg: #1d2330; --muted: #667085; --line: #e4e7ec; --bg: #ffffff; --panel: #f8f9fb;
  --accent: #3867d6; --kernel: #3867d6; --copy: #20bf6b; --warn: #eb3b5a; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--fg); background: var(--bg); }
header.top { padding: 18px 28px 10px; border-bottom: 1px solid var(--line); background: var(--panel); }
header.top h1 { margin: 0 0 8px; font-size: 20px; }
nav { padding: 6px 28px; border-bottom: 1px solid var(--line); position: sticky; top: 0;
  background: var(--bg); z-index: 5; }
nav a { margin-right: 14px; color: var(--accent); text-decoration: none; font-size: 13px; }
main { padding: 0 28px 40px; max-width: 1500px; }
section { margin-top: 26px; }
section h2 { font-size: 17px; margin: 0 0 6px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
.note { color: var(--muted); font-size: 12.5px; margin: 4px 0 10px; }
table.kv td { padding: 1px 14px 1px 0; vertical-align: top; }
table.kv td:first-child { color: var(--muted); white-space: nowrap; }
table.grid { border-collapse: collapse; font-size: 12.5px; margin: 6px 0; }
table.grid th, table.grid td { border-bottom: 1px solid var(--line); padding: 3px 10px 3px 0; text-align: right; }
table.grid th:first-child, table.grid td:first-child { text-align: left; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
ul.findings li { margin: 3px 0; }
.chart svg { display: block; }
.chart text { font-size: 12px; fill: var(--fg); }
.chart .label { fill: var(--fg); }
.chart .value { fill: var(--muted); }
.bar { fill: var(--kernel); }
.bar.copy { fill: var(--copy); }
.bar.outlier { fill: var(--warn); }
.legend span { display: inline-block; margin-right: 12px; font-size: 12px; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: -1px; }
.controls { margin: 6px 0; display: flex; gap: 10px; align-items: center; flex-wrap: wrap; }
.controls input[type=search] { width: 320px; padding: 3px 6px; }
button { font: inherit; font-size: 12.5px; padding: 2px 10px; cursor: pointer; }
canvas { display: block; border: 1px solid var(--line); cursor: crosshair; }
#ts-tip { position: fixed; pointer-events: none; background: #1d2330; color: #fff; padding: 5px 8px;
  border-radius: 4px; font-size: 12px; max-width: 640px; z-index: 10; display: none;
  white-space: pre-wrap; word-break: break-all; }
.empty { color: var(--muted); font-style: italic; }
)CSS";

}  // namespace tracesmith::report
