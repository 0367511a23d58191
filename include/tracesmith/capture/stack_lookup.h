// StackLookup: the stack id recorded at API entry for a correlation id, as the
// activity converter (activity_converter.h) reads it. Apart from the
// converter so that its implementation (correlation_stacks.h) builds without
// the CUPTI headers.
#pragma once

#include <cstdint>

namespace tracesmith::capture {

// Stack id recorded at API entry for a correlation id (0: none).
class StackLookup {
 public:
  virtual ~StackLookup() = default;
  virtual uint32_t Find(uint32_t correlation_id) = 0;
};

}  // namespace tracesmith::capture
