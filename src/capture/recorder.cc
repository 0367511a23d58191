#include "tracesmith/capture/recorder.h"

#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>

namespace tracesmith::capture {

void CallbackTable::ClaimWork(CUpti_CallbackId cbid, CostSite site, bool stack, bool driver_row) {
  if (cbid == 0 || cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE) return;
  DriverRoute& r = driver[cbid];
  if (!(r.flags & DriverRoute::kTimed)) {
    r.flags |= DriverRoute::kTimed;
    r.site = uint8_t(site);
  }
  if (stack) r.flags |= DriverRoute::kStack;
  if (driver_row) r.flags |= DriverRoute::kDriverRow;
}

void CallbackClaims::Driver(CUpti_CallbackId cbid, const DriverClaim& how) {
  if (cbid == 0 || cbid >= CUPTI_DRIVER_TRACE_CBID_SIZE) return;
  if (recorder_ >= kMaxDriverRecorders) {
    std::fprintf(stderr,
                 "tracesmith: internal error: recorder %d claims a driver callback; only the "
                 "first %d may (recorders.cc)\n",
                 recorder_, kMaxDriverRecorders);
    std::abort();
  }
  const auto bit = uint8_t(bit_);
  DriverRoute& r = table_->driver[cbid];
  if (!how.timed) {
    if (how.entry) r.after_entry |= bit;
    if (how.exit) r.after_exit |= bit;
    return;
  }
  if (!(r.flags & DriverRoute::kTimed)) {
    r.flags |= DriverRoute::kTimed;
    r.site = uint8_t(how.site);
  }
  if (how.stack && stacks_on_) r.flags |= DriverRoute::kStack;
  if (how.entry) r.entry |= bit;
  if (how.exit) r.exit |= bit;
}

std::string Demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : name;
  std::free(d);
  return out;
}

bool IsKernelLaunchCallback(CUpti_CallbackId cbid) {
  return cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz;
}

}  // namespace tracesmith::capture
