#include "tracesmith/model/stack_builder.h"

#include <gtest/gtest.h>

namespace tracesmith::model {
namespace {

TEST(StackBuilderTest, SharesPrefixesAndDedupsFrames) {
  Trace t;
  StackBuilder b(&t);
  uint32_t main_f = b.InternFrame(Frame{.rel_pc = 0x10, .mapping_id = 1, .kind = kFrameNative});
  uint32_t step_f = b.InternFrame(Frame{.rel_pc = 0x20, .mapping_id = 1, .kind = kFrameNative});
  uint32_t gemm_f = b.InternFrame(Frame{.rel_pc = 0x30, .mapping_id = 1, .kind = kFrameNative});
  uint32_t relu_f = b.InternFrame(Frame{.rel_pc = 0x40, .mapping_id = 1, .kind = kFrameNative});
  EXPECT_EQ(b.InternFrame(Frame{.rel_pc = 0x10, .mapping_id = 1, .kind = kFrameNative}), main_f);

  uint32_t s1 = b.InternStack(std::vector<uint32_t>{gemm_f, step_f, main_f});
  uint32_t s2 = b.InternStack(std::vector<uint32_t>{relu_f, step_f, main_f});
  EXPECT_EQ(b.InternStack(std::vector<uint32_t>{gemm_f, step_f, main_f}), s1);
  EXPECT_NE(s1, s2);
  // main and step shared: 4 nodes for two 3-frame stacks.
  EXPECT_EQ(t.Rows<StackNode>().size(), 4u);
  EXPECT_EQ(StackFrames(t, s1), (std::vector<uint32_t>{gemm_f, step_f, main_f}));
  EXPECT_EQ(StackFrames(t, s2), (std::vector<uint32_t>{relu_f, step_f, main_f}));
  EXPECT_TRUE(StackFrames(t, 0).empty());
  EXPECT_TRUE(StackFrames(t, 999).empty());
}

TEST(StackBuilderTest, CorruptCycleTerminates) {
  Trace t;
  t.Rows<StackNode>().push_back(StackNode{1, 2});
  t.Rows<StackNode>().push_back(StackNode{1, 1});
  EXPECT_LE(StackFrames(t, 2).size(), 2u);
}

}  // namespace
}  // namespace tracesmith::model
