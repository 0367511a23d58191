// Pattern: the one place <regex> is instantiated (base/pattern.h).
#include "tracesmith/base/pattern.h"

#include <gtest/gtest.h>

namespace tracesmith {
namespace {

TEST(Pattern, SearchesAnywhereInTheText) {
  auto p = Pattern::Compile("gemm|sm90_xmma");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(p->Search("ampere_bf16_s16816gemm_relu"));
  EXPECT_TRUE(p->Search(std::string_view("xx sm90_xmma_gemm", 17)));
  EXPECT_FALSE(p->Search("elementwise_kernel"));
  EXPECT_FALSE(p->Search(""));
  EXPECT_EQ(p->text(), "gemm|sm90_xmma");
  // A view that ends before a match: only the view is searched.
  EXPECT_FALSE(p->Search(std::string_view("ab gemm").substr(0, 4)));
  auto anchored = Pattern::Compile("^nccl", /*optimize=*/false);
  ASSERT_TRUE(anchored.ok());
  EXPECT_TRUE(anchored->Search("ncclDevKernel_AllReduce"));
  EXPECT_FALSE(anchored->Search("my_nccl"));
}

TEST(Pattern, BadPatternIsInvalidArgumentWithTheLibrarysMessage) {
  auto p = Pattern::Compile("gemm(");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(p.status().message().empty());
}

TEST(Pattern, DefaultAndCopiesMatchAsTheyShould) {
  EXPECT_FALSE(Pattern().Search("anything"));  // a default pattern matches nothing
  auto p = Pattern::Compile("a+b");
  ASSERT_TRUE(p.ok());
  Pattern copy = *p;  // copies share the compiled expression
  EXPECT_TRUE(copy.Search("xaab"));
  EXPECT_EQ(copy.text(), "a+b");
}

}  // namespace
}  // namespace tracesmith
