// Loading a trace file into the analysis engine, chunk by chunk.
#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "tracesmith/analysis/report.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt.h"

namespace tracesmith::analysis {

// --steps: the window becomes [first step's begin, last step's end).
static Status RestrictToSteps(const std::string& steps, CompactTrace* t) {
  if (steps.empty()) return OkStatus();
  StepReport found = DetectSteps(*t);
  if (found.steps.empty())
    return NotFound("--steps " + steps +
                    ": no steps found (no ProfilerStep ranges, and no "
                    "kernel recurs at a regular stride at least 3 times)");
  ASSIGN_OR_RETURN(auto range, ParseStepRange(steps, found.steps.size()));
  CompactTrace::ChosenSteps chosen;
  for (size_t i = range.first; i <= range.second; ++i)
    chosen.bounds.push_back({found.steps[i].begin_ns, found.steps[i].end_ns});
  chosen.first_number = uint32_t(range.first + 1);
  chosen.method = found.method;
  chosen.anchor = found.anchor;
  chosen.period = found.period;
  t->RestrictWindow(found.steps[range.first].begin_ns, found.steps[range.second].end_ns);
  t->SetChosenSteps(std::move(chosen));
  return OkStatus();
}

// The default window: the steps after the warm-up (WarmupSteps), which is set apart.
// With no warm-up the steps found (or that there are none) are kept all the same, as chosen
// steps numbered from 1 with the window unchanged, so that the report does not look again.
static void ChooseSteadySteps(CompactTrace* t) {
  StepReport found = DetectSteps(*t);
  if (found.steps.empty()) {
    t->SetChosenSteps({.none = true});
    return;
  }
  const uint32_t warmup = WarmupSteps(found);
  CompactTrace::ChosenSteps steady;
  for (size_t i = 0; i < found.steps.size(); ++i) {
    const Step& s = found.steps[i];
    if (i < warmup)
      steady.warmup.push_back({s.begin_ns, s.end_ns, s.gpu_busy_ns, s.kernels});
    else
      steady.bounds.push_back({s.begin_ns, s.end_ns});
  }
  steady.first_number = warmup + 1;
  steady.method = found.method;
  steady.anchor = found.anchor;
  steady.period = found.period;
  if (warmup == 0)
    t->SetChosenSteps(std::move(steady));
  else
    t->SetWarmupApart(found.steps[warmup].begin_ns, std::move(steady));
}

Status ApplyRestrictions(const LoadOptions& o, CompactTrace* t) {
  if (!o.nvtx.empty()) RETURN_IF_ERROR(t->RestrictToNvtx(o.nvtx));
  if (o.from.empty() && o.to.empty()) {
    if (o.active_region && !o.whole && o.nvtx.empty()) {
      t->RestrictToActiveRegion();
      if (o.steady_state && o.steps.empty() && t->active_region().applied) ChooseSteadySteps(t);
    }
    return RestrictToSteps(o.steps, t);
  }
  ASSIGN_OR_RETURN(TimeWindowNs w, ParseTimeWindow(o.from, o.to, t->trace_begin()));
  t->RestrictWindow(w.from, w.to);
  return RestrictToSteps(o.steps, t);
}

StatusOr<TimeWindowNs> ParseTimeWindow(const std::string& from, const std::string& to,
                                       uint64_t t0) {
  TimeWindowNs w;
  if (!from.empty()) {
    ASSIGN_OR_RETURN(uint64_t d, ParseDuration(from));
    w.from = t0 + d;
  }
  if (!to.empty()) {
    ASSIGN_OR_RETURN(uint64_t d, ParseDuration(to));
    w.to = t0 + d;
  }
  if (w.from >= w.to)
    return InvalidArgument(StrFormat("--from %s is not before --to %s", from.c_str(), to.c_str()));
  return w;
}

namespace {

// Reading and ingesting on two threads: this one decodes each batch (decompression, column
// decoding: a fifth of loading a 100 M-kernel trace), refreshes the metadata copy and hands
// a copy of the batch's rows over; the other adds them to the records (packing). Two copies
// go round; each keeps the room of the largest batch of each kind it has carried (a batch is
// at most kMaxRowsPerChunk rows: a few MB), so memory holds the reader's batch and at most
// two of each kind besides. `ingested` is called on the ingesting thread after each batch.
class BatchHandoff {
 public:
  // A copy to fill (one the ingesting thread is not reading); null once stopped.
  model::Trace* TakeEmpty() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !empty_.empty() || stopped_; });
    if (stopped_) return nullptr;
    model::Trace* t = empty_.back();
    empty_.pop_back();
    return t;
  }
  void PutFull(model::Trace* t, model::TableKind kind) {
    std::lock_guard<std::mutex> lock(mu_);
    full_.push_back({t, kind});
    cv_.notify_all();
  }
  // The next filled copy, or {null} at the end (after Finish).
  std::pair<model::Trace*, model::TableKind> TakeFull() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !full_.empty() || finished_; });
    if (full_.empty()) return {nullptr, model::TableKind{}};
    auto item = full_.front();
    full_.pop_front();
    return item;
  }
  void GiveBack(model::Trace* t) {
    std::lock_guard<std::mutex> lock(mu_);
    empty_.push_back(t);
    cv_.notify_all();
  }
  void Finish() {  // the reading side: nothing more comes
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
    cv_.notify_all();
  }
  void Stop() {  // the ingesting side gave up (an exception): the reader returns
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  model::Trace copies_[2];
  std::vector<model::Trace*> empty_{&copies_[0], &copies_[1]};
  std::deque<std::pair<model::Trace*, model::TableKind>> full_;
  bool finished_ = false, stopped_ = false;
};

Status StreamInto(format::TraceSource& source, CompactTrace* out,
                  const std::function<void()>& ingested) {
  ASSIGN_OR_RETURN(std::unique_ptr<format::TraceSource::Cursor> cursor, source.Events());
  BatchHandoff handoff;
  Status read_status;
  // An exception on either side (out of memory) reaches the caller as it did on one thread:
  // the reader's is kept and thrown here; if this side throws, the reader is stopped and
  // joined first.
  std::exception_ptr read_exception;
  std::thread reader([&] {
    try {
      model::TableKind kind;
      while (true) {
        StatusOr<bool> more = cursor->Next(&kind);
        if (!more.ok()) {
          read_status = more.status();
          break;
        }
        // At the end the batch holds every string and metadata row (the end clock anchor
        // comes after the events).
        out->IngestMetadata(cursor->batch());
        if (!*more) break;
        model::Trace* copy = handoff.TakeEmpty();
        if (!copy) break;
        model::ForEachRecordType([&]<typename T>() {
          if constexpr (model::RecordTraits<T>::kIsEvent)
            if (model::RecordTraits<T>::kKind == kind) copy->Rows<T>() = cursor->batch().Rows<T>();
        });
        handoff.PutFull(copy, kind);
      }
    } catch (...) {
      read_exception = std::current_exception();
    }
    handoff.Finish();
  });
  {
    struct Joined {  // on every way out of this block
      BatchHandoff& handoff;
      std::thread& reader;
      ~Joined() {
        handoff.Stop();
        reader.join();
      }
    } joined{handoff, reader};
    while (true) {
      const auto [copy, kind] = handoff.TakeFull();
      if (!copy) break;
      out->IngestEvents(*copy, kind);
      handoff.GiveBack(copy);
      ingested();
    }
  }
  if (read_exception) std::rethrow_exception(read_exception);
  return read_status;
}

}  // namespace

StatusOr<RecordForm> ChooseRecordForm(uint64_t records) {
  const char* env = std::getenv(kRecordFormEnv);
  const std::string_view name = env ? env : "";
  if (name.empty() || name == "auto")
    return records >= kPackedFromRecords ? RecordForm::kPacked : RecordForm::kArrays;
  if (const std::optional<RecordForm> form = ParseRecordForm(name)) return *form;
  return InvalidArgument(StrFormat("%s=%s: expected arrays, packed or auto", kRecordFormEnv,
                                   std::string(name).c_str()));
}

Status LoadCompactTrace(format::TraceSource& source, const LoadOptions& options, CompactTrace* out,
                        format::ReadReport* report) {
  // The index says how many rows are coming: reserve once instead of
  // growing (and copying) the compact arrays while streaming.
  // Rows counts come from the file: each is capped by what one chunk holds
  // (no sum can overflow) and the total by what the file could hold.
  uint64_t ops = 0, calls = 0, event_chunks = 0, done = 0;
  for (const format::ChunkIndexEntry& e : source.TableChunks()) {
    event_chunks += e.table_kind < uint16_t(model::TableKind::kDevice);
    const uint64_t rows = std::min<uint64_t>(e.rows, format::kMaxRowsPerChunk);
    auto kind = static_cast<model::TableKind>(e.table_kind);
    if (kind == model::TableKind::kKernel || kind == model::TableKind::kMemcpy ||
        kind == model::TableKind::kMemset)
      ops += rows;
    if (kind == model::TableKind::kApi) calls += rows;
  }
  // A hint only: never more than the reader's own decode budget
  // (1 GiB + 256 x file size, SbtReader::Stream) in 32-byte rows.
  const uint64_t size = source.bytes();
  const uint64_t cap = std::min<uint64_t>(size * 64 + (1u << 20), ((1ull << 30) + 256 * size) / 32);
  ASSIGN_OR_RETURN(const RecordForm form, ChooseRecordForm(std::min(ops + calls, 2 * cap)));
  out->SetRecordForm(form);
  // One process of a merged file: the file's counts are every process's.
  if (!out->process_filtered()) out->Reserve(std::min(ops, cap), std::min(calls, cap));
  Status st = StreamInto(source, out, [&] {
    if (options.progress) options.progress(++done, std::max(done, event_chunks));
  });
  if (!st.ok() && !source.name().empty())
    return Status(st.code(), source.name() + ": " + st.message());
  RETURN_IF_ERROR(st);
  if (report) *report = source.report();
  out->Finalize();
  return ApplyRestrictions(options, out);
}

Status LoadCompactTrace(const std::string& path, const LoadOptions& options, CompactTrace* out,
                        format::ReadReport* report) {
  ASSIGN_OR_RETURN(std::unique_ptr<format::TraceSource> source, format::OpenFileSource(path));
  return LoadCompactTrace(*source, options, out, report);
}

}  // namespace tracesmith::analysis
