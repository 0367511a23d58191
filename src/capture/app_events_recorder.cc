// The program's own counters, instants and ranges (app_events.h) as a
// recorder: always present (a program that makes no such call costs nothing),
// stamped with CUPTI's clock, the clock of every other host row. The calls
// record while CUPTI's activities are on (OnActivities), as kernels are: under
// --capture-range, --delay or --duration only inside the capture range.
#include <cupti.h>

#include "tracesmith/capture/app_events.h"
#include "tracesmith/capture/recorder.h"

namespace tracesmith::capture {
namespace {

uint64_t CuptiNow() {
  uint64_t ts = 0;
  cuptiGetTimestamp(&ts);
  return ts;
}

class AppEventsRecorder : public Recorder {
 public:
  explicit AppEventsRecorder(uint32_t pid) : writer_(pid) {
    AppEvents::Get().Begin(&CuptiNow, /*on=*/false);  // on with the activities
  }
  ~AppEventsRecorder() override { AppEvents::Get().End(); }
  const char* name() const override { return "app"; }
  void OnActivities(bool on) override { AppEvents::Get().SetOn(on); }
  void Collect() override { writer_.Collect(); }
  void Write(format::SbtWriter& sbt, bool final) override {
    if (final) {  // the calls made up to now, none after
      AppEvents::Get().End();
      writer_.Collect();
    }
    writer_.Write(sbt);
  }
  void WriteStats(StatSink& stats) override {
    writer_.AddStats([&](const char* name, uint64_t value, uint8_t severity) {
      stats.Add(name, value, severity);
    });
  }

 private:
  AppEventWriter writer_;
};

}  // namespace

std::unique_ptr<Recorder> MakeAppEventsRecorder(const RecorderContext& context) {
  return std::make_unique<AppEventsRecorder>(context.pid);
}

}  // namespace tracesmith::capture
