// The report page (docs/report.md): one self-contained HTML file, the
// charting library (dygraphs, from Debian's libjs-dygraphs) and the page's
// own script and style inlined, the runs' data as one JSON element. It
// loads nothing: its Content-Security-Policy allows no network at all.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "report/run_data.h"
#include "util/result.h"

namespace sexpgpu::report {

// Where libjs-dygraphs puts its files on Debian.
inline constexpr const char* kDygraphsDir = "/usr/share/javascript/dygraphs";

struct ChartLibrary {
  std::string js_path;  // the file read
  std::string js, css;  // css is empty where the package has none beside js
};

// Reads dygraph.min.js (and dygraph.min.css beside it) from `js_path` when
// given (SEXPGPU_DYGRAPHS), else from kDygraphsDir; fails naming the file and
// the package that provides it.
Result<ChartLibrary> load_dygraphs(const std::string& js_path);

// Text for inside a <script> element: "</script" and "<!--" cannot end or
// change the element (a JS string or comment may hold them).
std::string script_safe(std::string_view js);
// A JSON document for inside <script type="application/json">: <, > and &
// as \u escapes, so no text of a run can close the element.
std::string json_for_script(const json& j);
// Text for HTML: & < > " ' as entities.
std::string html_escape(std::string_view text);

// The data the page draws: runs, series (each run's [step, wall_s, value]
// points), the timeline, sweeps.
json page_data(const Report& report, const std::vector<std::string>& series,
               const std::string& title, const std::string& version, const std::string& generated);

// The whole page.
std::string render_page(const json& data, const ChartLibrary& library);

}  // namespace sexpgpu::report
