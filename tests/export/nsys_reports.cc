#include "export/nsys_reports.h"

#include <cmath>
#include <cstdio>

namespace tracesmith::testing {
namespace {

// Each report is one query giving (style, name, duration) per instance;
// the statistics are the same for all four.
const char* InstancesSql(NsysReport report) {
  switch (report) {
    case NsysReport::kCudaGpuKernSum:
      return "SELECT '' AS style, s.value AS name, k.end - k.start AS dur "
             "FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN StringIds AS s ON s.id = k.demangledName";
    case NsysReport::kCudaGpuKernSumBase:
      return "SELECT '' AS style, s.value AS name, k.end - k.start AS dur "
             "FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN StringIds AS s ON s.id = k.shortName";
    case NsysReport::kCudaApiSum:
      return "SELECT '' AS style, s.value AS name, r.end - r.start AS dur "
             "FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r JOIN StringIds AS s ON s.id = r.nameId";
    case NsysReport::kCudaGpuMemTimeSum:
      return "SELECT '' AS style, '[CUDA memcpy ' || e.label || ']' AS name, m.end - m.start AS "
             "dur "
             "FROM CUPTI_ACTIVITY_KIND_MEMCPY AS m JOIN ENUM_CUDA_MEMCPY_OPER AS e "
             "ON e.id = m.copyKind "
             "UNION ALL SELECT '', '[CUDA memset]', end - start FROM CUPTI_ACTIVITY_KIND_MEMSET";
    case NsysReport::kNvtxSum:
      // Range = "<domain name>:<text>" (the default domain has no name);
      // domains are the NvtxDomainCreate rows (eventType 75) of NVTX_EVENTS.
      return "SELECT CASE n.eventType WHEN 59 THEN 'PushPop' ELSE 'StartEnd' END AS style, "
             "COALESCE(d.text, '') || ':' || COALESCE(n.text, s.value, '') AS name, "
             "n.end - n.start AS dur "
             "FROM NVTX_EVENTS AS n LEFT JOIN StringIds AS s ON s.id = n.textId "
             "LEFT JOIN NVTX_EVENTS AS d ON d.eventType = 75 AND d.domainId = n.domainId "
             "WHERE n.eventType IN (59, 60) AND n.end IS NOT NULL";
  }
  return "";
}

std::string Thousands(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return v < 0 ? "-" + out : out;
}

std::string Fixed1(double v) {
  double r = std::round(v * 10) / 10;
  int64_t whole = static_cast<int64_t>(r);
  int tenth = static_cast<int>(std::llround(std::fabs(r - static_cast<double>(whole)) * 10));
  return Thousands(whole) + "." + std::to_string(tenth);
}

}  // namespace

const char* NsysReportName(NsysReport report) {
  switch (report) {
    case NsysReport::kCudaGpuKernSum:
      return "cuda_gpu_kern_sum";
    case NsysReport::kCudaGpuKernSumBase:
      return "cuda_gpu_kern_sum_base";
    case NsysReport::kCudaApiSum:
      return "cuda_api_sum";
    case NsysReport::kCudaGpuMemTimeSum:
      return "cuda_gpu_mem_time_sum";
    case NsysReport::kNvtxSum:
      return "nvtx_sum";
  }
  return "";
}

StatusOr<std::vector<NsysSummaryRow>> RunNsysReport(sqlite3* db, NsysReport report) {
  // Median: the middle instance, or the mean of the two middle ones.
  // StdDev: sample standard deviation (n - 1), 0 for one instance.
  std::string sql = std::string("WITH d AS (") + InstancesSql(report) +
                    "), "
                    "g AS (SELECT style, name, SUM(dur) AS total, COUNT(*) AS n, AVG(dur) AS avg, "
                    "MIN(dur) AS mn, MAX(dur) AS mx FROM d GROUP BY style, name), "
                    "r AS (SELECT d.style, d.name, d.dur, ROW_NUMBER() OVER "
                    "(PARTITION BY d.style, d.name ORDER BY d.dur) AS i, g.n, g.avg FROM d "
                    "JOIN g ON g.style = d.style AND g.name = d.name), "
                    "m AS (SELECT style, name, SUM((dur - avg) * (dur - avg)) AS sq FROM r "
                    "GROUP BY style, name), "
                    "mid AS (SELECT style, name, AVG(dur) AS med FROM r "
                    "WHERE i IN ((n + 1) / 2, (n + 2) / 2) GROUP BY style, name) "
                    "SELECT 100.0 * g.total / (SELECT SUM(total) FROM g), g.total, g.n, g.avg, "
                    "mid.med, g.mn, g.mx, CASE WHEN g.n > 1 THEN m.sq / (g.n - 1) ELSE 0 END, "
                    "g.style, g.name FROM g "
                    "JOIN m ON m.style = g.style AND m.name = g.name "
                    "JOIN mid ON mid.style = g.style AND mid.name = g.name "
                    "ORDER BY g.total DESC, g.name, g.style";
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
    return Internal(StrFormat("%s: %s", NsysReportName(report), sqlite3_errmsg(db)));
  std::vector<NsysSummaryRow> rows;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    NsysSummaryRow row;
    row.time_percent = sqlite3_column_double(st, 0);
    row.total = sqlite3_column_int64(st, 1);
    row.count = sqlite3_column_int64(st, 2);
    row.avg = sqlite3_column_double(st, 3);
    row.med = sqlite3_column_double(st, 4);
    row.min = sqlite3_column_int64(st, 5);
    row.max = sqlite3_column_int64(st, 6);
    row.stddev = std::sqrt(sqlite3_column_double(st, 7));
    row.style = reinterpret_cast<const char*>(sqlite3_column_text(st, 8));
    row.name = reinterpret_cast<const char*>(sqlite3_column_text(st, 9));
    rows.push_back(std::move(row));
  }
  std::string err = rc == SQLITE_DONE ? "" : sqlite3_errmsg(db);
  sqlite3_finalize(st);
  if (!err.empty()) return Internal(StrFormat("%s: %s", NsysReportName(report), err.c_str()));
  return rows;
}

std::string FormatNsysReport(NsysReport report, const std::vector<NsysSummaryRow>& rows) {
  const char* count = "Instances";
  const char* name = "Name";
  if (report == NsysReport::kCudaApiSum) count = "Num Calls";
  if (report == NsysReport::kCudaGpuMemTimeSum) count = "Count", name = "Operation";
  if (report == NsysReport::kNvtxSum) name = "Range";
  std::vector<std::vector<std::string>> cells = {{"Time (%)", "Total Time (ns)", count, "Avg (ns)",
                                                  "Med (ns)", "Min (ns)", "Max (ns)",
                                                  "StdDev (ns)"}};
  if (report == NsysReport::kNvtxSum) cells[0].push_back("Style");
  cells[0].push_back(name);
  for (const NsysSummaryRow& r : rows) {
    std::vector<std::string> c = {Fixed1(r.time_percent), Thousands(r.total), Thousands(r.count),
                                  Fixed1(r.avg),          Fixed1(r.med),      Thousands(r.min),
                                  Thousands(r.max),       Fixed1(r.stddev)};
    if (report == NsysReport::kNvtxSum) c.push_back(r.style);
    c.push_back(r.name);
    cells.push_back(std::move(c));
  }
  std::vector<size_t> width(cells[0].size(), 0);
  for (const auto& c : cells)
    for (size_t i = 0; i < c.size(); ++i) width[i] = std::max(width[i], c[i].size());
  std::string out;
  auto line = [&](const std::vector<std::string>& c) {
    for (size_t i = 0; i < c.size(); ++i) {
      bool last = i + 1 == c.size();
      if (i > 0) out += "  ";
      if (last) {
        out += c[i];
      } else {
        out.append(width[i] - c[i].size(), ' ');
        out += c[i];
      }
    }
    out += "\n";
  };
  line(cells[0]);
  std::vector<std::string> rule;
  for (size_t i = 0; i < width.size(); ++i)
    rule.push_back(std::string(i + 1 == width.size() ? cells[0][i].size() : width[i], '-'));
  line(rule);
  for (size_t i = 1; i < cells.size(); ++i) line(cells[i]);
  return out;
}

}  // namespace tracesmith::testing
