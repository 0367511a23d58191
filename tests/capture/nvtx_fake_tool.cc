// A stand-in for CUPTI's NVTX functions, in an object of its own as CUPTI's
// are (nvtx_extension_test.cc): WrapNvtxCore wraps only a tool's functions.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

extern "C" {
[[gnu::visibility("default")]] int ts_fake_tool_calls = 0;
[[gnu::visibility("default")]] const void* ts_fake_tool_saw = nullptr;

[[gnu::visibility("default")]] int TsFakeToolDomainPush(nvtxDomainHandle_t,
                                                        const nvtxEventAttributes_t* a) {
  ++ts_fake_tool_calls;
  ts_fake_tool_saw = a;
  return 3;
}
[[gnu::visibility("default")]] void TsFakeToolMark(const nvtxEventAttributes_t* a) {
  ++ts_fake_tool_calls;
  ts_fake_tool_saw = a;
}
}
