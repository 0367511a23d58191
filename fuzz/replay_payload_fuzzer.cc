// Fuzzes the replay payload reader two ways: the first byte's low bit picks
// (0) one payload chunk parsed directly, type from the second byte, or (1) a
// whole SBT file read with ReadReplayCapture + ValidateCapture. Neither may
// crash, read out of bounds or allocate more than the input justifies.
#include <cstddef>
#include <cstdint>
#include <span>

#include "tracesmith/format/replay_payload.h"
#include "tracesmith/format/sbt_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tracesmith;
  if (size < 2) return 0;
  std::span<const uint8_t> rest(data + 2, size - 2);
  if ((data[0] & 1) == 0) {
    format::ReplayCapture cap;
    const uint16_t type = uint16_t(0x40 + data[1] % 8);  // the seven types + one unknown
    (void)format::ParsePayloadChunk(type, rest, 0, &cap);
    (void)format::ValidateCapture(cap);
    return 0;
  }
  auto reader = format::SbtReader::FromMemory(rest);
  if (!reader.ok()) return 0;
  auto cap = format::ReadReplayCapture(**reader);
  if (cap.ok()) (void)format::ValidateCapture(*cap);
  return 0;
}
