// The run report's stylesheet, inlined into every page (report.h): decision colours shared by
// the timeline bars, the experiment headers and the legend; print-friendly, no web fonts.
#pragma once

namespace recur::agent {

inline constexpr const char* kReportCss = R"css(
:root { --keep: #2e7d32; --revert: #c62828; --none: #78909c; --pending: #f9a825; --ink: #1b1f23; --muted: #5f6b76; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); margin: 0 auto; max-width: 1000px; padding: 16px; }
h1 { font-size: 22px; margin: 0 0 8px; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; }
code, .mono, td.num, td.knob, td.value { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
dl.summary { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dl.summary dt { color: var(--muted); }
table { border-collapse: collapse; margin: 6px 0; } th, td { text-align: left; padding: 2px 8px; border-bottom: 1px solid #eee; vertical-align: top; }
td.num { text-align: right; white-space: nowrap; } .timeline-table td:not(:nth-child(3)) { white-space: nowrap; }
.decision-keep { --c: var(--keep); } .decision-revert { --c: var(--revert); } .decision-none { --c: var(--none); } .decision-pending { --c: var(--pending); }
.badge { display: inline-block; padding: 0 6px; border-radius: 3px; color: #fff; background: var(--c, var(--none)); font-size: 12px; }
svg text { font: 11px system-ui, sans-serif; fill: var(--muted); }
svg .tl-label { fill: var(--ink); } svg .grid { stroke: #e4e4e4; } svg .frame { fill: none; stroke: #ccc; }
svg .tl-bar { fill: var(--c); } svg .tl-bar.tier-4 { stroke: #000; stroke-width: 1; }
svg .series { fill: none; stroke: #90a4ae; } svg .point { fill: #1565c0; } svg .ci, svg .ci-cap { stroke: #1565c0; stroke-width: 1.5; }
svg .threshold { stroke: var(--revert); stroke-dasharray: 5 4; } svg .threshold-label { fill: var(--revert); }
.legend span { margin-right: 14px; } .legend .badge { width: 10px; height: 10px; padding: 0; vertical-align: middle; }
.metric-grid { display: flex; flex-wrap: wrap; gap: 4px 24px; } figure.metric { margin: 8px 0; width: 470px; } figure.metric figcaption { font-weight: 600; }
details.experiment { border-left: 4px solid var(--c); margin: 6px 0; padding: 2px 10px; background: #fafafa; }
details.experiment > summary { cursor: pointer; } details.experiment dl { display: grid; grid-template-columns: max-content 1fr; gap: 0 12px; }
.attribution .row { display: grid; grid-template-columns: 260px 220px 1fr; gap: 8px; align-items: center; }
.attr-track { background: #e8eaf6; height: 10px; } .attr-bar { background: #3949ab; height: 10px; }
tr.changed td.value.final { background: #e8f5e9; font-weight: 600; }
.missing { color: var(--revert); } .muted, .empty { color: var(--muted); }
)css";

}  // namespace recur::agent
