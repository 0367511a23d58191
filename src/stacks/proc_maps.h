// The mapping of /proc/self/maps that holds an address, found with calls that
// are async-signal-safe (open, read, close into a buffer on the stack; no
// malloc, no stdio, no lock), for the unwinder's stack bounds: its first walk
// on a thread may run inside a signal handler or a CUDA callback.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tracesmith::stacks {

struct MappingOf {
  uintptr_t start = 0;  // [start, end)
  uintptr_t end = 0;
  uintptr_t below = 0;      // end of the mapping listed before it (0: none)
  bool main_stack = false;  // named [stack]: the main thread's, which grows down
};

// Reads /proc/self/maps in chunks cut anywhere (a line may span several);
// lines are in address order, so it stops at the one holding `addr`.
class MapsScanner {
 public:
  explicit MapsScanner(uintptr_t addr) : addr_(addr) {}

  // Consumes n bytes; true once the mapping holding addr has been read
  // (mapping() is then set and further bytes are ignored).
  bool Feed(const char* data, size_t n);
  const MappingOf& mapping() const { return found_; }
  bool found() const { return done_; }

 private:
  void EndLine();

  // The line being read: "start-end perms offset dev inode   name".
  static constexpr int kNameField = 6;    // fields before it: start, end, 4 more
  static constexpr size_t kNameKept = 8;  // enough to tell "[stack]" apart
  const uintptr_t addr_;
  int field_ = 0;
  bool bad_ = false;  // not "hex-hex ...": the line is skipped
  uintptr_t start_ = 0, end_ = 0;
  char name_[kNameKept] = {};
  size_t name_len_ = 0;  // of the whole name (only kNameKept bytes kept)
  uintptr_t prev_end_ = 0;
  bool done_ = false;
  MappingOf found_;
};

// The mapping holding `addr`, or false (not mapped, or /proc unreadable).
// errno is left as it was.
bool FindMappingOf(uintptr_t addr, MappingOf* out);

}  // namespace tracesmith::stacks
