// ParseDuration: the durations commands take (--at, --from/--to, --duration):
// units, and what is refused with a clear error instead of a wrapped number.
#include <gtest/gtest.h>

#include "tracesmith/base/file_util.h"

namespace tracesmith {
namespace {

TEST(ParseDuration, Units) {
  EXPECT_EQ(ParseDuration("1500").value(), 1500u);
  EXPECT_EQ(ParseDuration("1500ns").value(), 1500u);
  EXPECT_EQ(ParseDuration("2.5us").value(), 2500u);
  EXPECT_EQ(ParseDuration("20ms").value(), 20'000'000u);
  EXPECT_EQ(ParseDuration("1s").value(), 1'000'000'000u);
  EXPECT_EQ(ParseDuration("0").value(), 0u);
}

TEST(ParseDuration, RefusesWhatIsNotADurationOrTooLong) {
  for (const char* bad : {"soon", "", "s", "1h", "-1s", "nan", "inf", "infs", "-inf", "1e400"}) {
    auto d = ParseDuration(bad);
    EXPECT_FALSE(d.ok()) << bad;
    if (!d.ok()) {
      EXPECT_NE(d.status().message().find("is not a duration"), std::string::npos) << bad;
    }
  }
  // Past 2^64 ns: refused, not wrapped.
  for (const char* big : {"1e30s", "18446744073709551616", "600years"}) {
    auto d = ParseDuration(big);
    EXPECT_FALSE(d.ok()) << big;
  }
  auto d = ParseDuration("1e12s");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("too long a duration"), std::string::npos);
  EXPECT_TRUE(ParseDuration("1e9s").ok());  // 31.7 years
}

}  // namespace
}  // namespace tracesmith
