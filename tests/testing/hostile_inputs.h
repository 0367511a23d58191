// Hostile inputs for the CLI suite (tests/cli/hostile_input_test.cc, issue
// #21): deterministic, generated files of every class of input that once
// crashed, hung or exhausted a command — forged SBT (index row counts, zstd
// chunks declaring 64 MiB over junk, constant columns expanding to millions
// of rows, absurd times and ids, terminal escapes in names), Kineto JSON
// (unrelated, deeply nested, absurd numbers, cut short, gzip bombs) and XRay
// logs (unpaired entries and exits, absurd TSCs, cut short). Small files:
// the suite runs every command on each, also under ASan.
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "testing/build_paths.h"
#include "testing/sbt_forge.h"
#include "tracesmith/base/file_util.h"
#include "tracesmith/format/sbt_writer.h"
#include "tracesmith/model/synthetic.h"

namespace tracesmith::testing {

// One hostile input: `name` is also the file name in the test's directory.
struct HostileInput {
  const char* name;
  // Writes the file at `path`; false on failure. Inputs that are not files
  // (a FIFO, /dev/zero) are made by the test itself.
  std::function<bool(const std::string& path)> write;
};

namespace hostile {

inline bool WriteBytes(const std::string& path, const std::string& bytes) {
  return WriteStringToFile(path, bytes).ok();
}
inline bool WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  return WriteBytes(path, std::string(bytes.begin(), bytes.end()));
}

// A small well-formed trace (kernels with their launches, copies, syncs,
// NVTX ranges on 2 devices) to mutate; 16 rows per chunk: many chunks.
inline model::Trace BaseTrace(uint64_t kernels = 300) {
  model::SyntheticOptions o;
  o.kernels = kernels;
  return model::MakeSyntheticTrace(o);
}
inline std::vector<uint8_t> BaseFile(const std::string& scratch) {
  if (!format::WriteTraceFile(BaseTrace(), scratch, {.rows_per_chunk = 16}).ok()) return {};
  auto s = ReadFileToString(scratch);
  return s.ok() ? std::vector<uint8_t>(s->begin(), s->end()) : std::vector<uint8_t>{};
}
// A mutated copy of the base trace written at `path`.
inline bool WriteMutated(const std::string& path, const std::function<void(model::Trace*)>& edit) {
  model::Trace t = BaseTrace();
  edit(&t);
  return format::WriteTraceFile(t, path, {.rows_per_chunk = 64}).ok();
}

inline std::string Gzip(const std::string& raw) {
  z_stream z{};
  if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK) return "";
  std::string out(deflateBound(&z, raw.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  z.avail_in = static_cast<uInt>(raw.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Kineto events: `n` kernels with their launch calls, fields from `fill`.
inline std::string KinetoEvents(int n, const std::function<std::string(int)>& event) {
  std::string s = R"({"schemaVersion": 1, "traceEvents": [)";
  for (int i = 0; i < n; ++i) s += (i ? ",\n" : "\n") + event(i);
  return s + "\n]}\n";
}

// An XRay basic-mode ("naive") log: the 32-byte file header, then 32-byte
// records {u16 type 0, u8 cpu, u8 kind, i32 function, u64 tsc, u32 tid,
// u32 pid, 8 bytes padding}.
struct XRayRecord {
  uint8_t kind;  // 0 entry, 1 exit, 2 tail exit
  int32_t func;
  uint64_t tsc;
  uint32_t tid, pid;
};
inline std::string XRayBasicLog(const std::vector<XRayRecord>& records,
                                uint64_t cycle_frequency = 1'000'000'000) {
  std::string s(32, '\0');
  const uint16_t version = 3, type = 0;
  const uint32_t bits = 3;  // constant and nonstop TSC
  std::memcpy(&s[0], &version, 2);
  std::memcpy(&s[2], &type, 2);
  std::memcpy(&s[4], &bits, 4);
  std::memcpy(&s[8], &cycle_frequency, 8);
  for (const XRayRecord& r : records) {
    char rec[32] = {};
    rec[3] = static_cast<char>(r.kind);
    std::memcpy(rec + 4, &r.func, 4);
    std::memcpy(rec + 8, &r.tsc, 8);
    std::memcpy(rec + 16, &r.tid, 4);
    std::memcpy(rec + 20, &r.pid, 4);
    s.append(rec, 32);
  }
  return s;
}

inline std::string Junk(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

}  // namespace hostile

// Every hostile input file. `source_dir`: the repository (shipped traces and
// fixtures).
inline std::vector<HostileInput> HostileInputs(const std::string& source_dir) {
  using namespace hostile;
  using model::KernelEvent;
  std::vector<HostileInput> v;
  // The two largest inputs are 4x and 8x smaller under ASan (they were 90 of
  // the ASan suite's 380 s of hostile inputs): there the commands get no
  // address-space limit, which their size tests in release. The constant
  // columns' decoders run on fewer chunks alike; the gzip bomb then stays
  // under `import`'s 1-GiB input cap (reached in release), so under ASan the
  // JSON reader ends it: the cap itself is ImportLimits' test, in process.
  const bool smaller = ProductUnderAsan();
  const std::string example = source_dir + "/examples/traces/mlp_train.sbt";
  const std::string xray = source_dir + "/tests/import/data/xray_basic.log";
  auto shipped = [](const std::string& p) {
    auto s = ReadFileToString(p);
    return s.ok() ? *s : std::string();
  };

  // --- Not traces at all.
  v.push_back({"empty.sbt", [](const std::string& p) { return WriteBytes(p, std::string()); }});
  v.push_back({"one_byte.sbt", [](const std::string& p) { return WriteBytes(p, "\x89"); }});
  v.push_back({"junk.bin", [](const std::string& p) { return WriteBytes(p, Junk(64 << 10, 1)); }});
  v.push_back(
      {"header_only.sbt", [](const std::string& p) { return WriteBytes(p, ForgeFileHeader()); }});

  // --- SBT, forged at the byte level.
  // Index rows that overflow rows * sizeof(row), and that are simply absurd.
  for (uint64_t rows : {uint64_t{1} << 63, ~uint64_t{0} / sizeof(KernelEvent) + 2}) {
    v.push_back({rows == uint64_t{1} << 63 ? "index_rows_2e63.sbt" : "index_rows_wrap.sbt",
                 [rows](const std::string& p) {
                   std::vector<uint8_t> f = ForgeIndexRows(BaseFile(p), rows);
                   return !f.empty() && WriteBytes(p, f);
                 }});
  }
  // The trailer points at the file header, at itself, and past the end.
  for (int where : {0, 1, 2}) {
    static const char* kNames[] = {"trailer_to_header.sbt", "trailer_to_self.sbt",
                                   "trailer_past_end.sbt"};
    v.push_back({kNames[where], [where](const std::string& p) {
                   std::vector<uint8_t> f = BaseFile(p);
                   if (f.size() < 64) return false;
                   const uint64_t offset = where == 0   ? 0
                                           : where == 1 ? f.size() - format::kTrailerSize
                                                        : uint64_t{1} << 62;
                   std::memcpy(f.data() + f.size() - format::kTrailerSize, &offset, 8);
                   return WriteBytes(p, f);
                 }});
  }
  // 300 table chunks declaring 64 MiB of raw bytes over 12 bytes of junk.
  v.push_back({"zstd_64mib_junk.sbt", [](const std::string& p) {
                 std::vector<uint8_t> f = ForgeFileHeader();
                 for (int i = 0; i < 300; ++i) {
                   const std::string j = Junk(12, i);
                   AppendForgedChunk(&f, uint16_t(format::ChunkType::kTable), format::kChunkZstd,
                                     format::kMaxChunkRawBytes,
                                     std::vector<uint8_t>(j.begin(), j.end()));
                 }
                 return WriteBytes(p, f);
               }});
  // The same with uncompressed chunks of junk that say they are a kernel table.
  v.push_back({"raw_junk_tables.sbt", [](const std::string& p) {
                 std::vector<uint8_t> f = ForgeFileHeader();
                 for (int i = 0; i < 200; ++i) {
                   std::string j = Junk(64, 100 + i);
                   j[0] = char(model::TableKind::kKernel);
                   AppendForgedChunk(&f, uint16_t(format::ChunkType::kTable), 0, uint32_t(j.size()),
                                     std::vector<uint8_t>(j.begin(), j.end()));
                 }
                 return WriteBytes(p, f);
               }});
  // Constant columns: 8 chunks of 131072 identical kernels (1 M rows) in a
  // few KB.
  v.push_back({"constant_columns.sbt", [=](const std::string& p) {
                 auto w = format::SbtWriter::Open(p, format::SbtWriterOptions{});
                 if (!w.ok()) return false;
                 KernelEvent k{};
                 k.start_ns = 1000;
                 k.end_ns = 2000;
                 k.correlation_id = 7;
                 std::vector<KernelEvent> rows(format::kMaxRowsPerChunk, k);
                 for (int i = 0; i < (smaller ? 2 : 8); ++i)
                   (*w)->AppendRows(rows.data(), rows.size());
                 return (*w)->Close().ok();
               }});
  // A shipped trace cut in half, and with bytes flipped every 997 bytes.
  v.push_back({"shipped_cut.sbt", [=](const std::string& p) {
                 const std::string s = shipped(example);
                 return !s.empty() && WriteBytes(p, s.substr(0, s.size() / 2));
               }});
  v.push_back({"shipped_flipped.sbt", [=](const std::string& p) {
                 std::string s = shipped(example);
                 for (size_t i = 100; i < s.size(); i += 997) s[i] ^= char(0x10 + i % 7);
                 return !s.empty() && WriteBytes(p, s);
               }});
  // A trace followed by 256 MiB of zeros (sparse: the file takes no disk).
  v.push_back({"sparse_tail.sbt", [](const std::string& p) {
                 std::vector<uint8_t> f = BaseFile(p);
                 if (f.empty() || !WriteBytes(p, f)) return false;
                 return ::truncate(p.c_str(), static_cast<off_t>(f.size() + (256u << 20))) == 0;
               }});

  // --- SBT, well-formed but with values no capture writes.
  // 9e15 us kernels, and kernels that end at 2^64-1 or before they start
  // (unknown end).
  v.push_back({"absurd_durations.sbt", [](const std::string& p) {
                 return WriteMutated(p, [](model::Trace* t) {
                   auto& ks = t->Rows<KernelEvent>();
                   for (size_t i = 0; i < ks.size(); ++i) {
                     if (i % 3 == 0) ks[i].end_ns = ks[i].start_ns + 9'000'000'000'000'000'000u;
                     if (i % 3 == 1) ks[i].end_ns = ~uint64_t{0};
                     if (i % 3 == 2) ks[i].end_ns = 0;
                   }
                 });
               }});
  // Times at both ends of the range.
  v.push_back({"extreme_times.sbt", [](const std::string& p) {
                 return WriteMutated(p, [](model::Trace* t) {
                   auto& ks = t->Rows<KernelEvent>();
                   for (size_t i = 0; i < ks.size(); ++i) {
                     ks[i].start_ns = i % 2 ? ~uint64_t{0} - 10 : 0;
                     ks[i].end_ns = i % 2 ? ~uint64_t{0} : 5;
                     ks[i].queued_ns = ks[i].submitted_ns = ~uint64_t{0};
                   }
                 });
               }});
  // Correlation id 2^32-1 (and 2^31) on every kernel and call, in 300
  // processes, the calls with external ids (issue #41 item 5: `export -f json`
  // crashed at 2^32-1 and took 16.8 GB at 2^31); ids of devices, streams,
  // names and stacks at 2^32-1.
  for (uint32_t corr : {~0u, 0x80000000u}) {
    v.push_back({corr == ~0u ? "max_ids.sbt" : "half_ids.sbt", [corr](const std::string& p) {
                   return WriteMutated(p, [corr](model::Trace* t) {
                     uint32_t i = 0;
                     for (KernelEvent& k : t->Rows<KernelEvent>()) {
                       k.correlation_id = corr;
                       k.pid = 1000 + i++;
                       if (i % 4 == 0) k.device_id = ~0u;
                       if (i % 4 == 1) k.stream_id = ~0u;
                       if (i % 4 == 2) k.context_id = ~0u;
                       if (i % 4 == 3) k.stack_id = ~0u;
                       k.grid_x = k.block_x = ~0u;
                     }
                     i = 0;
                     for (model::ApiEvent& a : t->Rows<model::ApiEvent>()) {
                       a.correlation_id = corr;
                       a.external_id = i % 2 ? ~uint64_t{0} - i : 1 + i;
                       a.pid = 1000 + i++;
                       a.stack_id = i % 2 ? ~0u : a.stack_id;
                     }
                     for (model::SyncEvent& s : t->Rows<model::SyncEvent>()) s.stream_id = ~0u;
                   });
                 }});
  }
  // String ids past the string table: 2^32-1 and 2^31-1.
  v.push_back({"max_name_ids.sbt", [](const std::string& p) {
                 return WriteMutated(p, [](model::Trace* t) {
                   uint32_t i = 0;
                   for (KernelEvent& k : t->Rows<KernelEvent>())
                     k.name_id = k.demangled_id = i++ % 2 ? ~0u : 0x7fffffffu;
                   for (model::ApiEvent& a : t->Rows<model::ApiEvent>()) a.name_id = ~0u;
                 });
               }});
  // Terminal escapes, newlines and invalid UTF-8 in names (view, timeline
  // and analyze print them).
  v.push_back({"escape_names.sbt", [](const std::string& p) {
                 return WriteMutated(p, [](model::Trace* t) {
                   const uint32_t ids[] = {
                       t->strings.Intern("\x1b[2J\x1b[H\x1b]0;owned\x07kernel"),
                       t->strings.Intern("line1\nline2\r\tcol\x7f\x9b"
                                         "31m"),
                       t->strings.Intern("\xff\xfe\xc3(invalid utf8\x80"),
                       t->strings.Intern(std::string(5000, 'A') + "\x1b[31m"),
                       t->strings.Intern(std::string("nul\0inside", 10)),
                   };
                   size_t i = 0;
                   for (KernelEvent& k : t->Rows<KernelEvent>()) k.name_id = ids[i++ % 5];
                   for (model::ApiEvent& a : t->Rows<model::ApiEvent>()) a.name_id = ids[i++ % 5];
                 });
               }});
  // Every kernel on a stream of its own (3000 streams: timeline rows,
  // analyze's per-stream tables, dry-run's stream emulation).
  v.push_back({"many_streams.sbt", [](const std::string& p) {
                 model::Trace t = BaseTrace(3000);
                 uint32_t i = 0;
                 for (KernelEvent& k : t.Rows<KernelEvent>()) k.stream_id = 7 + i++;
                 return format::WriteTraceFile(t, p).ok();
               }});

  // --- Kineto (torch.profiler) JSON.
  v.push_back({"empty_object.json", [](const std::string& p) { return WriteBytes(p, "{}"); }});
  v.push_back({"unrelated.json", [](const std::string& p) {
                 return WriteBytes(p, R"({"name": "left-pad", "version": "1.3.0",
                   "traceEvents": {"not": "an array"}, "dependencies": {}})");
               }});
  v.push_back({"array.json", [](const std::string& p) {
                 return WriteBytes(p, R"([{"ph": "X", "ts": 1, "dur": 2, "name": "k"}])");
               }});
  v.push_back({"nul_bytes.json", [](const std::string& p) {
                 return WriteBytes(p, "{\"traceEvents\": [" + std::string(4096, '\0'));
               }});
  // 200000 nested arrays inside an event's args (a recursive parser
  // overflows its stack).
  v.push_back({"deep_nesting.json", [](const std::string& p) {
                 return WriteBytes(p, R"({"traceEvents": [{"ph": "X", "cat": "kernel", "args": )" +
                                          std::string(200000, '[') + std::string(200000, ']') +
                                          "}]}");
               }});
  // Absurd numbers: 9e15 us durations, negative and 1e300 timestamps, ids
  // past 2^64, correlation 2^32-1 in 300 processes, escapes in names.
  v.push_back(
      {"absurd_numbers.json", [](const std::string& p) {
         return WriteBytes(
             p, KinetoEvents(1200, [](int i) {
               static const char* kTs[] = {"9e15", "-5", "1e300", "18446744073709551615",
                                           "1.5",  "NaN"};
               static const char* kDur[] = {"9e15", "-1", "1e400", "0", "2.5", "\"x\""};
               const std::string ts = kTs[i % 6], dur = kDur[(i / 6) % 6];
               const std::string pid = std::to_string(1000 + i % 300);
               if (i % 2)
                 return R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": )" +
                        pid + R"(, "tid": 99999999999999999999, "ts": )" + ts +
                        R"(, "dur": 1, "args": {"correlation": 4294967295, "external id": -1}})";
               return R"({"ph": "X", "cat": "kernel", "name": "\u001b[2J\u001b]0;x\u0007k\n)" +
                      std::to_string(i) + R"(", "pid": )" + pid +
                      R"(, "tid": "stream 4294967295", "ts": )" + ts + R"(, "dur": )" + dur +
                      R"(, "args": {"correlation": 4294967295, "device": 4294967295,
                            "stream": -7, "grid": [4294967295, 0, 99999999999],
                            "block": [1], "registers per thread": -3}})";
             }));
       }});
  // A valid trace cut mid-way, also gzip-compressed and then cut.
  auto torch_like = [] {
    return KinetoEvents(400, [](int i) {
      const std::string ts = std::to_string(1000 + i * 10);
      return R"({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": )" + ts +
             R"(, "dur": 5, "args": {"correlation": )" + std::to_string(i) +
             R"(, "device": 0, "stream": 7}})";
    });
  };
  v.push_back({"cut.json", [=](const std::string& p) {
                 const std::string s = torch_like();
                 return WriteBytes(p, s.substr(0, s.size() * 2 / 3));
               }});
  v.push_back({"cut.json.gz", [=](const std::string& p) {
                 const std::string s = Gzip(torch_like());
                 return WriteBytes(p, s.substr(0, s.size() / 2));
               }});
  v.push_back({"gzip_junk.json.gz", [](const std::string& p) {
                 return WriteBytes(p, "\x1f\x8b\x08\x00" + Junk(4096, 7));
               }});
  // A gzip bomb: 64 members of 16 MiB of spaces inside an open array
  // (1 GiB of JSON from 1 MB; 8 members under ASan).
  v.push_back({"gzip_bomb.json.gz", [=](const std::string& p) {
                 const std::string member = Gzip(std::string(16u << 20, ' '));
                 std::string s = Gzip(R"({"traceEvents": [)");
                 for (int i = 0; i < (smaller ? 8 : 64); ++i) s += member;
                 return !member.empty() && WriteBytes(p, s);
               }});

  // --- LLVM XRay logs.
  // 60000 entries without exits (one thread), and exits without entries.
  v.push_back({"xray_entries_only.log", [](const std::string& p) {
                 std::vector<XRayRecord> r;
                 for (uint32_t i = 0; i < 60000; ++i)
                   r.push_back({0, int32_t(i % 50 + 1), 1000 + i, 7, 1});
                 return WriteBytes(p, XRayBasicLog(r));
               }});
  v.push_back({"xray_exits_only.log", [](const std::string& p) {
                 std::vector<XRayRecord> r;
                 for (uint32_t i = 0; i < 60000; ++i)
                   r.push_back({1, int32_t(i % 50 + 1), 1000 + i, 7, 1});
                 return WriteBytes(p, XRayBasicLog(r));
               }});
  // Interleaved unpaired calls in 5000 threads of 300 processes, TSCs at
  // both ends of the range, a cycle frequency of 1 Hz (ns overflow) and
  // negative function ids.
  v.push_back({"xray_extremes.log", [](const std::string& p) {
                 std::vector<XRayRecord> r;
                 for (uint32_t i = 0; i < 20000; ++i)
                   r.push_back({uint8_t(i % 3), i % 5 == 0 ? -int32_t(i) : int32_t(i % 70),
                                i % 2 ? ~uint64_t{0} - i : i, i % 5000, i % 300});
                 return WriteBytes(p, XRayBasicLog(r, 1));
               }});
  v.push_back({"xray_cut.log", [=](const std::string& p) {
                 const std::string s = shipped(xray);
                 return !s.empty() && WriteBytes(p, s.substr(0, s.size() / 2 + 13));
               }});
  // An FDR-mode header over junk, and a header claiming version 5 of a
  // type no runtime writes.
  v.push_back({"xray_fdr_junk.log", [](const std::string& p) {
                 std::string s = XRayBasicLog({});
                 s[0] = 5, s[2] = 1;
                 return WriteBytes(p, s + Junk(8192, 3));
               }});
  return v;
}

}  // namespace tracesmith::testing
