// CSV of GPU work (kernels, copies, memsets), one row each, for spreadsheets.
// RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled.
#include <charconv>

#include "sinks.h"
#include "tracesmith/model/event_names.h"

namespace tracesmith::exporter {
namespace {

using namespace model;

class CsvSink : public EventSink {
 public:
  explicit CsvSink(OutputFile* out) : out_(out) {}

  Status Begin(const ExportContext& ctx) override {
    meta_ = ctx.meta;
    line_ =
        "kind,name,start_ns,end_ns,duration_ns,pid,device,context,stream,correlation,"
        "grid_x,grid_y,grid_z,block_x,block_y,block_z,registers_per_thread,"
        "static_shared_bytes,dynamic_shared_bytes,bytes,copy_kind,bandwidth_gbps\n";
    out_->Write(line_);
    return OkStatus();
  }

  void On(const KernelEvent& k) override {
    Common("kernel", meta_->strings.Get(k.demangled_id ? k.demangled_id : k.name_id), k.start_ns,
           k.end_ns, k.pid, k.device_id, k.context_id, k.stream_id, k.correlation_id);
    for (uint32_t v : {k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z,
                       k.registers_per_thread, k.static_shared_bytes, k.dynamic_shared_bytes}) {
      Num(v);
      line_ += ',';
    }
    line_ += ",,\n";
    Emit();
    ++kernels_;
  }
  void On(const MemcpyEvent& m) override {
    Common("memcpy", EventName(*meta_, m), m.start_ns, m.end_ns, m.pid, m.device_id, m.context_id,
           m.stream_id, m.correlation_id);
    line_ += ",,,,,,,,,";
    Num(m.bytes);
    line_ += ',';
    line_ += CopyKindName(m.copy_kind);
    line_ += ',';
    Double(BandwidthGBps(m.bytes, m.start_ns, m.end_ns));
    line_ += '\n';
    Emit();
  }
  void On(const MemsetEvent& m) override {
    Common("memset", EventName(*meta_, m), m.start_ns, m.end_ns, m.pid, m.device_id, m.context_id,
           m.stream_id, m.correlation_id);
    line_ += ",,,,,,,,,";
    Num(m.bytes);
    line_ += ",,";
    Double(BandwidthGBps(m.bytes, m.start_ns, m.end_ns));
    line_ += '\n';
    Emit();
  }

  Status Finish(ExportStats* stats) override {
    stats->kernel_events = kernels_;
    return OkStatus();
  }

 private:
  void Common(const char* kind, std::string_view name, uint64_t start, uint64_t end, uint32_t pid,
              uint32_t device, uint32_t context, uint32_t stream, uint32_t corr) {
    line_.clear();
    line_ += kind;
    line_ += ',';
    Quoted(name);
    for (uint64_t v : {start, end, end > start ? end - start : 0, uint64_t{pid}, uint64_t{device},
                       uint64_t{context}, uint64_t{stream}, uint64_t{corr}}) {
      line_ += ',';
      Num(v);
    }
    line_ += ',';
  }
  void Quoted(std::string_view s) {
    if (s.find_first_of(",\"\r\n") == std::string_view::npos) {
      line_ += s;
      return;
    }
    line_ += '"';
    for (char c : s) {
      if (c == '"') line_ += '"';
      line_ += c;
    }
    line_ += '"';
  }
  void Num(uint64_t v) {
    char tmp[24];
    auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    line_.append(tmp, r.ptr);
  }
  void Double(double v) {
    char tmp[32];
    auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    line_.append(tmp, r.ptr);
  }
  void Emit() { out_->Write(line_); }

  OutputFile* out_;
  const Trace* meta_ = nullptr;
  std::string line_;
  uint64_t kernels_ = 0;
};

}  // namespace

std::unique_ptr<EventSink> MakeCsvSink(OutputFile* out) { return std::make_unique<CsvSink>(out); }

}  // namespace tracesmith::exporter
