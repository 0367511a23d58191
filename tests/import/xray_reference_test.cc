// XRay import against llvm-xray on real logs: the fixtures in data/ were
// written by compiler-rt's runtime (basic and FDR mode) for xray_prog.cc, and
// llvm-xray's own output for them is checked in next to them
// (make_xray_fixtures.sh regenerates all of it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "import/import_data.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/import/xray.h"

namespace tracesmith::importer {
namespace {

// One call: (tid, name) -> begin/end in microseconds.
struct Call {
  double begin_us, end_us;
};
using Calls = std::map<std::pair<uint32_t, std::string>, std::vector<Call>>;

// Pairs llvm-xray's B/E events per thread, as a trace viewer does.
Calls ReferenceCalls(const std::string& json_text, size_t* open_at_end) {
  auto j = nlohmann::json::parse(json_text);
  Calls out;
  std::map<uint32_t, std::vector<std::pair<std::string, double>>> stacks;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    const uint32_t tid = static_cast<uint32_t>(std::stoul(e["tid"].get<std::string>()));
    const double ts = std::stod(e["ts"].get<std::string>());
    auto& stack = stacks[tid];
    if (ph == "B") {
      stack.emplace_back(e["name"], ts);
    } else if (ph == "E" && !stack.empty()) {
      out[{tid, stack.back().first}].push_back({stack.back().second, ts});
      stack.pop_back();
    }
  }
  *open_at_end = 0;
  for (auto& [tid, s] : stacks) *open_at_end += s.size();
  return out;
}

Calls ImportedCalls(const model::Trace& t) {
  Calls out;
  for (const auto& r : t.Rows<model::NvtxRangeEvent>())
    out[{r.tid, std::string(t.strings.Get(r.name_id))}].push_back(
        {static_cast<double>(r.start_ns) / 1e3, static_cast<double>(r.end_ns) / 1e3});
  return out;
}

// llvm-xray prints TSC / frequency in microseconds as a double: at ~1.8e15 us
// (a realtime clock in ns, as the runtime's TSC emulation gives) its
// resolution is 0.25 us.
constexpr double kToleranceUs = 0.5;

void ExpectSameAsLlvmXray(const char* log_name, const char* reference_name) {
  SCOPED_TRACE(log_name);
  auto map = LoadXRayInstrMap(DataPath("xray_prog.instrmap"));
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  ImportStats stats;
  auto trace = ImportXRayLog(ReadData(log_name), &*map, &stats);
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  EXPECT_EQ(stats.damage, "");
  EXPECT_TRUE(stats.warnings.empty()) << stats.warnings.front();

  size_t ref_open = 0;
  const Calls want = ReferenceCalls(ReadData(reference_name), &ref_open);
  const Calls got = ImportedCalls(*trace);
  EXPECT_EQ(stats.unmatched_entries, ref_open);
  EXPECT_EQ(stats.unmatched_exits, 0u);

  std::map<std::string, size_t> want_counts, got_counts;
  for (auto& [key, calls] : want) want_counts[key.second] += calls.size();
  for (auto& [key, calls] : got) got_counts[key.second] += calls.size();
  EXPECT_EQ(got_counts, want_counts);
  ASSERT_GE(want_counts.size(), 8u);  // the fixture's functions, std::thread internals, ...

  size_t compared = 0;
  for (auto& [key, ref_calls] : want) {
    auto ref = ref_calls;  // llvm-xray's are in exit order, ours in start order
    std::sort(ref.begin(), ref.end(), [](const Call& a, const Call& b) {
      return std::tie(a.begin_us, a.end_us) < std::tie(b.begin_us, b.end_us);
    });
    auto it = got.find(key);
    ASSERT_NE(it, got.end()) << key.second << " on thread " << key.first;
    ASSERT_EQ(it->second.size(), ref.size()) << key.second;
    for (size_t i = 0; i < ref.size(); ++i, ++compared) {
      EXPECT_NEAR(it->second[i].begin_us, ref[i].begin_us, kToleranceUs) << key.second << " #" << i;
      EXPECT_NEAR(it->second[i].end_us, ref[i].end_us, kToleranceUs) << key.second << " #" << i;
    }
  }
  EXPECT_EQ(compared, trace->Rows<model::NvtxRangeEvent>().size());
  EXPECT_GT(compared, 250u);
  EXPECT_EQ(trace->Rows<model::Thread>().size(), 3u);  // main and two workers
  ASSERT_EQ(trace->Rows<model::Process>().size(), 1u);
  // The log holds the custom event, the typed event and the logged arguments.
  EXPECT_GE(stats.skipped, 3u);
}

TEST(XRayReference, BasicModeLogMatchesLlvmXray) {
  ExpectSameAsLlvmXray("xray_basic.log", "xray_basic.trace_event.json");
}

TEST(XRayReference, FdrModeLogMatchesLlvmXray) {
  ExpectSameAsLlvmXray("xray_fdr.log", "xray_fdr.trace_event.json");
}

// Function ids, addresses and names against `llvm-xray extract --symbolize`.
TEST(XRayInstrMap, MatchesLlvmXrayExtract) {
  auto map = LoadXRayInstrMap(DataPath("xray_prog.instrmap"));
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  EXPECT_EQ(map->binary, "xray_prog.instrmap");
  std::string yaml = ReadData("xray_prog.instrmap.yaml");
  size_t sleds = 0, checked = 0;
  for (size_t pos = 0; (pos = yaml.find("- { id: ", pos)) != std::string::npos; ++pos) {
    ++sleds;
    const std::string line = yaml.substr(pos, yaml.find('\n', pos) - pos);
    const int id = std::stoi(line.substr(8));
    const size_t f = line.find("function: 0x");
    const uint64_t function = std::stoull(line.substr(f + 12), nullptr, 16);
    size_t n = line.find("function-name: ") + 15;
    std::string name = line[n] == '\'' ? line.substr(n + 1, line.rfind("', version") - n - 1)
                                       : line.substr(n, line.rfind(", version") - n);
    ASSERT_GE(id, 1);
    ASSERT_LE(static_cast<size_t>(id), map->addresses.size());
    EXPECT_EQ(map->addresses[id - 1], function) << line;
    EXPECT_EQ(map->Name(id), name) << line;
    ++checked;
  }
  EXPECT_EQ(map->sleds, sleds);
  EXPECT_GT(checked, 20u);
  EXPECT_EQ(map->Name(100000), "function#100000");
}

TEST(XRayInstrMap, RejectsFilesWithoutAMap) {
  auto not_elf = ParseXRayInstrMap("hello");
  EXPECT_FALSE(not_elf.ok());
  EXPECT_NE(not_elf.status().message().find("not an ELF"), std::string::npos);
  // The fixture with its section name table renamed away: no xray_instr_map.
  std::string elf = ReadData("xray_prog.instrmap");
  size_t at = elf.rfind("xray_instr_map");
  ASSERT_NE(at, std::string::npos);
  elf[at] = 'y';
  auto none = ParseXRayInstrMap(elf);
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  // Section headers cut off.
  auto cut = ParseXRayInstrMap(std::string_view(ReadData("xray_prog.instrmap")).substr(0, 4096));
  EXPECT_EQ(cut.status().code(), StatusCode::kDataLoss) << cut.status().ToString();
}

}  // namespace
}  // namespace tracesmith::importer
