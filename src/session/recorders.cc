// The recorders of a capture, one line each (tracesmith/capture/recorder.h). Their order
// is the order in which every hook is called: callbacks claimed by several,
// rows appended in one flush, stats at the end (`tracesmith info` lists them
// so).
//
// Adding a recorder: a file <name>_recorder.cc in its module (capture/,
// hardware/, replay_capture/ or a new one) that defines the class and
// `std::unique_ptr<capture::Recorder> Make<Name>Recorder(const
// capture::RecorderContext&)`, declared in the module's public header and
// null when the options do not ask for it; and its line below, with its
// namespace. Only the first kMaxDriverRecorders may claim driver callbacks
// (recorder.h): a recorder that does goes before the ninth line.
#include "recorders.h"

#include "tracesmith/hardware/recorders.h"
#include "tracesmith/replay_capture/replay_recorder.h"

#define TS_RECORDERS(X)     \
  X(replay_capture, Replay) \
  X(capture, Sync)          \
  X(capture, Memory)        \
  X(hardware, PcSampling)   \
  X(hardware, SassCounts)   \
  X(hardware, GpuMetrics)   \
  X(capture, AppEvents)     \
  X(capture, GraphNodes)    \
  X(capture, NvtxPayloads)

namespace tracesmith::session {

std::vector<std::unique_ptr<capture::Recorder>> MakeRecorders(
    const capture::RecorderContext& context) {
  std::vector<std::unique_ptr<capture::Recorder>> out;
#define TS_MAKE_RECORDER(Module, Name) \
  if (auto r = Module::Make##Name##Recorder(context)) out.push_back(std::move(r));
  TS_RECORDERS(TS_MAKE_RECORDER)
#undef TS_MAKE_RECORDER
  return out;
}

#define TS_COUNT_RECORDER(Module, Name) +1
static_assert(0 TS_RECORDERS(TS_COUNT_RECORDER) <= capture::kMaxRecorders,
              "a CallbackTable mask has one bit per recorder");
#undef TS_COUNT_RECORDER

}  // namespace tracesmith::session
