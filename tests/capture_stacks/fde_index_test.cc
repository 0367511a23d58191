// The page index into a module's FDE search table (src/stacks/fde_index.h): the
// rule for every function of a 4,000-function library is the same searched
// through the index as through the whole table, the index is used, and a
// wrong index (a module loaded where another was) costs a full search, never a
// wrong rule.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "stacks/fde_index.h"
#include "stacks/unwind_rule.h"

namespace tracesmith::stacks {
namespace {

struct BigLib {
  void* handle = nullptr;
  std::vector<uintptr_t> pcs;  // inside each function
  uintptr_t hdr = 0;
};

BigLib OpenBigLib() {
  BigLib b;
  b.handle = dlopen(TS_BIGLIB_PATH, RTLD_NOW | RTLD_LOCAL);
  if (!b.handle) return b;
  auto n = reinterpret_cast<int (*)()>(dlsym(b.handle, "TsBigLibFunctions"));
  auto fn = reinterpret_cast<void* (*)(int)>(dlsym(b.handle, "TsBigLibFunction"));
  if (!n || !fn) return b;
  for (int i = 0; i < n(); ++i) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(fn(i));
    for (uintptr_t off : {1, 5, 9}) b.pcs.push_back(at + off);
  }
  b.hdr = FindEhFrameHdr(b.pcs[0]);
  return b;
}

std::vector<uint64_t> Rules(const BigLib& b) {
  std::vector<uint64_t> out;
  for (uintptr_t pc : b.pcs) out.push_back(ComputeRuleFromEhFrameHdr(b.hdr, pc).Pack());
  return out;
}

// The header's table as the writer copies it.
std::vector<int32_t> TableOf(uintptr_t hdr, uint64_t* count) {
  uintptr_t eh_frame = 0;
  const int32_t* table = nullptr;
  // (the loaded header stands for its copy; the size only bounds what the table may span)
  if (!EhFrameHdrTable(reinterpret_cast<const uint8_t*>(hdr), size_t{1} << 28, hdr, &eh_frame,
                       &table, count))
    return {};
  return std::vector<int32_t>(table, table + 2 * *count);
}

TEST(FdeIndex, RulesThroughTheIndexAreTheTablesAndAWrongIndexCostsOnlyAFullSearch) {
  BigLib b = OpenBigLib();
  ASSERT_NE(b.handle, nullptr) << dlerror();
  ASSERT_EQ(b.pcs.size(), 12000u);
  ASSERT_NE(b.hdr, 0u);
  const std::vector<uint64_t> want = Rules(b);  // the whole table searched (no index yet)
  uint64_t count = 0;
  std::vector<int32_t> table = TableOf(b.hdr, &count);
  ASSERT_GE(count, 4000u);

  // A wrong index for this header: every location moved 5 pages up.
  std::vector<int32_t> wrong = table;
  for (uint64_t i = 0; i < count; ++i) wrong[2 * i] += 5 * 4096;
  ASSERT_TRUE(BuildFdeIndex(b.hdr, wrong.data(), count));
  EXPECT_EQ(Rules(b), want);

  // The right one replaces it: every search narrowed, the same rules.
  const uint64_t narrowed0 = GetFdeIndexCounts().narrowed;
  ASSERT_TRUE(BuildFdeIndex(b.hdr, table.data(), count));
  EXPECT_EQ(Rules(b), want);
  EXPECT_EQ(GetFdeIndexCounts().narrowed - narrowed0, b.pcs.size());
  EXPECT_GE(GetFdeIndexCounts().built, 2u);
}

TEST(FdeIndex, NarrowsToThePagesEntriesAndRefusesWhatItCannotIndex) {
  // 100 functions 1 KiB apart from location 0: four to a 4-KiB page.
  std::vector<int32_t> table;
  for (int i = 0; i < 100; ++i) table.insert(table.end(), {i * 1024, 0});
  const uintptr_t hdr = 0x10000;  // (a header address no module has)
  ASSERT_TRUE(BuildFdeIndex(hdr, table.data(), 100));
  uint64_t lo = 0, hi = 0;
  ASSERT_TRUE(NarrowFdeSearch(hdr, 5 * 1024 + 7, 100, &lo, &hi));
  EXPECT_EQ(lo, 4u);  // the last entry at or before the page's start (4096)
  EXPECT_EQ(hi, 9u);  // past the last one at or before the next page's (8192): entry 8
  EXPECT_LE(table[2 * lo], 5 * 1024 + 7);
  EXPECT_GT(table[2 * hi], 5 * 1024 + 7);
  ASSERT_TRUE(NarrowFdeSearch(hdr, 200 * 1024, 100, &lo, &hi));  // past the last entry
  EXPECT_EQ(hi, 100u);
  EXPECT_FALSE(NarrowFdeSearch(hdr, -1, 100, &lo, &hi));         // before the first
  EXPECT_FALSE(NarrowFdeSearch(hdr, 5000, 99, &lo, &hi));        // another table's count
  EXPECT_FALSE(NarrowFdeSearch(hdr + 16, 5000, 100, &lo, &hi));  // no index for that header
  // The same table again (every module is prepared again after a dlclose): kept, not rebuilt.
  const FdeIndexCounts before = GetFdeIndexCounts();
  EXPECT_TRUE(BuildFdeIndex(hdr, table.data(), 100));
  EXPECT_EQ(GetFdeIndexCounts().built, before.built);
  EXPECT_EQ(GetFdeIndexCounts().bytes, before.bytes);
  std::vector<int32_t> unsorted = table;
  std::swap(unsorted[20], unsorted[40]);
  EXPECT_FALSE(BuildFdeIndex(hdr + 32, unsorted.data(), 100));
  EXPECT_FALSE(BuildFdeIndex(hdr + 48, table.data(), 10));  // small: searched fast as it is
}

}  // namespace
}  // namespace tracesmith::stacks
