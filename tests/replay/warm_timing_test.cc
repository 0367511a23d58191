// `replay --warm` on the CPU: the idempotence verdict (varying bits,
// differences beyond them, JudgeIdempotence) on images shaped like the GPU
// checks' kernels (scripts/gpu-replay-check.sh: follow_list writes its output
// from its inputs, scale_kernel updates in place, scatter_add accumulates with
// float atomics), and the text lines of cold and warm times.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tracesmith/replay/compare.h"

namespace tracesmith::replay {
namespace {

std::vector<uint8_t> Floats(const std::vector<float>& f) {
  std::vector<uint8_t> b(f.size() * 4);
  std::memcpy(b.data(), f.data(), b.size());
  return b;
}

// The float one unit in the last place above `f`.
float NextUp(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  ++u;
  std::memcpy(&f, &u, 4);
  return f;
}

IdempotenceCheck Check(const std::vector<uint8_t>& outputs, const std::vector<uint8_t>& rerun,
                       const std::vector<uint8_t>& mask, uint32_t replays) {
  IdempotenceCheck c;
  c.rerun_vs_outputs = CompareBytes(outputs, rerun, 0x7f0000000000);
  c.bytes_beyond_nondeterminism = BytesDifferingBeyond(outputs, rerun, mask);
  c.replays = replays;
  return c;
}

TEST(VaryingBits, OrOfTheDifferencesGrownOnFirstUse) {
  std::vector<uint8_t> mask;
  const std::vector<uint8_t> a = {0x00, 0xf0, 0x01}, same = a;
  AddVaryingBits(a, same, &mask);
  EXPECT_TRUE(mask.empty());  // nothing varied: no mask at all
  AddVaryingBits(a, std::vector<uint8_t>{0x01, 0xf0, 0x01}, &mask);
  AddVaryingBits(a, std::vector<uint8_t>{0x02, 0xf0, 0x03}, &mask);
  EXPECT_EQ(mask, (std::vector<uint8_t>{0x03, 0x00, 0x02}));
  // A longer replay marks its extra bytes as wholly varying.
  AddVaryingBits(a, std::vector<uint8_t>{0x00, 0xf0, 0x01, 0x55}, &mask);
  EXPECT_EQ(mask, (std::vector<uint8_t>{0x03, 0x00, 0x02, 0xff}));
}

TEST(VaryingBits, BytesDifferingBeyondTheMask) {
  const std::vector<uint8_t> want = {0x10, 0x20, 0x30, 0x40};
  const std::vector<uint8_t> got = {0x11, 0x22, 0x30, 0xc0};
  EXPECT_EQ(BytesDifferingBeyond(want, got, {}), 3u);  // no mask: every differing byte
  // Byte 0's low bit varied: its difference is explained; byte 1's 0x02 is
  // not (only 0x01 varied); byte 3's top bit is beyond a shorter mask.
  EXPECT_EQ(BytesDifferingBeyond(want, got, std::vector<uint8_t>{0x01, 0x01}), 2u);
  EXPECT_EQ(BytesDifferingBeyond(want, got, std::vector<uint8_t>{0x01, 0x03, 0x00, 0x80}), 0u);
  // Bytes past the shorter image count as differing.
  EXPECT_EQ(BytesDifferingBeyond(want, std::vector<uint8_t>{0x10, 0x20}, {}), 2u);
}

// follow_list: out[i] is computed from the inputs only, so a re-run on its
// own outputs writes the same bytes: idempotent, with any number of replays.
TEST(Idempotence, OutputsWrittenAgainAreIdempotent) {
  const auto out = Floats({0.5f, -1.25f, 3.0f});
  EXPECT_EQ(JudgeIdempotence(Check(out, out, {}, 5)), Idempotence::kIdempotent);
  EXPECT_EQ(JudgeIdempotence(Check(out, out, {}, 1)), Idempotence::kIdempotent);
}

// scale_kernel: x = x * 0.5 + 1 in place. Deterministic (the replays agree,
// no bit varied), so any change on the re-run is the kernel reading its own
// output: not idempotent. With one replay nondeterminism was not measured.
TEST(Idempotence, InPlaceUpdateIsNotIdempotent) {
  const auto after_one = Floats({1.5f, 1.5f, 1.5f});
  const auto after_two = Floats({1.75f, 1.75f, 1.75f});
  const IdempotenceCheck c = Check(after_one, after_two, {}, 3);
  EXPECT_EQ(c.bytes_beyond_nondeterminism, c.rerun_vs_outputs.bytes_differing);
  EXPECT_EQ(JudgeIdempotence(c), Idempotence::kNotIdempotent);
  EXPECT_EQ(JudgeIdempotence(Check(after_one, after_two, {}, 1)), Idempotence::kUnknown);
}

// scatter_add: dst[index[i]] += src[i] with float atomics. Between replays
// from the captured inputs only the rounding of the sums varies (low
// mantissa bits); a re-run on its own output doubles the sums (the exponent
// changes): differences beyond the nondeterminism, so not idempotent.
TEST(Idempotence, AccumulationBeyondItsNondeterminismIsNotIdempotent) {
  const std::vector<float> sums = {3.0f, 10.5f, 0.75f, 6.0f};
  const auto first = Floats(sums);
  std::vector<uint8_t> varying;
  std::vector<float> rounded = sums;
  for (float& f : rounded) f = NextUp(f);  // another order of the additions
  AddVaryingBits(first, Floats(rounded), &varying);
  std::vector<float> doubled = sums;
  for (float& f : doubled) f *= 2;
  const IdempotenceCheck c = Check(first, Floats(doubled), varying, 20);
  EXPECT_GT(c.bytes_beyond_nondeterminism, 0u);
  EXPECT_EQ(JudgeIdempotence(c), Idempotence::kNotIdempotent);
  // A re-run that differs only where the replays differed (an idempotent
  // kernel that rounds differently each time) cannot be told apart.
  const IdempotenceCheck rounding = Check(first, Floats(rounded), varying, 20);
  EXPECT_FALSE(rounding.rerun_vs_outputs.identical());
  EXPECT_EQ(rounding.bytes_beyond_nondeterminism, 0u);
  EXPECT_EQ(JudgeIdempotence(rounding), Idempotence::kUnknown);
}

TEST(Idempotence, Names) {
  EXPECT_STREQ(IdempotenceName(Idempotence::kIdempotent), "idempotent");
  EXPECT_STREQ(IdempotenceName(Idempotence::kNotIdempotent), "not_idempotent");
  EXPECT_STREQ(IdempotenceName(Idempotence::kUnknown), "unknown");
  EXPECT_STREQ(IdempotenceName(Idempotence::kNotChecked), "not_checked");
  EXPECT_EQ(LaunchOutcome().warm.idempotence(), Idempotence::kNotChecked);
}

// A launch as the H200 replays a 1 MiB Triton add (docs/benchmarks.md): cold
// 3.74 us, warm 2.27 us, 2.24 us in the program.
LaunchOutcome Timed() {
  LaunchOutcome o;
  o.index = 1;
  o.function = "scaled_add_kernel";
  o.vs_capture.bytes_compared = 4 << 20;
  o.iterations = 5;
  o.time_from_cupti = true;
  o.time = {.median_us = 3.74, .min_us = 3.7, .max_us = 3.8};
  o.event_time = {.median_us = 6.5, .min_us = 6, .max_us = 7};
  o.l2_flushed = true;
  o.recorded_ns = 2240;
  return o;
}

LaunchOutcome Warm(const IdempotenceCheck& check) {
  LaunchOutcome o = Timed();
  o.warm.runs = 5;
  o.warm.time_from_cupti = true;
  o.warm.time = {.median_us = 2.27, .min_us = 2.2, .max_us = 2.4};
  o.warm.event_time = {.median_us = 4.5, .min_us = 4, .max_us = 5};
  o.warm.check = check;
  return o;
}

bool Has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(WarmTimingText, ColdOnlyByDefault) {
  std::string s = FormatLaunchOutcome(Timed());
  EXPECT_TRUE(Has(s,
                  "  kernel time, cold L2 (CUPTI): median 3.74 us, min 3.70 us, max 3.80 us over "
                  "5 replays; in the program: 2.24 us (replay/program 1.670)\n"))
      << s;
  EXPECT_FALSE(Has(s, "warm")) << s;
  EXPECT_FALSE(Has(s, "idempot")) << s;
  LaunchOutcome unflushed = Timed();
  unflushed.l2_flushed = false;
  s = FormatLaunchOutcome(unflushed);
  EXPECT_TRUE(Has(s, "  kernel time, inputs restored, L2 not flushed (CUPTI): median 3.74 us"))
      << s;
}

TEST(WarmTimingText, IdempotentWarmTimeIsComparedWithTheProgram) {
  const auto out = Floats({1, 2, 3});
  const std::string s = FormatLaunchOutcome(Warm(Check(out, out, {}, 5)));
  EXPECT_TRUE(Has(s, "  idempotent: re-run on its own outputs, it wrote them again bit for bit\n"))
      << s;
  EXPECT_TRUE(Has(s,
                  "  kernel time, warm L2 (CUPTI): median 2.27 us, min 2.20 us, max 2.40 us over "
                  "5 back-to-back runs; in the program: 2.24 us (replay/program 1.013)\n"))
      << s;
  EXPECT_TRUE(Has(s, "  CUDA events around the warm launch: median 4.50 us\n")) << s;
  // Cold first, then the verdict, then warm.
  EXPECT_LT(s.find("cold L2"), s.find("idempotent:"));
  EXPECT_LT(s.find("idempotent:"), s.find("warm L2"));
}

TEST(WarmTimingText, NotIdempotentWarmTimeIsNotCompared) {
  const std::string s = FormatLaunchOutcome(
      Warm(Check(Floats({1.5f, 1.5f}), Floats({1.75f, 1.75f}), {}, /*replays=*/3)));
  EXPECT_TRUE(
      Has(s,
          "  NOT IDEMPOTENT: re-run on its own outputs, it changed 2 of the 8 bytes compared (2 "
          "of them in bits that the 3 replays from the captured inputs never changed): "
          "its warm runs computed on other data than the program's launch\n"))
      << s;
  EXPECT_TRUE(Has(s,
                  "  kernel time, warm L2, on changed inputs, not comparable with the program "
                  "(CUPTI): median 2.27 us, min 2.20 us, max 2.40 us over 5 back-to-back runs\n"))
      << s;
  // The only ratio is the cold one.
  EXPECT_EQ(s.find("replay/program"), s.rfind("replay/program")) << s;
}

TEST(WarmTimingText, UnknownSaysWhy) {
  const auto a = Floats({1.5f}), b = Floats({1.75f});
  std::string s = FormatLaunchOutcome(Warm(Check(a, b, {}, /*replays=*/1)));
  EXPECT_TRUE(Has(s,
                  "  idempotence unknown: re-run on its own outputs, it changed 1 of the 4 bytes "
                  "compared; one replay from the captured inputs cannot tell that from "
                  "nondeterminism (--iterations 2 or more)\n"))
      << s;
  EXPECT_TRUE(Has(s, "  kernel time, warm L2, inputs not verified (CUPTI): median 2.27 us")) << s;
  std::vector<uint8_t> mask;
  AddVaryingBits(a, b, &mask);
  s = FormatLaunchOutcome(Warm(Check(a, b, mask, /*replays=*/20)));
  EXPECT_TRUE(Has(s,
                  "  idempotence unknown: re-run on its own outputs, it changed 1 of the 4 bytes "
                  "compared, all in bits that also varied between the 20 replays from the captured "
                  "inputs (nondeterminism)\n"))
      << s;
  EXPECT_EQ(s.find("replay/program"), s.rfind("replay/program")) << s;
}

TEST(WarmTimingText, WarmEventsAloneWithoutCupti) {
  const auto out = Floats({1});
  LaunchOutcome o = Warm(Check(out, out, {}, 5));
  o.warm.time_from_cupti = false;
  o.warm.time = o.warm.event_time;
  const std::string s = FormatLaunchOutcome(o);
  EXPECT_TRUE(Has(s, "  kernel time, warm L2 (CUDA events): median 4.50 us")) << s;
  EXPECT_FALSE(Has(s, "around the warm launch")) << s;
}

}  // namespace
}  // namespace tracesmith::replay
