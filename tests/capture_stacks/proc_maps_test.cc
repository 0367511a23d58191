// The /proc/self/maps scanner behind the unwinder's stack bounds: lines cut
// anywhere between reads, names that only look like "[stack]", and the
// mappings of the running process.
#include "stacks/proc_maps.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <memory>
#include <string>

namespace tracesmith::stacks {
namespace {

constexpr char kMaps[] =
    "00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon\n"
    "00e03000-00e24000 rw-p 00000000 00:00 0           [heap]\n"
    "7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n"
    "7f0000021000-7f0000030000 rw-p 00000000 00:00 0           /tmp/odd name [stack]\n"
    "7f0000030000-7f0000040000 rw-p 00000000 00:00 0           [stack:1234]\n"
    "7ffd7b1f0000-7ffd7b211000 rw-p 00000000 00:00 0           [stack]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0   [vsyscall]\n";

// The whole text fed in pieces of `chunk` bytes.
MapsScanner Scan(uintptr_t addr, size_t chunk) {
  MapsScanner s(addr);
  const std::string text = kMaps;
  for (size_t at = 0; at < text.size() && !s.found(); at += chunk)
    s.Feed(text.data() + at, std::min(chunk, text.size() - at));
  return s;
}

TEST(MapsScannerTest, FindsTheMappingWhereverTheReadsEnd) {
  for (size_t chunk : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{64}, sizeof(kMaps)}) {
    SCOPED_TRACE(chunk);
    MapsScanner s = Scan(0x7ffd7b200000, chunk);
    ASSERT_TRUE(s.found());
    EXPECT_EQ(s.mapping().start, 0x7ffd7b1f0000u);
    EXPECT_EQ(s.mapping().end, 0x7ffd7b211000u);
    EXPECT_EQ(s.mapping().below, 0x7f0000040000u);
    EXPECT_TRUE(s.mapping().main_stack);

    MapsScanner heap = Scan(0x00e03000, chunk);  // first byte: inclusive
    ASSERT_TRUE(heap.found());
    EXPECT_EQ(heap.mapping().start, 0xe03000u);
    EXPECT_EQ(heap.mapping().below, 0x452000u);
    EXPECT_FALSE(heap.mapping().main_stack);

    MapsScanner anon = Scan(0x7f0000020fff, chunk);  // an anonymous mapping: no name
    ASSERT_TRUE(anon.found());
    EXPECT_EQ(anon.mapping().end, 0x7f0000021000u);
    EXPECT_FALSE(anon.mapping().main_stack);

    EXPECT_FALSE(Scan(0x00452000, chunk).found());  // end: exclusive, and a gap
    EXPECT_FALSE(Scan(0x10, chunk).found());
  }
}

TEST(MapsScannerTest, OnlyTheNameStackIsTheMainStack) {
  // A file whose name ends in " [stack]", and another thread's stack as
  // Linux before 4.5 named it.
  for (uintptr_t addr : {uintptr_t{0x7f0000021000}, uintptr_t{0x7f0000030000}}) {
    MapsScanner s = Scan(addr, 5);
    ASSERT_TRUE(s.found());
    EXPECT_EQ(s.mapping().start, addr);
    EXPECT_FALSE(s.mapping().main_stack);
  }
}

// The reads end at the mapping: later bytes, even broken ones, are ignored.
TEST(MapsScannerTest, StopsAtTheMappingAndSkipsBrokenLines) {
  MapsScanner s(0x2000);
  const std::string text =
      "garbage line\n"
      "1000-2000 rw-p 0 0:0 0\n"
      "2000-3000 rw-p 0 0:0 0 [stack]\n"
      "not even hex\n";
  EXPECT_TRUE(s.Feed(text.data(), text.size()));
  EXPECT_EQ(s.mapping().start, 0x2000u);
  EXPECT_EQ(s.mapping().below, 0x2000u);
  EXPECT_TRUE(s.mapping().main_stack);
}

TEST(FindMappingOfTest, TheRunningProcess) {
  MappingOf m;  // the test body runs on the main thread
  ASSERT_TRUE(FindMappingOf(reinterpret_cast<uintptr_t>(__builtin_frame_address(0)), &m));
  EXPECT_TRUE(m.main_stack);
  EXPECT_LE(m.below, m.start);
  auto heap = std::make_unique<char[]>(1 << 20);
  ASSERT_TRUE(FindMappingOf(reinterpret_cast<uintptr_t>(heap.get()), &m));
  EXPECT_FALSE(m.main_stack);
  EXPECT_FALSE(FindMappingOf(0x10, &m));

  // Another thread: its stack is the mapping glibc gave it, whose top is
  // where pthread_getattr_np says the stack ends.
  static MappingOf thread_mapping;
  static uintptr_t attr_lo = 0, attr_hi = 0, sp = 0;
  pthread_t t;
  ASSERT_EQ(pthread_create(
                &t, nullptr,
                [](void*) -> void* {
                  sp = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
                  if (!FindMappingOf(sp, &thread_mapping)) return nullptr;
                  pthread_attr_t attr;
                  void* addr = nullptr;
                  size_t size = 0;
                  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
                    pthread_attr_getstack(&attr, &addr, &size);
                    pthread_attr_destroy(&attr);
                  }
                  attr_lo = reinterpret_cast<uintptr_t>(addr);
                  attr_hi = attr_lo + size;
                  return nullptr;
                },
                nullptr),
            0);
  pthread_join(t, nullptr);
  ASSERT_NE(attr_hi, 0u);
  EXPECT_FALSE(thread_mapping.main_stack);
  EXPECT_LE(thread_mapping.start, sp);
  EXPECT_GT(thread_mapping.end, sp);
  EXPECT_LE(thread_mapping.start, attr_lo + 4096);  // glibc may count a guard page
  EXPECT_GE(thread_mapping.end, attr_hi);
}

}  // namespace
}  // namespace tracesmith::stacks
