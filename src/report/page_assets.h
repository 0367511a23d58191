// The page's own style and script (plain CSS and JS written for this page;
// no third-party code), kept as raw string literals in page_*.cc.
#pragma once

namespace tracesmith::report {

extern const char kPageStyle[];        // page_style.cc
extern const char kPageScriptBase[];   // page_script_base.cc: helpers, header, charts
extern const char kPageScriptViews[];  // page_script_views.cc: timeline, memory, flame graph

}  // namespace tracesmith::report
