// NCCL kernel and NVTX range recognition, and matching across ranks.
#include <gtest/gtest.h>

#include "tracesmith/job/collectives.h"

namespace tracesmith::analysis {
namespace {

TEST(NcclKernelName, NewStyleName) {
  const NcclKernelInfo k = ParseNcclKernelName(
      "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_TRUE(k.is_collective);
  EXPECT_FALSE(k.generic);
  EXPECT_EQ(k.op, CollectiveOp::kAllReduce);
  EXPECT_EQ(k.reduction, "Sum");
  EXPECT_EQ(k.datatype, "f32");
  EXPECT_EQ(k.algorithm, "RING");
  EXPECT_EQ(k.protocol, "LL");
}

TEST(NcclKernelName, OldStyleNameWithUnderscoredWords) {
  NcclKernelInfo k = ParseNcclKernelName("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)");
  EXPECT_EQ(k.op, CollectiveOp::kAllReduce);
  EXPECT_EQ(k.algorithm, "RING");
  EXPECT_EQ(k.protocol, "LL");
  EXPECT_EQ(k.reduction, "Sum");
  EXPECT_EQ(k.datatype, "float");
  k = ParseNcclKernelName("void ncclKernel_ReduceScatter_COLLNET_DIRECT_LL128_Max_int8_t(x)");
  EXPECT_EQ(k.op, CollectiveOp::kReduceScatter);
  EXPECT_EQ(k.algorithm, "COLLNET_DIRECT");
  EXPECT_EQ(k.protocol, "LL128");
  EXPECT_EQ(k.reduction, "Max");
  EXPECT_EQ(k.datatype, "int8_t");
  k = ParseNcclKernelName("ncclDevKernel_AllGather_NVLS_TREE_SIMPLE");
  EXPECT_EQ(k.op, CollectiveOp::kAllGather);
  EXPECT_EQ(k.algorithm, "NVLS_TREE");
  EXPECT_EQ(k.protocol, "SIMPLE");
  EXPECT_EQ(k.datatype, "");
}

TEST(NcclKernelName, GenericAndOthers) {
  NcclKernelInfo k =
      ParseNcclKernelName("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_TRUE(k.is_collective);
  EXPECT_TRUE(k.generic);
  EXPECT_EQ(k.op, CollectiveOp::kUnknown);
  k = ParseNcclKernelName("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_EQ(k.op, CollectiveOp::kSendRecv);
  EXPECT_FALSE(ParseNcclKernelName("gemm_nccl_like_kernel").is_collective);
  EXPECT_FALSE(ParseNcclKernelName("ampere_sgemm_128x64_nn").is_collective);
}

TEST(NvtxRangeName, NcclAndPytorchNames) {
  EXPECT_EQ(CollectiveOpFromRangeName("ncclAllReduce"), CollectiveOp::kAllReduce);
  EXPECT_EQ(CollectiveOpFromRangeName("nccl:all_reduce"), CollectiveOp::kAllReduce);
  EXPECT_EQ(CollectiveOpFromRangeName("nccl:_all_gather_base"), CollectiveOp::kAllGather);
  EXPECT_EQ(CollectiveOpFromRangeName("nccl:_reduce_scatter_base"), CollectiveOp::kReduceScatter);
  EXPECT_EQ(CollectiveOpFromRangeName("ncclReduce"), CollectiveOp::kReduce);
  EXPECT_EQ(CollectiveOpFromRangeName("ncclBroadcast"), CollectiveOp::kBroadcast);
  EXPECT_EQ(CollectiveOpFromRangeName("ncclGroupEnd"), CollectiveOp::kUnknown);
  EXPECT_EQ(CollectiveOpFromRangeName("all_reduce"), CollectiveOp::kUnknown);  // not NCCL's
  EXPECT_EQ(BytesFromRangeName("grad_sync bytes=4096"), 4096u);
  EXPECT_EQ(BytesFromRangeName("grad_sync"), 0u);
  EXPECT_EQ(BytesFromRangeName("bytes=99999999999999999999999"), 0u);  // overflow: unknown
}

RankCollective Op(uint32_t comm, uint32_t seq, CollectiveOp op) {
  return {.start_ns = 100 + seq, .end_ns = 200 + seq, .comm = comm, .seq = seq, .op = op};
}

TEST(MatchCollectives, MatchesByCommunicatorAndPosition) {
  std::vector<RankCollective> a, b;
  for (uint32_t k = 0; k < 3; ++k) {
    a.push_back(Op(0, k, CollectiveOp::kAllReduce));
    b.push_back(Op(0, k, CollectiveOp::kAllReduce));
  }
  a.push_back(Op(1, 0, CollectiveOp::kAllGather));
  b.push_back(Op(1, 0, CollectiveOp::kUnknown));  // a Generic kernel: agrees with anything
  const std::vector<const std::vector<RankCollective>*> ranks = {&a, &b};
  const MatchResult m = MatchCollectives(ranks, {});
  ASSERT_EQ(m.matches.size(), 4u);
  EXPECT_TRUE(m.warnings.empty());
  EXPECT_EQ(m.matches[3].comm, 1u);
  EXPECT_EQ(m.matches[3].part[0], 3u);
  EXPECT_EQ(m.matches[3].part[1], 3u);
}

TEST(MatchCollectives, MismatchedCountsGiveThePrefixAndAWarning) {
  std::vector<RankCollective> a, b;
  for (uint32_t k = 0; k < 5; ++k) a.push_back(Op(0, k, CollectiveOp::kAllReduce));
  for (uint32_t k = 0; k < 3; ++k) b.push_back(Op(0, k, CollectiveOp::kAllReduce));
  const std::vector<const std::vector<RankCollective>*> ranks = {&a, &b};
  const MatchResult m = MatchCollectives(ranks, std::vector<std::string>{"rank 0", "rank 1"});
  EXPECT_EQ(m.matches.size(), 3u);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_NE(m.warnings[0].find("rank 0: 5, rank 1: 3"), std::string::npos) << m.warnings[0];
  EXPECT_NE(m.warnings[0].find("matched the first 3"), std::string::npos);
}

TEST(MatchCollectives, DisagreeingOperationsStopTheMatch) {
  std::vector<RankCollective> a, b;
  a = {Op(0, 0, CollectiveOp::kAllReduce), Op(0, 1, CollectiveOp::kAllReduce),
       Op(0, 2, CollectiveOp::kAllReduce)};
  b = {Op(0, 0, CollectiveOp::kAllReduce), Op(0, 1, CollectiveOp::kAllGather),
       Op(0, 2, CollectiveOp::kAllReduce)};
  const std::vector<const std::vector<RankCollective>*> ranks = {&a, &b, nullptr};
  const MatchResult m = MatchCollectives(ranks, {});
  EXPECT_EQ(m.matches.size(), 1u);  // never a silent wrong match past #2
  ASSERT_FALSE(m.warnings.empty());
  EXPECT_NE(m.warnings.back().find("do not line up"), std::string::npos);
}

RankCollective WithId(RankCollective rc, uint64_t id) {
  rc.comm_hash = id;
  return rc;
}

// Tensor and data parallel on 4 ranks: TP {0,1} id 11 and {2,3} id 12, DP {0,2}
// id 21 and {1,3} id 22; every rank first uses its TP communicator. By stream
// order alone all four first streams would be one communicator; NCCL's ids
// (its payloads) pair each with its own members only.
TEST(MatchCollectives, NcclIdsMatchSubgroups) {
  std::vector<std::vector<RankCollective>> v(4);
  const uint64_t tp[4] = {11, 11, 12, 12}, dp[4] = {21, 22, 21, 22};
  for (uint32_t r = 0; r < 4; ++r) {
    for (uint32_t k = 0; k < 3; ++k)
      v[r].push_back(WithId(Op(0, k, CollectiveOp::kAllReduce), tp[r]));
    for (uint32_t k = 0; k < 2; ++k)
      v[r].push_back(WithId(Op(1, k, CollectiveOp::kAllGather), dp[r]));
  }
  const std::vector<const std::vector<RankCollective>*> ranks = {&v[0], &v[1], &v[2], &v[3]};
  const MatchResult m = MatchCollectives(ranks, {});
  EXPECT_TRUE(m.warnings.empty()) << m.warnings[0];
  EXPECT_EQ(m.comms, 4u);
  EXPECT_EQ(m.comm_ids, (std::vector<uint64_t>{11, 21, 22, 12}));  // by first sight
  EXPECT_EQ(m.matched_per_comm, (std::vector<uint32_t>{3, 2, 2, 3}));
  ASSERT_EQ(m.matches.size(), 10u);
  for (const CollectiveMatch& c : m.matches) {
    std::vector<bool> in(4);
    for (uint32_t r = 0; r < 4; ++r) in[r] = c.part[r] != kNone;
    const uint64_t id = m.comm_ids[c.comm];
    for (uint32_t r = 0; r < 4; ++r)
      EXPECT_EQ(in[r], tp[r] == id || dp[r] == id) << "communicator " << id << " rank " << r;
  }
}

// Rank 1 made (first used) its communicators in the other order, and ran one of
// them on two streams: NCCL's id still pairs them, in time order.
TEST(MatchCollectives, NcclIdsMatchWhateverTheStreamOrder) {
  std::vector<RankCollective> a = {WithId(Op(0, 0, CollectiveOp::kAllReduce), 7),
                                   WithId(Op(0, 1, CollectiveOp::kAllReduce), 7),
                                   WithId(Op(1, 0, CollectiveOp::kBroadcast), 9)};
  std::vector<RankCollective> b = {WithId(Op(0, 0, CollectiveOp::kBroadcast), 9),
                                   WithId(Op(1, 0, CollectiveOp::kAllReduce), 7),
                                   WithId(Op(2, 0, CollectiveOp::kAllReduce), 7)};
  b[2].start_ns = 50;  // this stream's all-reduce came first
  const std::vector<const std::vector<RankCollective>*> ranks = {&a, &b};
  const MatchResult m = MatchCollectives(ranks, {});
  EXPECT_TRUE(m.warnings.empty()) << m.warnings[0];
  ASSERT_EQ(m.matches.size(), 3u);
  EXPECT_EQ(m.comm_ids, (std::vector<uint64_t>{7, 9}));
  EXPECT_EQ(m.matches[0].part, (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(m.matches[1].part, (std::vector<uint32_t>{1, 1}));
  EXPECT_EQ(m.matches[2].part, (std::vector<uint32_t>{2, 0}));
}

// A collective without a payload (a grouped call's launch, a lost range) keeps
// its stream's id; a stream with no id on some rank sends the whole job back
// to the stream rule, with a warning, rather than splitting a communicator.
TEST(MatchCollectives, MissingPayloadsKeepTheStreamsIdOrFallBackToStreamOrder) {
  std::vector<RankCollective> a = {WithId(Op(0, 0, CollectiveOp::kAllReduce), 0),
                                   WithId(Op(0, 1, CollectiveOp::kAllReduce), 7),
                                   WithId(Op(1, 0, CollectiveOp::kBroadcast), 9)};
  std::vector<RankCollective> b = {WithId(Op(0, 0, CollectiveOp::kAllReduce), 7),
                                   WithId(Op(0, 1, CollectiveOp::kAllReduce), 7),
                                   WithId(Op(1, 0, CollectiveOp::kBroadcast), 9)};
  const std::vector<const std::vector<RankCollective>*> ranks = {&a, &b};
  MatchResult m = MatchCollectives(ranks, {});
  EXPECT_TRUE(m.warnings.empty()) << m.warnings[0];
  EXPECT_EQ(m.comm_ids, (std::vector<uint64_t>{7, 9}));
  EXPECT_EQ(m.matched_per_comm, (std::vector<uint32_t>{2, 1}));
  for (RankCollective& rc : b) rc.comm_hash = 0;  // rank 1's payloads lost
  m = MatchCollectives(ranks, {});
  EXPECT_EQ(m.comm_ids, (std::vector<uint64_t>{0, 0}));
  EXPECT_EQ(m.matched_per_comm, (std::vector<uint32_t>{2, 1}));
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_NE(m.warnings[0].find("ids are on 2 of 4 NCCL streams"), std::string::npos)
      << m.warnings[0];
}

// A communicator of NCCL's id with fewer ranks in the job's traces than its
// group has: matched among those, said.
TEST(MatchCollectives, AnIdsGroupLargerThanTheRanksFoundIsSaid) {
  std::vector<RankCollective> a, b;
  for (uint32_t k = 0; k < 2; ++k) {
    a.push_back(WithId(Op(0, k, CollectiveOp::kAllReduce), 7));
    b.push_back(WithId(Op(0, k, CollectiveOp::kAllReduce), 7));
    a.back().group_size = b.back().group_size = 3;
  }
  const std::vector<const std::vector<RankCollective>*> ranks = {&a, &b, nullptr};
  const MatchResult m = MatchCollectives(ranks, {});
  EXPECT_EQ(m.matches.size(), 2u);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_NE(m.warnings[0].find("NCCL's group has 3 ranks, the job's traces hold 2"),
            std::string::npos)
      << m.warnings[0];
}

}  // namespace
}  // namespace tracesmith::analysis
