// Text and JSON writers of the JobReport (job_report.h).
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "tracesmith/analysis/report.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/job/job_report.h"

namespace tracesmith::analysis {
namespace {

using Json = nlohmann::ordered_json;

// `v`, or null when it is not known.
template <class T>
Json IfKnown(bool known, const T& v) {
  return known ? Json(v) : Json(nullptr);
}
// `v`, or null when 0 (unknown).
template <class T>
Json NonZero(T v) {
  return IfKnown(v != 0, v);
}

double Pct(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * double(part) / double(whole) : 0;
}

std::string Bound(const ProcessClock& c) {
  return c.aligned() ? "±" + HumanDuration(c.bound_ns) : "-";
}

}  // namespace

void WriteJobText(const JobReport& r, std::ostream& out) {
  out << StrFormat("== Job: %zu rank%s on %zu host%s ==\n", r.ranks.size(),
                   r.ranks.size() == 1 ? "" : "s", r.hosts.size(), r.hosts.size() == 1 ? "" : "s");
  out << StrFormat(
      "Clock: one time base, CLOCK_REALTIME of %s; hosts' realtime clocks assumed "
      "within ±%s of each other (NTP)\n",
      r.hosts.empty() ? "(none)" : r.hosts[0].name.c_str(),
      HumanDuration(r.clock_options.ntp_bound_ns).c_str());
  out << StrFormat("  %-28s %-30s %22s %14s %12s\n", "rank", "method", "offset (s)", "bound",
                   "drift");
  for (const RankReport& rr : r.ranks) {
    const ProcessClock& c = rr.clock;
    std::string method = ClockMethodName(c.method);
    if (c.aligned() && c.default_window) method += " (old file: assumed window)";
    out << StrFormat("  %-28s %-30s %+22.9f %14s %+10.2f ppm\n", rr.label.c_str(), method.c_str(),
                     double(c.offset_ns) / 1e9, Bound(c).c_str(), c.drift_ppm);
  }
  out << "\nRanks (GPU time: unions over the rank's streams; waiting: in matched collectives, "
         "before the last peer arrived)\n";
  out << StrFormat("  %-28s %6s %12s %12s %8s %12s %6s %5s %6s %12s\n", "rank", "util", "compute",
                   "comm", "overlap", "waiting", "coll", "last", "steps", "median step");
  for (const RankReport& rr : r.ranks) {
    out << StrFormat("  %-28s %5.1f%% %12s %12s %7.1f%% %12s %6u %5u %6u %12s\n", rr.label.c_str(),
                     Pct(rr.gpu_busy_ns, rr.wall_ns), HumanDuration(rr.compute_ns).c_str(),
                     HumanDuration(rr.comm_ns).c_str(), Pct(rr.overlap_ns, rr.comm_ns),
                     HumanDuration(rr.wait_ns).c_str(), rr.collectives, rr.last_arrivals, rr.steps,
                     rr.steps ? HumanDuration(rr.step_median_ns).c_str() : "-");
  }
  out << StrFormat("\nCollectives: %u communicator(s)", r.comms);
  for (uint32_t c = 0; c < r.matched_per_comm.size(); ++c) {
    out << StrFormat("%s #%u", c ? "," : ";", c);
    if (c < r.comm_ids.size() && r.comm_ids[c])
      out << StrFormat(" (NCCL id %llu)", static_cast<unsigned long long>(r.comm_ids[c]));
    out << StrFormat(": %u matched", r.matched_per_comm[c]);
  }
  out << "\n";
  if (!r.collectives.empty())
    out << StrFormat(
        "  %zu compared; at %u the last arrival is within the clock bound of the "
        "others (no last rank named)\n",
        r.collectives.size(), r.collectives_within_bound);
  if (!r.stragglers.empty()) {
    out << "  last to arrive beyond the clock bound (how often; median lateness vs the median of "
           "the other ranks; summed per steady step, the median step):\n";
    for (size_t i = 0; i < r.stragglers.size() && i < 5; ++i) {
      const Straggler& s = r.stragglers[i];
      const std::string per_step = s.steps
                                       ? StrFormat("; %s per step (%u steps)",
                                                   HumanDuration(s.step_late_ns).c_str(), s.steps)
                                       : "";
      out << StrFormat("    %-28s %u of %u, median %s late%s (bound ±%s)%s\n",
                       r.ranks[s.rank_index].label.c_str(), s.last_count, s.of,
                       HumanDuration(s.median_late_ns).c_str(), per_step.c_str(),
                       HumanDuration(s.bound_ns).c_str(),
                       s.significant() ? "" : "  [within the bound]");
      if (s.host_excess)
        out << StrFormat(
            "      host time before %s: %s per step vs the others' median %s (+%.0f%% of "
            "its %s step)\n",
            s.host_excess->site.empty() ? "its launches"
                                        : ("launches from `" + s.host_excess->site + "`").c_str(),
            HumanDuration(s.host_excess->rank_ns).c_str(),
            HumanDuration(s.host_excess->others_ns).c_str(), s.host_excess->share() * 100,
            HumanDuration(s.host_excess->step_ns).c_str());
    }
  }
  if (!r.bandwidth.empty()) {
    uint64_t with_payload = 0, collectives = 0;
    for (const RankReport& rr : r.ranks) {
      with_payload += rr.with_payload;
      collectives += rr.collectives;
    }
    const char* source = with_payload == 0 ? "NVTX `bytes=` annotations"
                         : with_payload == collectives
                             ? "NCCL's NVTX payloads"
                             : "NCCL's NVTX payloads, else NVTX `bytes=` annotations";
    out << "\nBandwidth (bytes from " << source << "; nccl-tests' sizes and bus bandwidth)\n"
        << StrFormat(
               "  time: last arrival to last end; back to back: a loop's time per "
               "collective as nccl-tests measures a size, from the end of the collective "
               "before, over those that followed it within %llu us on every rank\n",
               static_cast<unsigned long long>(kBackToBackGapNs / 1000));
    out << StrFormat("  %-15s %12s %6s %6s %12s %11s %11s %13s %12s %11s\n", "operation", "bytes",
                     "ranks", "count", "median time", "algbw GB/s", "busbw GB/s", "back to back",
                     "mean time", "busbw GB/s");
    for (const BandwidthRow& b : r.bandwidth) {
      out << StrFormat("  %-15s %12s %6u %6u %12s %11.2f %11.2f", CollectiveOpName(b.op),
                       HumanBytes(b.bytes).c_str(), b.ranks, b.count,
                       HumanDuration(b.median_ns).c_str(), b.algbw_gbps, b.busbw_gbps);
      if (b.back_to_back)
        out << StrFormat(" %13u %12s %11.2f\n", b.back_to_back,
                         HumanDuration(b.back_to_back_mean_ns).c_str(), b.back_to_back_busbw_gbps);
      else
        out << StrFormat(" %13s %12s %11s\n", "0", "-", "-");
    }
  } else if (!r.collectives.empty()) {
    out << "  bandwidth: no collective's size is known (no NCCL NVTX payload: NCCL before "
           "2.19, NCCL_NVTX_DISABLE=1 or launches outside their call's range; no `bytes=` "
           "range either; see docs/distributed.md)\n";
  }
  if (r.steps.ranks_with_steps >= 2)
    out << StrFormat(
        "\nStep time across %u ranks: median step %s .. %s (median rank %s), cv %.1f%%\n",
        r.steps.ranks_with_steps, HumanDuration(r.steps.min_median_ns).c_str(),
        HumanDuration(r.steps.max_median_ns).c_str(),
        HumanDuration(r.steps.median_median_ns).c_str(), r.steps.cv * 100);
  if (!r.findings.empty()) {
    out << "\nFindings\n";
    for (const std::string& f : r.findings) out << "  - " << f << "\n";
  }
  std::vector<std::string> warnings = r.warnings;
  for (const RankReport& rr : r.ranks)
    for (const std::string& w : rr.warnings) warnings.push_back(rr.label + ": " + w);
  if (!r.left_out.empty()) {
    out << "\nNot ranks (left out)\n";
    for (const std::string& w : r.left_out) out << "  - " << w << "\n";
  }
  if (!warnings.empty()) {
    out << "\nWarnings\n";
    for (const std::string& w : warnings) out << "  ! " << w << "\n";
  }
}

void WriteJobJson(const JobReport& r, std::ostream& out) {
  Json j;
  j["time_base"] = r.hosts.empty() ? "" : "CLOCK_REALTIME of " + r.hosts[0].name;
  j["ntp_bound_ns"] = r.clock_options.ntp_bound_ns;
  j["max_clock_bound_ns"] = r.max_bound_ns;
  Json hosts = Json::array();
  for (const HostClock& h : r.hosts)
    hosts.push_back({{"host", h.name},
                     {"offset_ns", h.offset_ns},
                     {"half_width_ns", h.half_width_ns},
                     {"prior_half_width_ns", h.prior_half_width_ns}});
  j["hosts"] = std::move(hosts);
  Json ranks = Json::array();
  for (const RankReport& rr : r.ranks) {
    const ProcessClock& c = rr.clock;
    Json x = {
        {"rank", rr.rank},
        {"pid", rr.pid},
        {"host", rr.host},
        {"source", rr.source},
        {"clock_method", ClockMethodName(c.method)},
        {"clock_aligned", c.aligned()},
        {"clock_offset_ns", c.offset_ns},
        {"clock_bound_ns", IfKnown(c.aligned(), c.bound_ns)},
        {"clock_drift_ppm", c.drift_ppm},
        {"clock_window_assumed", c.default_window},
        {"wall_ns", rr.wall_ns},
        {"gpu_busy_ns", rr.gpu_busy_ns},
        {"compute_ns", rr.compute_ns},
        {"comm_ns", rr.comm_ns},
        {"overlap_ns", rr.overlap_ns},
        {"wait_ns", rr.wait_ns},
        {"collectives", rr.collectives},
        {"collectives_with_payload", rr.with_payload},
        {"matched", rr.matched},
        {"last_arrivals", rr.last_arrivals},
        {"median_lateness_ns", rr.median_lateness_ns},
        {"step_lateness_ns", IfKnown(rr.lateness_steps != 0, rr.step_lateness_ns)},
        {"steps", rr.steps},
        {"step_median_ns", rr.step_median_ns},
        {"host_time_per_step_ns", IfKnown(rr.host_time.steps >= 2, rr.host_time.step_median_ns)},
        {"host_time_stacks", rr.host_time.stacks},
        {"warnings", rr.warnings}};
    ranks.push_back(std::move(x));
  }
  j["ranks"] = std::move(ranks);
  j["communicators"] = r.comms;
  j["matched_per_communicator"] = r.matched_per_comm;
  j["communicator_nccl_ids"] = r.comm_ids;  // 0: matched by stream order (no NCCL payload)
  Json coll = Json::array();
  for (const JobCollective& c : r.collectives)
    coll.push_back({{"comm", c.comm},
                    {"seq", c.seq},
                    {"op", CollectiveOpName(c.op)},
                    {"kind", c.kind},
                    {"bytes", NonZero(c.bytes)},
                    {"ranks", c.ranks},
                    {"group_size", NonZero(c.group_size)},
                    {"nccl_comm", NonZero(c.nccl_comm)},
                    {"first_arrival_ns", c.first_arrival_ns},
                    {"start_ns", c.start_ns},
                    {"end_ns", c.end_ns},
                    {"skew_ns", c.skew_ns},
                    {"back_to_back_ns", NonZero(c.back_to_back_ns)},
                    {"lateness_ns", c.lateness_ns},
                    {"last_rank", r.ranks[c.last_rank].rank},
                    {"last_significant", c.last_significant},
                    {"clock_bound_ns", c.bound_ns}});
  j["collectives"] = std::move(coll);
  j["collectives_within_bound"] = r.collectives_within_bound;
  Json stragglers = Json::array();
  for (const Straggler& s : r.stragglers) {
    Json host = nullptr;
    if (s.host_excess) {
      const HostExcess& e = *s.host_excess;
      host = {
          {"measure", "host time outside CUDA API calls before launches, median per steady step"},
          {"call_site", IfKnown(!e.site.empty(), e.site)},
          {"stacks", e.stacks},
          {"rank_ns", e.rank_ns},
          {"others_median_ns", e.others_ns},
          {"excess_ns", e.excess_ns},
          {"step_ns", e.step_ns},
          {"share_of_step", e.share()},
          {"ranks_compared", e.others}};
    }
    stragglers.push_back({{"rank", r.ranks[s.rank_index].rank},
                          {"last_count", s.last_count},
                          {"of", s.of},
                          {"median_late_ns", s.median_late_ns},
                          {"step_late_ns", IfKnown(s.steps != 0, s.step_late_ns)},
                          {"steps", s.steps},
                          {"clock_bound_ns", s.bound_ns},
                          {"significant", s.significant()},
                          {"host_time", std::move(host)}});
  }
  j["stragglers"] = std::move(stragglers);
  Json bw = Json::array();
  for (const BandwidthRow& b : r.bandwidth)
    bw.push_back(
        {{"op", CollectiveOpName(b.op)},
         {"bytes", b.bytes},
         {"ranks", b.ranks},
         {"count", b.count},
         {"median_ns", b.median_ns},
         {"algbw_gbps", b.algbw_gbps},
         {"busbw_gbps", b.busbw_gbps},
         {"back_to_back", b.back_to_back},
         {"back_to_back_mean_ns", IfKnown(b.back_to_back != 0, b.back_to_back_mean_ns)},
         {"back_to_back_busbw_gbps", IfKnown(b.back_to_back != 0, b.back_to_back_busbw_gbps)}});
  j["bandwidth"] = std::move(bw);
  j["step_variance"] = {
      {"ranks_with_steps", r.steps.ranks_with_steps},
      {"min_median_ns", r.steps.min_median_ns},
      {"median_median_ns", r.steps.median_median_ns},
      {"max_median_ns", r.steps.max_median_ns},
      {"slowest_rank",
       r.steps.ranks_with_steps ? Json(r.ranks[r.steps.slowest_rank_index].rank) : Json(nullptr)},
      {"cv", r.steps.cv}};
  j["findings"] = r.findings;
  j["warnings"] = r.warnings;
  j["left_out"] = r.left_out;
  out << j.dump(2) << "\n";
}

void WriteJsonReport(const AnalysisReport& r, std::ostream& out, const JobReport* job) {
  if (!job) return WriteJsonReport(r, out);
  std::ostringstream ranks;
  WriteJobJson(*job, ranks);
  WriteJsonReportWithRanks(r, out, ranks.str());
}

}  // namespace tracesmith::analysis
