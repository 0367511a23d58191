#include "tracesmith/base/printable.h"

#include <gtest/gtest.h>

namespace tracesmith {
namespace {

TEST(Printable, ControlCharactersAreShownNotSent) {
  EXPECT_EQ(Printable("plain name<int>(float*)"), "plain name<int>(float*)");
  EXPECT_EQ(Printable("a\x1b[31mred\x07\n\x7f"), "a\\x1b[31mred\\x07\\x0a\\x7f");
  EXPECT_EQ(Printable("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 passes
  EXPECT_EQ(Printable(std::string_view("a\0b", 3)), "a\\x00b");
}

}  // namespace
}  // namespace tracesmith
