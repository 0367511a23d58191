// RunSource: the survey (run_survey.h), then the inputs' chunks interleaved
// by start time with their ids translated (input_remap.h) into one output
// trace: its strings and metadata grow, its event rows are the current
// chunk's.
#include "tracesmith/cluster/run_source.h"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <optional>
#include <queue>

#include "input_remap.h"
#include "run_survey.h"
#include "tracesmith/base/file_util.h"

namespace tracesmith::cluster {
namespace internal {

// One step of a pass (RunSource::steps_): the input's next event chunk, or
// (whole) the rest of the input; with finish, the input's merge rows then.
struct PassStep {
  uint32_t input = 0;
  bool whole = false;
  bool finish = false;
};

namespace {

using model::RecordTraits;

// Copies the metadata rows of `batch` not copied yet (the reader's batch
// only grows), translated, into `out`. Kinds in model order: mappings
// before the frames that point into them, frames before stack nodes.
class MetadataCopier {
 public:
  MetadataCopier(InputRemap* remap, model::Trace* out, std::optional<uint32_t> sole_pid)
      : remap_(remap), out_(out), sole_pid_(sole_pid) {}

  void CopyNew(const model::Trace& batch) {
    remap_->SetSource(&batch);
    model::ForEachRecordType([&]<typename T>() {
      if constexpr (!RecordTraits<T>::kIsEvent) {
        const auto& rows = batch.Rows<T>();
        size_t& done = done_[size_t(RecordTraits<T>::kKind) - model::kFirstMetadataTableKind];
        for (; done < rows.size(); ++done) {
          T row = rows[done];
          if constexpr (kFileLevel<T>) {
            // A file-level stat or entry goes to the input's process when it
            // has one; otherwise it stays about no process.
            if (row.pid == 0 && !sole_pid_) {
              remap_->Apply(&row);
              row.pid = 0;
              out_->Rows<T>().push_back(row);
              continue;
            }
            if (row.pid == 0) row.pid = *sole_pid_;
          }
          remap_->Apply(&row);
          out_->Rows<T>().push_back(row);
        }
      }
    });
  }

 private:
  InputRemap* remap_;
  model::Trace* out_;
  std::optional<uint32_t> sole_pid_;
  std::array<size_t, size_t{model::kMaxTableKind} - model::kFirstMetadataTableKind + 1> done_{};
};

// "rank 1 on host h2", "pid 42 on host h1": who a process is, for notes.
std::string Who(const MergedInput& in, uint32_t pid) {
  for (const MergedProcess& p : in.processes) {
    if (p.pid != pid) continue;
    std::string s = p.rank >= 0 ? StrFormat("rank %d", p.rank) : std::string();
    if (!p.host.empty()) s += (s.empty() ? "on host " : " on host ") + p.host;
    return s;
  }
  return std::string();
}

// The pid every pid-less file-level row of an input goes to: its one process.
std::optional<uint32_t> SolePid(const MergedInput& in, const Survey& survey) {
  std::set<uint32_t> process_pids;
  for (const MergedProcess& p : in.processes) process_pids.insert(p.pid);
  if (process_pids.size() == 1) return *process_pids.begin();
  if (process_pids.empty() && survey.pids.size() == 1) return *survey.pids.begin();
  return std::nullopt;
}

// An input is done (its rows translated by `remap`, its damage `damage`):
// the rows that say where each process came from (and any damage) go to
// `out`, and what the user should know to `result`'s notes.
void FinishInput(size_t index, const InputRemap& remap, const format::ReadReport& damage,
                 model::Trace* out, MergeResult* result) {
  MergedInput* in = &result->inputs[index];
  in->damage = damage;
  in->dangling_ids = remap.dangling();
  in->flows_left_out = remap.flow_overflow();
  model::StringTable& strings = out->strings;
  const uint32_t source_key = strings.Intern(kMergeSourceKey);
  const uint32_t source_value = strings.Intern(in->path);
  for (const auto& [pid, out_pid] : remap.pids())
    out->Rows<model::MetadataEntry>().push_back(
        model::MetadataEntry{.key_id = source_key, .value_id = source_value, .pid = out_pid});
  if (!in->damage.clean()) {
    const uint32_t damage_key = strings.Intern(kMergeInputDamageKey);
    const uint32_t damage_value = strings.Intern(in->damage.DamageStatus(in->path).message());
    const uint32_t unreadable = strings.Intern("merge.input_unreadable_bytes");
    const uint32_t lost = strings.Intern("merge.input_events_lost");
    constexpr uint8_t kDataLoss = 2;
    for (const auto& [pid, out_pid] : remap.pids()) {
      out->Rows<model::MetadataEntry>().push_back(
          model::MetadataEntry{.key_id = damage_key, .value_id = damage_value, .pid = out_pid});
      out->Rows<model::Stat>().push_back(
          model::Stat{.value = int64_t(in->damage.file_size -
                                       std::min(in->damage.valid_bytes, in->damage.file_size)),
                      .name_id = unreadable,
                      .pid = out_pid,
                      .severity = kDataLoss});
      if (in->damage.events_lost)
        out->Rows<model::Stat>().push_back(model::Stat{.value = int64_t(in->damage.events_lost),
                                                       .name_id = lost,
                                                       .pid = out_pid,
                                                       .severity = kDataLoss});
    }
  }
  for (const InputRemap::Renumbered& r : remap.renumbered()) {
    const uint32_t key = strings.Intern(kMergeOriginalPidKey);
    out->Rows<model::MetadataEntry>().push_back(model::MetadataEntry{
        .key_id = key, .value_id = strings.Intern(std::to_string(r.pid)), .pid = r.out_pid});
    const MergedInput& first = result->inputs[r.first_input];
    const std::string who = Who(*in, r.pid), first_who = Who(first, r.pid);
    result->notes.push_back(
        StrFormat("pid %u of %s%s is also pid %u of %s%s: written as pid %u (the original is kept "
                  "in its metadata as %s)",
                  r.pid, in->path.c_str(), who.empty() ? "" : (" (" + who + ")").c_str(), r.pid,
                  first.path.c_str(), first_who.empty() ? "" : (" (" + first_who + ")").c_str(),
                  r.out_pid, kMergeOriginalPidKey));
  }
  // Processes seen only in events (no Process row): listed all the same.
  for (const auto& [pid, out_pid] : remap.pids()) {
    if (std::none_of(in->processes.begin(), in->processes.end(),
                     [&](const MergedProcess& p) { return p.pid == pid; }))
      in->processes.push_back(MergedProcess{.pid = pid, .out_pid = out_pid});
  }
  for (MergedProcess& p : in->processes)
    if (auto it = remap.pids().find(p.pid); it != remap.pids().end()) p.out_pid = it->second;
  if (in->replay_chunks)
    result->notes.push_back(StrFormat("%s: %" PRIu64
                                      " replay payload chunks (profile --replay-capture) are not "
                                      "carried; replay works on one process's trace: replay %s "
                                      "itself",
                                      in->path.c_str(), in->replay_chunks, in->path.c_str()));
  // The reader counts replay payload chunks among the chunks it skips.
  if (in->damage.chunks_skipped_unknown > in->replay_chunks)
    result->notes.push_back(
        StrFormat("%s: %" PRIu64 " chunks of a newer TraceSmith version are not carried",
                  in->path.c_str(), in->damage.chunks_skipped_unknown - in->replay_chunks));
  if (in->flows_left_out)
    result->notes.push_back(
        StrFormat("%s: %" PRIu64
                  " flows (launch -> GPU arrows) left out: their ids, numbered after the earlier "
                  "inputs' flows, do not fit 32 bits (an imported trace may number flows by "
                  "correlation id); its events are all there",
                  in->path.c_str(), in->flows_left_out));
  if (in->dangling_ids)
    result->notes.push_back(StrFormat("%s: %" PRIu64
                                      " stack or frame references pointed past what the file holds "
                                      "(a damaged input): written as none",
                                      in->path.c_str(), in->dangling_ids));
  result->events += in->events;
  result->input_bytes += in->bytes;
}

}  // namespace

// One pass: every input's reader open, advanced one event chunk at a time in
// the order of RunSource's steps (the inputs' chunks by start time), then each
// input's end in input order.
class RunCursor final : public format::TraceSource::Cursor {
 public:
  RunCursor(RunSource* source, format::SbtReader::EventKindFilter wanted)
      : source_(source), wanted_(std::move(wanted)), result_(source->base_) {
    for (const Survey& s : source_->surveys_)
      tables_.known_pids.insert(s.pids.begin(), s.pids.end());
  }

  StatusOr<bool> Next(model::TableKind* kind) override {
    ClearLastRows();
    if (inputs_.empty()) RETURN_IF_ERROR(StartInputs());
    const std::vector<PassStep>& steps = source_->steps_;
    while (step_ < steps.size()) {
      const PassStep& step = steps[step_];
      Input& in = *inputs_[step.input];
      const std::string& path = source_->inputs_[step.input];
      if (in.ended) {
        if (step.finish) Finish(in);
        ++step_;
        continue;
      }
      StatusOr<bool> more = in.cursor.Next(kind);
      if (!more.ok()) return Named(more.status(), path);
      in.copier.CopyNew(in.cursor.batch());
      const format::ReadReport& damage = in.reader->report();
      if (source_->options_.strict) RETURN_IF_ERROR(damage.DamageStatus(path));
      if (!*more) {  // what follows the input's last events: end anchors, final stats
        in.ended = true;
        continue;  // the step is done above
      }
      if (!step.whole) ++step_;
      if (in.cursor.stepped_over()) continue;
      TranslateEvents(in, *kind);
      if (source_->options_.progress) {
        uint64_t done = 0;
        for (const auto& i : inputs_) done += i->reader->report().valid_bytes;
        source_->options_.progress(MergeProgress{in.index, source_->inputs_.size(),
                                                 std::min(done, bytes_total_), bytes_total_,
                                                 events_});
      }
      return true;
    }
    if (!finished_) FinishPass();
    finished_ = true;
    return false;
  }
  const model::Trace& batch() const override { return batch_; }

 private:
  struct Input {
    Input(size_t i, std::unique_ptr<format::SbtReader> r,
          const format::SbtReader::EventKindFilter& wanted, OutputTables* tables, model::Trace* out,
          std::optional<uint32_t> sole)
        : index(i),
          reader(std::move(r)),
          cursor(reader->Events(wanted)),
          remap(tables, &out->strings, i),
          copier(&remap, out, sole) {
      cursor.StepEveryEventChunk();
    }
    size_t index;
    std::unique_ptr<format::SbtReader> reader;
    format::SbtReader::EventCursor cursor;
    InputRemap remap;
    MetadataCopier copier;
    bool ended = false;
  };

  static Status Named(const Status& st, const std::string& path) {
    if (st.code() == StatusCode::kDataLoss || st.code() == StatusCode::kIoError) return st;
    return Status(st.code(), path + ": " + st.message());
  }

  // Every input open at once, their survey's pids decided first, input by
  // input in pid order (as Open decided them); any other pid when an event
  // names it.
  Status StartInputs() {
    for (size_t index = 0; index < source_->inputs_.size(); ++index) {
      auto reader = format::SbtReader::Open(source_->inputs_[index]);
      if (!reader.ok()) {  // none started: a later Next fails again rather than reading past
        inputs_.clear();
        bytes_total_ = 0;
        return reader.status();
      }
      const Survey& survey = source_->surveys_[index];
      inputs_.push_back(std::make_unique<Input>(index, std::move(*reader), wanted_, &tables_,
                                                &batch_, SolePid(result_.inputs[index], survey)));
      for (uint32_t pid : survey.pids) inputs_.back()->remap.Pid(pid);
      bytes_total_ += result_.inputs[index].bytes;
    }
    return OkStatus();
  }

  // The chunk's rows are translated in place in the reader's batch and their
  // vector swapped into ours: no copy, and one chunk's rows in memory.
  void TranslateEvents(Input& input, model::TableKind kind) {
    MergedInput& in = result_.inputs[input.index];
    model::Trace* from = input.cursor.mutable_batch();
    model::ForEachRecordType([&]<typename T>() {
      if constexpr (RecordTraits<T>::kIsEvent) {
        if (RecordTraits<T>::kKind != kind) return;
        auto& rows = from->Rows<T>();
        for (T& row : rows) input.remap.Apply(&row);
        in.events += rows.size();
        in.events_by_kind[RecordTraits<T>::kLabel] += rows.size();
        events_ += rows.size();
        rows.swap(batch_.Rows<T>());
        last_kind_ = kind;
        last_input_ = &input;
      }
    });
  }

  // Gives the rows' vector back to the reader that filled it, which frees it:
  // the inputs' cursors wait their turns holding no rows (k inputs would
  // otherwise keep k chunks' rows and their kinds' largest buffers).
  void ClearLastRows() {
    if (!last_kind_) return;
    model::ForEachRecordType([&]<typename T>() {
      if constexpr (RecordTraits<T>::kIsEvent) {
        if (RecordTraits<T>::kKind != *last_kind_) return;
        auto& rows = batch_.Rows<T>();
        rows.swap(last_input_->cursor.mutable_batch()->Rows<T>());
        rows.clear();
        rows.shrink_to_fit();
      }
    });
    last_input_->cursor.ReleaseRows();
    last_kind_.reset();
    last_input_ = nullptr;
  }

  // An input is done: its merge rows and notes, in input order.
  void Finish(Input& in) {
    FinishInput(in.index, in.remap, in.reader->report(), &batch_, &result_);
  }

  // The run's result after this pass: a whole pass's counts and notes; a
  // pass of some kinds only (memory's, the export's metadata pass) adds the
  // notes it found and leaves the counts of the last whole pass.
  void FinishPass() {
    MergeResult& out = source_->result_;
    if (!wanted_) {
      out = result_;
      return;
    }
    for (const std::string& note : result_.notes)
      if (std::find(out.notes.begin(), out.notes.end(), note) == out.notes.end())
        out.notes.push_back(note);
  }

  RunSource* source_;
  format::SbtReader::EventKindFilter wanted_;
  MergeResult result_;
  OutputTables tables_;
  model::Trace batch_;  // the output: strings, metadata, the current rows
  std::vector<std::unique_ptr<Input>> inputs_;
  size_t step_ = 0;
  std::optional<model::TableKind> last_kind_;
  Input* last_input_ = nullptr;
  uint64_t bytes_total_ = 0, events_ = 0;
  bool finished_ = false;
};

}  // namespace internal

using internal::PassStep;
using internal::RunCursor;
using internal::Survey;

namespace {

bool IsEventChunk(const format::ChunkIndexEntry& e) {
  return e.table_kind != 0 && e.table_kind < uint16_t(model::TableKind::kDevice);
}

// The order a pass reads the inputs in: an input whose index lists a chunk of
// unknown kind (a file scanned without its index: no start times) whole,
// first; then one event chunk at a time from the input whose next one starts
// first (its index's min_ts; the earlier input on a tie), so the run's rows
// come about in time order, as one file's do, and a reader that restores
// time order (export's TimeOrderer) holds a few chunks per input, not the
// inputs before the last; then each input's end, in input order.
std::vector<PassStep> PassSteps(const std::vector<Survey>& surveys) {
  std::vector<PassStep> steps;
  using Next = std::pair<uint64_t, uint32_t>;  // min_ts, input
  std::priority_queue<Next, std::vector<Next>, std::greater<Next>> next;
  std::vector<std::vector<uint64_t>> starts(surveys.size());
  for (uint32_t i = 0; i < surveys.size(); ++i) {
    const auto& chunks = surveys[i].table_chunks;
    if (std::any_of(chunks.begin(), chunks.end(),
                    [](const format::ChunkIndexEntry& e) { return e.table_kind == 0; })) {
      steps.push_back(PassStep{.input = i, .whole = true});
      continue;
    }
    for (const format::ChunkIndexEntry& e : chunks)
      if (IsEventChunk(e)) starts[i].push_back(e.min_ts);
    if (!starts[i].empty()) next.emplace(starts[i].front(), i);
  }
  std::vector<size_t> taken(surveys.size(), 0);
  while (!next.empty()) {
    const uint32_t i = next.top().second;
    next.pop();
    steps.push_back(PassStep{.input = i});
    if (++taken[i] < starts[i].size()) next.emplace(starts[i][taken[i]], i);
  }
  for (uint32_t i = 0; i < surveys.size(); ++i)
    steps.push_back(PassStep{.input = i, .whole = true, .finish = true});
  return steps;
}

}  // namespace

RunSource::~RunSource() = default;

StatusOr<std::unique_ptr<RunSource>> RunSource::Open(std::span<const std::string> inputs,
                                                     const MergeOptions& options) {
  if (inputs.empty()) return InvalidArgument("no trace to merge");
  std::unique_ptr<RunSource> source(new RunSource());
  source->inputs_.assign(inputs.begin(), inputs.end());
  source->options_ = options;
  // Every input's processes before anything is merged, so a non-trace or
  // (with strict) a damaged input stops the merge at once.
  MergeResult& base = source->base_;
  for (const std::string& path : inputs) {
    ASSIGN_OR_RETURN(Survey s, internal::SurveyInput(path, options.strict));
    MergedInput in;
    in.path = path;
    auto size = FileSize(path);
    in.bytes = size.ok() ? *size : 0;
    in.processes = s.processes;
    for (MergedProcess& p : in.processes) p.out_pid = p.pid;
    in.replay_chunks = s.replay_chunks;
    in.realtime_begin = s.realtime_begin;
    in.realtime_end = s.realtime_end;
    base.inputs.push_back(std::move(in));
    source->surveys_.push_back(std::move(s));
  }
  RETURN_IF_ERROR(internal::CheckNoMergeOfAnInput(inputs, source->surveys_));
  internal::NoteInputsApart(&base);
  source->steps_ = PassSteps(source->surveys_);
  // What can be said before a pass: each input finished with the pids its
  // metadata names (a pass decides them first, in this order) and the damage
  // the survey found (every chunk checked).
  source->result_ = base;
  internal::OutputTables tables;
  for (const Survey& s : source->surveys_) tables.known_pids.insert(s.pids.begin(), s.pids.end());
  model::Trace scratch;
  for (size_t i = 0; i < inputs.size(); ++i) {
    internal::InputRemap remap(&tables, &scratch.strings, i);
    for (uint32_t pid : source->surveys_[i].pids) remap.Pid(pid);
    internal::FinishInput(i, remap, source->surveys_[i].report, &scratch, &source->result_);
  }
  return source;
}

StatusOr<std::unique_ptr<format::TraceSource::Cursor>> RunSource::Events(
    const format::SbtReader::EventKindFilter& wanted) {
  return std::unique_ptr<Cursor>(new RunCursor(this, wanted));
}

std::vector<format::ChunkIndexEntry> RunSource::TableChunks() const {
  // A pass's steps over the indexes: a step of one event chunk reads the
  // chunks before it in its file, and it.
  std::vector<format::ChunkIndexEntry> out;
  std::vector<size_t> read(surveys_.size(), 0);
  for (const PassStep& step : steps_) {
    const auto& chunks = surveys_[step.input].table_chunks;
    size_t& i = read[step.input];
    while (i < chunks.size()) {
      out.push_back(chunks[i++]);
      if (!step.whole && IsEventChunk(out.back())) break;
    }
  }
  return out;
}

uint64_t RunSource::bytes() const {
  uint64_t n = 0;
  for (const MergedInput& in : base_.inputs) n += in.bytes;
  return n;
}

std::vector<std::string> RunSource::files() const { return inputs_; }

format::ReadReport RunSource::report() const {
  format::ReadReport r;
  r.file_size = bytes();
  r.valid_bytes = r.file_size;
  r.indexed = true;
  return r;
}

}  // namespace tracesmith::cluster
