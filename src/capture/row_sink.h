// RowSink: where converted rows go. The capture engine writes them to an
// SbtWriter on its background thread; tests collect them in a model::Trace.
#pragma once

#include <cstdint>
#include <string_view>

#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/trace.h"

namespace tracesmith::capture {

class RowSink {
 public:
  virtual ~RowSink() = default;
  virtual uint32_t Intern(std::string_view s) = 0;
  virtual void Append(const model::KernelEvent& r) = 0;
  virtual void Append(const model::MemcpyEvent& r) = 0;
  virtual void Append(const model::MemsetEvent& r) = 0;
  virtual void Append(const model::SyncEvent& r) = 0;
  virtual void Append(const model::ApiEvent& r) = 0;
  virtual void Append(const model::NvtxRangeEvent& r) = 0;
  virtual void Append(const model::NvtxMarkerEvent& r) = 0;
  virtual void Append(const model::MemoryEvent& r) = 0;
  virtual void Append(const model::ModuleLoadEvent& r) = 0;
  virtual void Append(const model::GraphLaunchEvent& r) = 0;
  virtual void Append(const model::OverheadEvent& r) = 0;
  virtual void Append(const model::DropEvent& r) = 0;
  virtual void Append(const model::Thread& r) = 0;
};

// Forwards every row to one template sink (SbtWriter or model::Trace).
template <typename Target>
class ForwardingSink final : public RowSink {
 public:
  explicit ForwardingSink(Target* target) : target_(target) {}
  uint32_t Intern(std::string_view s) override {
    if constexpr (requires { target_->InternString(s); }) {
      return target_->InternString(s);
    } else {
      return target_->strings.Intern(s);
    }
  }
  void Append(const model::KernelEvent& r) override { Put(r); }
  void Append(const model::MemcpyEvent& r) override { Put(r); }
  void Append(const model::MemsetEvent& r) override { Put(r); }
  void Append(const model::SyncEvent& r) override { Put(r); }
  void Append(const model::ApiEvent& r) override { Put(r); }
  void Append(const model::NvtxRangeEvent& r) override { Put(r); }
  void Append(const model::NvtxMarkerEvent& r) override { Put(r); }
  void Append(const model::MemoryEvent& r) override { Put(r); }
  void Append(const model::ModuleLoadEvent& r) override { Put(r); }
  void Append(const model::GraphLaunchEvent& r) override { Put(r); }
  void Append(const model::OverheadEvent& r) override { Put(r); }
  void Append(const model::DropEvent& r) override { Put(r); }
  void Append(const model::Thread& r) override { Put(r); }

 private:
  template <typename T>
  void Put(const T& r) {
    if constexpr (requires { target_->template Append<T>(r); }) {
      target_->template Append<T>(r);
    } else {
      target_->template Rows<T>().push_back(r);
    }
  }
  Target* target_;
};

using SbtSink = ForwardingSink<format::SbtWriter>;
using TraceSink = ForwardingSink<model::Trace>;

}  // namespace tracesmith::capture
