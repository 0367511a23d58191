// GpuClaim (include/tracesmith/capture/gpu_claim.h): one process at a time per
// GPU and feature, across processes, released when the holder goes.
#include "tracesmith/capture/gpu_claim.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace tracesmith::capture {
namespace {

// Each test's own lock directory (TRACESMITH_LOCK_DIR), removed after.
class GpuClaimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tracesmith_claim_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    setenv("TRACESMITH_LOCK_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("TRACESMITH_LOCK_DIR");
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
};

TEST_F(GpuClaimTest, SecondClaimOfOneGpuIsRefusedWithTheHoldersPid) {
  std::string why;
  auto first = GpuClaim::Take("pc-sampling", "GPU-1234", &why);
  ASSERT_NE(first, nullptr);
  EXPECT_TRUE(first->checked());
  EXPECT_EQ(GpuClaim::Take("pc-sampling", "GPU-1234", &why), nullptr);
  EXPECT_NE(why.find("pid " + std::to_string(getpid())), std::string::npos) << why;
  EXPECT_NE(why.find("pc-sampling"), std::string::npos) << why;
  // Another GPU, or another feature on this one: free.
  EXPECT_NE(GpuClaim::Take("pc-sampling", "GPU-5678", &why), nullptr);
  EXPECT_NE(GpuClaim::Take("sass-counts", "GPU-1234", &why), nullptr);
  first.reset();
  EXPECT_NE(GpuClaim::Take("pc-sampling", "GPU-1234", &why), nullptr);
}

TEST_F(GpuClaimTest, AnotherProcessIsRefusedUntilTheHolderExits) {
  auto held = GpuClaim::Take("pc-sampling", "GPU-abcd", nullptr);
  ASSERT_NE(held, nullptr);
  auto child_takes = [] {
    const pid_t pid = fork();
    if (pid == 0) _exit(GpuClaim::Take("pc-sampling", "GPU-abcd", nullptr) ? 0 : 1);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  };
  EXPECT_FALSE(child_takes());
  held.reset();
  EXPECT_TRUE(child_takes());
}

TEST_F(GpuClaimTest, KeySanitizedIntoOneFileName) {
  auto claim = GpuClaim::Take("pc-sampling", "../GPU 1/x", nullptr);
  ASSERT_NE(claim, nullptr);
  EXPECT_TRUE(std::filesystem::exists(dir_ / "tracesmith-pc-sampling-___GPU_1_x.lock"));
}

TEST_F(GpuClaimTest, MissingDirectoryGrantsUnchecked) {
  setenv("TRACESMITH_LOCK_DIR", (dir_ / "missing").c_str(), 1);
  auto claim = GpuClaim::Take("pc-sampling", "GPU-1", nullptr);
  ASSERT_NE(claim, nullptr);
  EXPECT_FALSE(claim->checked());
}

// A child forked while the claim is held (a DataLoader worker) shares the
// lock's open file description: it closes its copy at fork, so the parent's
// release is a release.
TEST_F(GpuClaimTest, ReleasedWhileAForkedChildLives) {
  auto held = GpuClaim::Take("pc-sampling", "GPU-fork", nullptr);
  ASSERT_NE(held, nullptr);
  int go[2], up[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(up), 0);
  const pid_t child = fork();
  if (child == 0) {  // lives on, touches no claim
    close(go[1]);
    (void)!write(up[1], "u", 1);
    char c;
    (void)!read(go[0], &c, 1);
    _exit(0);
  }
  close(go[0]);
  char c;
  ASSERT_EQ(read(up[0], &c, 1), 1);
  held.reset();
  std::string why;
  auto again = GpuClaim::Take("pc-sampling", "GPU-fork", &why);
  close(go[1]);
  waitpid(child, nullptr, 0);
  EXPECT_NE(again, nullptr) << why;
}

// A lock name planted as a link to another file (a shared /tmp) is not
// followed: the file is neither truncated nor made world-writable.
TEST_F(GpuClaimTest, LinkInPlaceOfTheLockFileIsNotFollowed) {
  const auto victim = dir_ / "victim";
  std::FILE* f = std::fopen(victim.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("precious\n", f);
  std::fclose(f);
  std::filesystem::permissions(victim, std::filesystem::perms(0600));
  std::filesystem::create_symlink(victim, dir_ / "tracesmith-pc-sampling-GPU-sym.lock");
  auto claim = GpuClaim::Take("pc-sampling", "GPU-sym", nullptr);
  ASSERT_NE(claim, nullptr);
  EXPECT_FALSE(claim->checked());  // granted unchecked
  EXPECT_EQ(std::filesystem::file_size(victim), 9u);
  EXPECT_EQ(std::filesystem::status(victim).permissions(), std::filesystem::perms(0600));
  std::filesystem::create_hard_link(victim, dir_ / "tracesmith-pc-sampling-GPU-hard.lock");
  EXPECT_FALSE(GpuClaim::Take("pc-sampling", "GPU-hard", nullptr)->checked());
  EXPECT_EQ(std::filesystem::file_size(victim), 9u);
}

// In a forked child the claims it inherited are not its own: giving one back
// there leaves alone a claim the child took since (in the same table slot).
TEST_F(GpuClaimTest, InheritedClaimGivenBackInAChildLeavesTheChildsOwn) {
  auto inherited = GpuClaim::Take("pc-sampling", "GPU-parent", nullptr);
  ASSERT_NE(inherited, nullptr);
  const pid_t child = fork();
  if (child == 0) {
    auto own = GpuClaim::Take("pc-sampling", "GPU-child", nullptr);
    if (!own || !own->checked()) _exit(2);
    inherited.reset();  // must not close `own`'s lock
    const bool still_held = GpuClaim::Take("pc-sampling", "GPU-child", nullptr) == nullptr;
    _exit(still_held ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the child's own claim was given back; 2: not taken";
  // The parent's claim is still the parent's.
  EXPECT_EQ(GpuClaim::Take("pc-sampling", "GPU-parent", nullptr), nullptr);
}

}  // namespace
}  // namespace tracesmith::capture
