// The CUDA contexts that exist when an in-process capture starts.
//
// `with tracesmith.profile():` (Session::Start) usually begins after the
// program made its contexts (PyTorch creates its primary context at the first
// tensor on the GPU), so a recorder that sets up per context in the
// context-created callback (PC sampling, SASS counts) never hears of them.
// At their first capture edge such recorders take these instead: the calling
// thread's current context and every device's active primary context, each
// once (an inactive primary context is not retained: that would create it).
// Contexts the program created with cuCtxCreate and does not hold current on
// the starting thread are not found (the driver API lists no contexts).
#pragma once

#include <cuda.h>

#include <functional>

namespace tracesmith::capture {

// fn(ctx) for each such context, with it current on the calling thread (the
// previous context back after); a primary context stays retained while fn
// runs, so that the program releasing it meanwhile cannot destroy it under fn.
void ForEachLiveContext(const std::function<void(CUcontext)>& fn);

}  // namespace tracesmith::capture
