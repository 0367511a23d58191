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
  // One overload per record type (model/records.h's TS_RECORD_TABLE).
#define TS_ROW_SINK_APPEND(T, ...) virtual void Append(const model::T& r) = 0;
  TS_FOR_EACH_RECORD_TYPE(TS_ROW_SINK_APPEND)
#undef TS_ROW_SINK_APPEND
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
#define TS_FORWARD_APPEND(T, ...) \
  void Append(const model::T& r) override { Put(r); }
  TS_FOR_EACH_RECORD_TYPE(TS_FORWARD_APPEND)
#undef TS_FORWARD_APPEND

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
