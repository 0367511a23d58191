// The hook through which host call stacks join captured GPU work.
//
// When a hook is set before a capture starts, the capture calls it at the
// entry of every driver API call that puts work on the GPU (kernel launches,
// memcpy, memset, graph launches) on the calling thread. It returns a stack
// id (StackNode table, 0 = none); the capture records (correlation id ->
// stack id) in a per-thread lock-free buffer, and its writer thread sets
// stack_id on the API row and on the GPU rows with that correlation id.
// The hook runs on the application's thread inside a CUDA call: it must not
// call CUDA and should be fast (it is on the launch path).
#pragma once

#include <cstdint>

namespace tracesmith::capture {

using StackHook = uint32_t (*)();

// Sets (or clears, with nullptr) the hook. Takes effect for captures started later.
void SetStackHook(StackHook hook);
StackHook GetStackHook();

}  // namespace tracesmith::capture
