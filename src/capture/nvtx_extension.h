// The capture's answer to NVTX's extension modules (nvtx_extension.cc):
// injection.cc exports it as InitializeInjectionNvtxExtension.
#pragma once

struct nvtxExtModuleInfo_t;

namespace tracesmith::capture {

// Fills the payload module's schema and enum registration slots; other
// modules' slots stay empty. Returns 1 (NVTX's "success": 0 would make every
// extension call a no-op).
int InitializeNvtxExtension(nvtxExtModuleInfo_t* info);

}  // namespace tracesmith::capture
