// The recorders of a capture, one line each (recorder.h). Their order is the
// order in which every hook is called: callbacks claimed by several, rows
// appended in one flush, stats at the end (`tracesmith info` lists them so).
//
// Adding a recorder: a file <name>_recorder.cc (added to CMakeLists.txt)
// that defines the class and `std::unique_ptr<Recorder> Make<Name>Recorder(
// const RecorderContext&)`, which returns null when the options do not ask
// for it; and its line below. Only the first kMaxDriverRecorders may claim
// driver callbacks (recorder.h): a recorder that does goes before the ninth line.
#include "recorder.h"

#define TS_RECORDERS(X) \
  X(Replay)             \
  X(Sync)               \
  X(Memory)             \
  X(PcSampling)         \
  X(SassCounts)         \
  X(GpuMetrics)         \
  X(AppEvents)          \
  X(GraphNodes)         \
  X(NvtxPayloads)

namespace tracesmith::capture {

#define TS_DECLARE_RECORDER(Name) \
  std::unique_ptr<Recorder> Make##Name##Recorder(const RecorderContext& context);
TS_RECORDERS(TS_DECLARE_RECORDER)
#undef TS_DECLARE_RECORDER

std::vector<std::unique_ptr<Recorder>> MakeRecorders(const RecorderContext& context) {
  std::vector<std::unique_ptr<Recorder>> out;
#define TS_MAKE_RECORDER(Name) \
  if (auto r = Make##Name##Recorder(context)) out.push_back(std::move(r));
  TS_RECORDERS(TS_MAKE_RECORDER)
#undef TS_MAKE_RECORDER
  return out;
}

#define TS_COUNT_RECORDER(Name) +1
static_assert(0 TS_RECORDERS(TS_COUNT_RECORDER) <= kMaxRecorders,
              "a CallbackTable mask has one bit per recorder");
#undef TS_COUNT_RECORDER

}  // namespace tracesmith::capture
