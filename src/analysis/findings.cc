#include "findings.h"

#include <algorithm>

#include "tracesmith/base/file_util.h"
#include "tracesmith/model/event_names.h"

namespace tracesmith::analysis {

namespace {

std::string Pct(double p) { return StrFormat("%.1f%%", p); }

}  // namespace

std::vector<std::string> ComputeFindings(const CompactTrace& t, const AnalysisReport& r) {
  std::vector<Finding> out;
  const uint64_t wall = r.wall_ns();
  if (wall == 0 || (t.ops().empty() && t.calls().empty())) {
    if (t.ops().empty()) return {"The trace has no GPU activity in the analysed window."};
    return {};
  }
  // The call site most kernels were launched from (when stacks exist).
  std::string top_site;
  double top_site_share = 0;
  if (!r.call_sites.empty() && r.kernel_count) {
    const NamedStats* best = nullptr;
    for (const NamedStats& s : r.call_sites)
      if (s.name != "(no stack)" && (!best || s.stats.count > best->stats.count)) best = &s;
    if (best) {
      top_site = best->name;
      top_site_share = Percent(best->stats.count, r.kernel_count);
    }
  }

  // GPU busy share of the steps that are not outliers (0 without steps).
  const StepReport& st = r.steps;
  uint64_t steady_busy = 0, steady_ns = 0;
  size_t steady_steps = 0;
  for (size_t i = 0; i < st.steps.size(); ++i)
    if (std::find(st.outliers.begin(), st.outliers.end(), uint32_t(i)) == st.outliers.end())
      steady_busy += st.steps[i].gpu_busy_ns, steady_ns += st.steps[i].ns(), ++steady_steps;

  // The warm-up's steps, when it was set apart from the window: "step 1", "steps 1-2".
  const uint32_t warmup = r.warmup_apart() ? st.warmup : 0;
  const std::string warmup_steps = warmup ? WarmupStepsText(st) : "";

  // 1. Utilization and the dominant idle cause, per device.
  for (const DeviceTimeline& d : r.timeline.devices) {
    const uint64_t idle = d.idle.total_ns();
    int top = 0;
    for (int c = 1; c < kNumIdleCauses; ++c)
      if (d.idle.ns[c] > d.idle.ns[top]) top = c;
    std::string text = StrFormat("GPU %u is busy %s of the %s %swindow", d.device,
                                 Pct(Percent(d.busy_ns, wall)).c_str(), HumanDuration(wall).c_str(),
                                 warmup ? "steady-state " : "");
    if (warmup) text += StrFormat(" (from step %u)", st.first_number + warmup);
    // Outlier steps (a first iteration's one-time work), or start-up with
    // --whole, can fill most of the window: the steady steps' share is then
    // the one to read.
    const double steady = Percent(steady_busy, steady_ns);
    if (r.timeline.devices.size() == 1 && !st.outliers.empty() &&
        steady > 2 * Percent(d.busy_ns, wall))
      text += StrFormat(" (%s in the %zu steady steps)", Pct(steady).c_str(), steady_steps);
    if (idle) {
      text += StrFormat("; it is idle %s of the time, mostly %s (%s of its idle time)",
                        Pct(Percent(idle, wall)).c_str(), IdleCauseDescription(IdleCause(top)),
                        Pct(Percent(d.idle.ns[top], idle)).c_str());
      if (IdleCause(top) == IdleCause::kHostLaunch && !top_site.empty() && top_site_share >= 20)
        text += StrFormat("; %s of launches come from %s", Pct(top_site_share).c_str(),
                          top_site.c_str());
    }
    out.push_back({Percent(idle, wall) + 1, text + "."});
  }

  // 2. The kernel that takes most GPU time.
  if (!r.kernels.empty()) {
    const NamedStats& k = r.kernels[0];
    std::string name = k.name.size() > 80 ? k.name.substr(0, 77) + "..." : k.name;
    out.push_back({k.share, StrFormat("Kernel %s takes %s of GPU kernel time (%llu calls, mean %s, "
                                      "p95 %s).",
                                      name.c_str(), Pct(k.share).c_str(),
                                      static_cast<unsigned long long>(k.stats.count),
                                      HumanDuration(k.stats.mean_ns).c_str(),
                                      HumanDuration(k.stats.p95_ns).c_str())});
  }

  // 3. Launch-bound: kernels shorter than the calls that launch them.
  const LaunchStats* launch = nullptr;
  for (const LaunchStats& l : r.launches)
    if (l.api.find("Launch") != std::string::npos &&
        (!launch || l.api_duration.count > launch->api_duration.count))
      launch = &l;
  if (launch && r.kernel_count) {
    uint64_t shorter = 0;
    for (const GpuOp& op : t.ops())
      if (op.kind() == OpKind::kKernel && op.duration() < launch->api_duration.p50_ns) ++shorter;
    double share = Percent(shorter, r.kernel_count);
    if (share >= 25)
      out.push_back({share / 2, StrFormat("%s of kernels run for less than a %s call takes "
                                          "(median %s): the GPU is launch-bound; CUDA graphs or "
                                          "kernel fusion would cut the overhead.",
                                          Pct(share).c_str(), launch->api.c_str(),
                                          HumanDuration(launch->api_duration.p50_ns).c_str())});
  }

  // 4. What the critical path is made of.
  {
    std::vector<std::pair<uint64_t, int>> cats;
    for (int c = 0; c < kNumPathCategories; ++c)
      if (r.critical_path_ns[c]) cats.push_back({r.critical_path_ns[c], c});
    std::sort(cats.rbegin(), cats.rend());
    std::string parts;
    for (size_t i = 0; i < cats.size() && i < 3; ++i) {
      if (i) parts += ", ";
      parts +=
          Pct(Percent(cats[i].first, wall)) + " " + PathCategoryName(PathCategory(cats[i].second));
    }
    if (!parts.empty())
      out.push_back(
          {25, StrFormat("The critical path (%llu steps) is %s.",
                         static_cast<unsigned long long>(r.critical_path_nodes), parts.c_str())});
  }

  // 5. Host time inside synchronize calls.
  {
    uint64_t sync_ns = 0, n = 0, longest = 0;
    for (const SyncRecord& s : t.syncs())
      if (s.sync_type != model::kSyncStreamWaitEvent) {
        sync_ns += s.end_ns - s.start_ns;
        longest = std::max(longest, s.end_ns - s.start_ns);
        ++n;
      }
    double share = Percent(sync_ns, wall);
    if (share >= 5)
      out.push_back({share, StrFormat("The host spends %s of the time blocked in %llu "
                                      "synchronize calls (longest %s).",
                                      Pct(share).c_str(), static_cast<unsigned long long>(n),
                                      HumanDuration(longest).c_str())});
  }

  // 6. Copies: volume, bandwidth, overlap with kernels.
  for (const CopyStats& c : r.copies) {
    if (c.direction == "memset" || c.busy_ns == 0) continue;
    double share = Percent(c.busy_ns, wall);
    if (share < 1) continue;
    out.push_back(
        {share, StrFormat("Memcpy %s moves %s in %llu copies at %.1f GB/s, %s of the "
                          "window.",
                          c.direction.c_str(), HumanBytes(c.bytes).c_str(),
                          static_cast<unsigned long long>(c.count), c.gbps(), Pct(share).c_str())});
  }
  for (const DeviceTimeline& d : r.timeline.devices) {
    if (d.copy_ns == 0 || Percent(d.copy_ns, wall) < 1) continue;
    double overlapped = Percent(d.kernel_copy_overlap_ns, d.copy_ns);
    if (overlapped < 50)
      out.push_back({Percent(d.copy_ns - d.kernel_copy_overlap_ns, wall),
                     StrFormat("Only %s of copy time on GPU %u overlaps kernels; async copies on "
                               "a separate stream would hide the rest.",
                               Pct(overlapped).c_str(), d.device)});
  }

  // 7. Communication vs computation.
  for (const DeviceTimeline& d : r.timeline.devices) {
    if (d.nccl_ns == 0) continue;
    double hidden = Percent(d.nccl_compute_overlap_ns, d.nccl_ns);
    out.push_back({Percent(d.nccl_ns - d.nccl_compute_overlap_ns, wall),
                   StrFormat("NCCL kernels on GPU %u run for %s; %s of that overlaps computation.",
                             d.device, HumanDuration(d.nccl_ns).c_str(), Pct(hidden).c_str())});
  }

  // 8. Streams that do not run concurrently.
  for (const DeviceTimeline& d : r.timeline.devices) {
    if (d.streams < 2 || d.busy_ns == 0) continue;
    out.push_back({d.avg_concurrency < 1.2 ? 10.0 : 2.0,
                   StrFormat("GPU %u has %u streams; while busy it runs %.2f ops at a time on "
                             "average (at most %u).",
                             d.device, d.streams, d.avg_concurrency, d.max_concurrency)});
  }

  // 9. Slow launch calls.
  for (const LaunchStats& l : r.launches) {
    if (!l.outliers || r.outliers.empty()) continue;
    const LaunchOutlier& o = r.outliers[0];
    out.push_back({Percent(o.api_ns, wall),
                   StrFormat("%llu API calls took over 10x their median; the slowest, %s at +%s, "
                             "took %s%s.",
                             static_cast<unsigned long long>(l.outliers), o.api.c_str(),
                             HumanDuration(o.start_ns).c_str(), HumanDuration(o.api_ns).c_str(),
                             o.call_site.empty() ? "" : (" from " + o.call_site).c_str())});
    break;
  }

  // 10. CUDA graphs.
  if (!r.graphs.empty()) {
    uint64_t kernels = 0, ns = 0;
    for (const GraphStats& g : r.graphs) kernels += g.kernels, ns += g.kernel_ns;
    out.push_back({Percent(ns, r.kernel_ns) / 4,
                   StrFormat("%llu CUDA graph launches of %zu graphs ran %llu kernels (%s of "
                             "kernel time).",
                             static_cast<unsigned long long>(r.graph_launches), r.graphs.size(),
                             static_cast<unsigned long long>(kernels),
                             Pct(Percent(ns, r.kernel_ns)).c_str())});
  }

  // 12. Steps: their time, and the ones far from the median (warm-up).
  if (!st.steps.empty()) {
    std::string text = StrFormat(
        "%zu step%s (from the %s): median %s, GPU busy %s of a steady step", st.steps.size(),
        st.steps.size() == 1 ? "" : "s", st.method.c_str(), HumanDuration(st.median_ns).c_str(),
        Pct(Percent(steady_busy, steady_ns)).c_str());
    // The warm-up's outliers have a finding of their own (below).
    const size_t skip = warmup;
    if (skip) text += "; the window starts after the warm-up, " + warmup_steps;
    if (st.outliers.size() > skip) {
      const uint32_t i = st.outliers[skip];
      const Step& o = st.steps[i];
      text +=
          StrFormat("; step %u took %s (%.1fx the median%s)", i + st.first_number,
                    HumanDuration(o.ns()).c_str(), double(o.ns()) / double(st.median_ns),
                    i == 0 && st.first_number == 1 ? ": the first iteration's one-time work" : "");
      if (st.outliers.size() > skip + 1)
        text += StrFormat(", %zu more outlier%s", st.outliers.size() - skip - 1,
                          st.outliers.size() - skip - 1 == 1 ? "" : "s");
    }
    if (!st.outliers.empty()) text += "; --steps A:B analyses chosen steps";
    out.push_back({3, text + "."});
  }

  // 13. The warm-up, when it was set apart from the window.
  if (warmup) {
    // "step 1 at 156.6x the median step" or "steps 1-2 (step 1 at 156.6x the median step)".
    const std::string first = StrFormat("step %u at %.1fx the median step", st.first_number,
                                        double(st.steps[0].ns()) / double(st.median_ns));
    out.push_back(
        {0.6,
         StrFormat("The warm-up took %s, %s of the run from the first %s to the last GPU "
                   "operation: %s, the first iteration%s one-time work such as autotuning, "
                   "lazy module loading and allocator growth; it is left out of the other "
                   "figures (--with-warmup includes it).",
                   HumanDuration(r.active.warmup.ns()).c_str(), Pct(r.warmup_share()).c_str(),
                   r.active.kernels ? "kernel" : "GPU operation",
                   warmup == 1 ? first.c_str() : (warmup_steps + " (" + first + ")").c_str(),
                   warmup == 1 ? "'s" : "s'"),
         true});
  }

  // 15. A kernel that ran past --kernel-timeout: first of all.
  for (const KernelTimeoutReport& k : r.kernel_timeouts) {
    std::string name = k.name.size() > 80 ? k.name.substr(0, 77) + "..." : k.name;
    std::string text = StrFormat(
        "Kernel %s was still running %s after it started (--kernel-timeout %s), launched from %s",
        name.c_str(), HumanDuration(k.running_ns).c_str(), HumanDuration(k.timeout_ns).c_str(),
        k.site.c_str());
    if (!k.lines.empty() && !k.lines[0].file.empty())
      text += StrFormat(
          "; its warps were at %s:%u (%s of its samples%s)", k.lines[0].file.c_str(),
          k.lines[0].line, Pct(k.lines[0].share).c_str(),
          k.stalls.empty()
              ? ""
              : (", mostly " + std::string(model::ShortStallName(k.stalls[0].reason))).c_str());
    text += ": a wait on a flag or a barrier that never came?";
    if (k.ended) text += " The program was ended (--on-kernel-timeout exit).";
    out.push_back({1000, text, true});
  }

  // 14. Inside the kernels (GPU instruction samples): a kernel with at least 10% of GPU time
  // whose samples are half or more one stall reason, or on one source line.
  for (const FunctionSamples& f : r.gpu_samples.functions) {
    if (f.samples == 0 || f.kernel_ns == 0 || 10 * __uint128_t(f.kernel_ns) < r.kernel_ns) continue;
    std::string name = f.name.size() > 80 ? f.name.substr(0, 77) + "..." : f.name;
    if (!f.stalls.empty() && 2 * __uint128_t(f.stalls[0].samples) >= f.samples) {
      const StallShare& s = f.stalls[0];
      std::string text = StrFormat(
          "Kernel %s (%s of GPU time) is mostly %s: %s of its GPU instruction samples, %s.",
          name.c_str(), Pct(f.gpu_share).c_str(),
          std::string(model::ShortStallName(s.reason)).c_str(), Pct(s.share).c_str(),
          StallDescription(s.reason).c_str());
      // Where, when the kernel has no line table (a library's): its hottest instruction.
      if ((f.lines.empty() || f.lines[0].file.empty()) && !f.instructions.empty() &&
          !f.instructions[0].sass.empty())
        text += StrFormat(" Hottest instruction: +0x%x %s (%s of its samples).",
                          f.instructions[0].pc_offset, f.instructions[0].sass.c_str(),
                          Pct(f.instructions[0].share).c_str());
      if (!f.sites.empty())
        text += StrFormat(" Launched from %s (%s of its samples).", f.sites[0].site.c_str(),
                          Pct(f.sites[0].share).c_str());
      out.push_back({f.gpu_share * s.share / 100, text});
    }
    if (!f.lines.empty() && !f.lines[0].file.empty() &&
        2 * __uint128_t(f.lines[0].samples) >= f.samples) {
      const LineShare& l = f.lines[0];
      out.push_back({f.gpu_share * l.share / 200,
                     StrFormat("Kernel %s (%s of GPU time) has %s of its GPU instruction samples "
                               "on one source line, %s:%u.",
                               name.c_str(), Pct(f.gpu_share).c_str(), Pct(l.share).c_str(),
                               l.file.c_str(), l.line)});
    }
  }

  // 15. GPU metrics per kernel: memory-bound, tensor cores busy, or neither unit busy.
  AddGpuMetricFindings(r, &out);

  // 11. Start-up: not part of the window above, but said when it is long.
  if (r.active.applied) {
    const auto& su = r.active.startup;
    const uint64_t whole = r.active.trace_ns();  // not the window: it may be a selection
    if (su.ns() && (Percent(su.ns(), whole) >= 10 || su.ns() >= 1000000000ull)) {
      std::string text = StrFormat(
          "Start-up took %s (%s of the trace) before the first %s; it is left out of the "
          "other figures (--whole includes it)",
          HumanDuration(su.ns()).c_str(), Pct(Percent(su.ns(), whole)).c_str(),
          r.active.kernels ? "kernel" : "GPU operation");
      text += StrFormat("; CUDA API calls take %s of it",
                        Pct(std::min(100.0, Percent(su.api_ns, su.ns()))).c_str());
      if (Percent(su.api_ns, su.ns()) < 50) text += " (the rest is host work outside CUDA calls)";
      for (size_t i = 0; i < su.longest_calls.size() && i < r.startup_call_names.size(); ++i)
        text += StrFormat("%s%s at +%s (%s)",
                          i ? ", " : ", the longest: ", r.startup_call_names[i].c_str(),
                          HumanDuration(su.longest_calls[i].start_ns - r.trace_begin).c_str(),
                          HumanDuration(su.longest_calls[i].ns).c_str());
      out.push_back({0.5, text + ".", true});
    }
  }

  // Data quality last, but always said.
  if (r.compact.processes_unaligned)
    out.push_back({-1,
                   StrFormat("%llu processes have no clock anchor: their timestamps could not "
                             "be aligned with the others.",
                             static_cast<unsigned long long>(r.compact.processes_unaligned)),
                   true});

  return RankFindings(std::move(out));
}

std::vector<std::string> RankFindings(std::vector<Finding> findings) {
  std::stable_sort(findings.begin(), findings.end(),
                   [](const Finding& a, const Finding& b) { return a.weight > b.weight; });
  std::vector<std::string> texts;
  size_t ranked = 0;
  for (const Finding& f : findings)
    if (f.always || ranked++ < 10) texts.push_back(f.text);
  return texts;
}

}  // namespace tracesmith::analysis
