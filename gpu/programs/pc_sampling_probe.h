// Shared by pc_sampling_probe.cu: the configurations it sweeps, the row each child reports, and
// the parent that runs one child per configuration (a hang or crash costs one row) and prints the
// table. See pc_sampling_probe.cu for the CUPTI side.
#pragma once
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace pcprobe {

constexpr int kRounds = 3, kThreads = 256;
// Launches of each kernel per round: 200 (about 60 ms of GPU time per round on an H200), or
// PC_PROBE_ITERS, to run long enough for CUPTI's worker threads to drain during the rounds.
inline int Iters() {
  const char* e = std::getenv("PC_PROBE_ITERS");
  const int n = e ? std::atoi(e) : 0;
  return n > 0 ? n : 200;
}
constexpr int kMemIters = 512, kFmaIters = 100000, kHotIters = 40000;
constexpr unsigned kMemMask = (1u << 26) - 1;  // 64 Mi floats = 256 MiB
constexpr int kDrainMs = 10, kTailIdleMs = 300, kTailMaxMs = 3000;
constexpr int kChildLimitS = 40, kBudgetS = 170, kRoundsMaxMs = 12000;
constexpr size_t kCfgBufPcs = 5000, kDrainBufPcs = 2048;
const char* const kKernelNames[3] = {"pcs_mem", "pcs_fma", "pcs_hot"};

enum Kind { BASE, CALLBACKS, PCS };
enum Drain { THREAD, END, LAUNCH };
enum EnableAt { AT_CTX_CB, AT_START, AT_LATE };
struct Cfg {
  const char* name;
  Kind kind;
  int mode;           // 1 continuous, 2 kernel-serialized
  unsigned period;    // 0: CUPTI default
  size_t hwMiB;       // 0: default
  size_t scratchKiB;  // 0: default
  unsigned sleepMs;   // 0: default
  Drain drain;
  EnableAt at;
};
// In order of importance: the run stops starting new children near kBudgetS.
const Cfg kCfgs[] = {
    {"baseline", BASE, 0, 0, 0, 0, 0, THREAD, AT_CTX_CB},
    {"callbacks-only", CALLBACKS, 0, 0, 0, 0, 0, THREAD, AT_CTX_CB},
    {"default", PCS, 1, 0, 0, 0, 0, THREAD, AT_CTX_CB},
    {"p9", PCS, 1, 9, 0, 0, 0, THREAD, AT_CTX_CB},
    {"p9-enable-start", PCS, 1, 9, 0, 0, 0, THREAD, AT_START},
    {"p9-enable-late", PCS, 1, 9, 0, 0, 0, THREAD, AT_LATE},
    {"p7", PCS, 1, 7, 0, 0, 0, THREAD, AT_CTX_CB},
    {"p11", PCS, 1, 11, 0, 0, 0, THREAD, AT_CTX_CB},
    {"p13", PCS, 1, 13, 0, 0, 0, THREAD, AT_CTX_CB},
    {"p9-drain-end", PCS, 1, 9, 0, 0, 0, END, AT_CTX_CB},
    {"p9-drain-launch", PCS, 1, 9, 0, 0, 0, LAUNCH, AT_CTX_CB},
    {"p9-sleep10", PCS, 1, 9, 0, 0, 10, THREAD, AT_CTX_CB},
    {"p9-hw64M-scr8M", PCS, 1, 9, 64, 8192, 0, THREAD, AT_CTX_CB},
    {"p9-serialized", PCS, 2, 9, 0, 0, 0, LAUNCH, AT_CTX_CB},
    {"baseline-end", BASE, 0, 0, 0, 0, 0, THREAD, AT_CTX_CB},
    // Live drain (does GetData return samples while kernels run?): sparser periods and a worker
    // thread that wakes every 1 ms instead of 100 (run with --only and PC_PROBE_ITERS=2000).
    {"p15", PCS, 1, 15, 0, 0, 0, THREAD, AT_CTX_CB},
    {"p17", PCS, 1, 17, 0, 0, 0, THREAD, AT_CTX_CB},
    {"p9-sleep1", PCS, 1, 9, 0, 0, 1, THREAD, AT_CTX_CB},
    {"p11-sleep1", PCS, 1, 11, 0, 0, 1, THREAD, AT_CTX_CB},
    {"p13-sleep1", PCS, 1, 13, 0, 0, 1, THREAD, AT_CTX_CB},
    {"p15-sleep1", PCS, 1, 15, 0, 0, 1, THREAD, AT_CTX_CB},
    {"p5", PCS, 1, 5, 0, 0, 0, THREAD, AT_CTX_CB},  // the densest last: the likeliest to be slow
    {"p5-hw8M", PCS, 1, 5, 8, 0, 0, THREAD, AT_CTX_CB},
};
constexpr int kNumCfgs = sizeof(kCfgs) / sizeof(kCfgs[0]);

// What a child reports to the parent (through a pipe) for the final table.
struct Row {
  int enableOk, configOk, cuptiErrors, corrNonzero, corrMatch;
  unsigned effPeriod, effSleep, getDataCalls, getDataErrors, launches;
  unsigned long long effHw, effScratch, total, dropped, nonUsr, hwFull, records, sumMain;
  unsigned long long phase[5], fn[4];  // fn: mem, fma, hot, other
  double roundMs[kRounds], medMs, enqMs, tailMs, disableMs, getDataMs, hotLinePct, gpuMs[3];
  char top[3][24];  // top stall reason per kernel
};
enum Phase { PH_RUN, PH_LAUNCH, PH_MODLOAD, PH_TAIL, PH_DISABLE };
const char* const kPhaseNames[5] = {"drain-thread", "launch-exit", "module/ctx", "tail", "disable"};

inline double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

inline pid_t g_child = 0;

inline void parent_alarm(int) {
  const char m[] = "TIMEOUT: the whole probe ran past its budget\n";
  (void)!write(1, m, sizeof m - 1);
  if (g_child > 0) kill(g_child, SIGKILL);
  _exit(3);
}

// Runs one configuration in a child; returns "" or why the row is missing.
inline std::string run_child(const char* self, int idx, bool first, double deadline, Row* row) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string a = std::to_string(idx), b = std::to_string(fds[1]);
    execl(self, self, "--child", a.c_str(), b.c_str(), first ? "first" : "",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  if (pid < 0) return close(fds[0]), "fork failed";
  g_child = pid;
  int st = 0;
  std::string why;
  for (;;) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) break;
    if (now_ms() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      why = "TIMEOUT (killed)";
      break;
    }
    usleep(20000);
  }
  g_child = 0;
  ssize_t n = read(fds[0], row, sizeof *row);
  close(fds[0]);
  if (n == ssize_t(sizeof *row)) return "";
  if (why.empty())
    why = WIFEXITED(st) ? "exit " + std::to_string(WEXITSTATUS(st))
                        : "signal " + std::to_string(WTERMSIG(st));
  return why;
}

// The sweep: each configuration in a child (self --child IDX FD FIRST), then the table.
inline int parent_main(int argc, char** argv, int hotLine) {
  std::string only = argc == 3 && std::strcmp(argv[1], "--only") == 0 ? argv[2] : "";
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
    for (const Cfg& c : kCfgs) std::printf("%s\n", c.name);
    return 0;
  }
  std::printf(
      "pc_sampling_probe: %d configurations, one child each; per child %d rounds x %d iterations "
      "(pcs_mem on stream 0, pcs_fma on stream 1, pcs_hot alternating; hot loop at line "
      "%d); budget %d s\n",
      kNumCfgs, kRounds, Iters(), hotLine, kBudgetS);
  signal(SIGALRM, parent_alarm);
  alarm(kBudgetS + 5);
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return std::printf("cannot read /proc/self/exe\n"), 2;
  self[len] = 0;
  double start = now_ms();
  std::vector<std::pair<int, std::string>> done;
  std::vector<Row> rows(kNumCfgs);
  for (int i = 0; i < kNumCfgs; ++i) {
    if (!only.empty() &&
        ("," + only + ",").find(std::string(",") + kCfgs[i].name + ",") == std::string::npos)
      continue;
    double left = kBudgetS * 1000.0 - (now_ms() - start);
    if (left < 25000) {
      done.emplace_back(i, "SKIPPED (time budget)");
      continue;
    }
    double t = now_ms();
    std::printf("--- %s\n", kCfgs[i].name);
    std::string why = run_child(self, i, done.empty(),
                                now_ms() + std::min(left - 3000, kChildLimitS * 1000.0), &rows[i]);
    std::printf("--- %s: %s in %.1f s\n", kCfgs[i].name, why.empty() ? "done" : why.c_str(),
                (now_ms() - t) / 1000);
    done.emplace_back(i, why);
  }
  double base = 0;
  for (auto& [i, why] : done)
    if (why.empty() && kCfgs[i].kind == BASE && base == 0) base = rows[i].medMs;
  std::printf("\n%-16s %8s %6s %6s %9s %8s %8s %6s %5s %5s %5s %5s %-40s %-9s %s\n", "config",
              "loop_ms", "x_base", "enq_ms", "total", "dropped", "non_usr", "recs", "mem%", "fma%",
              "hot%", "line%", "top stall mem / fma / hot", "corr!=0", "notes");
  for (auto& [i, why] : done) {
    const Row& r = rows[i];
    const Cfg& c = kCfgs[i];
    if (!why.empty()) {
      std::printf("%-16s %s\n", c.name, why.c_str());
      continue;
    }
    double all = double(r.fn[0] + r.fn[1] + r.fn[2] + r.fn[3]);
    auto pct = [&](int k) { return all > 0 ? 100.0 * r.fn[k] / all : 0.0; };
    std::string top = c.kind == PCS ? std::string(r.top[0][0] ? r.top[0] : "-") + " / " +
                                          (r.top[1][0] ? r.top[1] : "-") + " / " +
                                          (r.top[2][0] ? r.top[2] : "-")
                                    : "";
    std::string notes;
    if (c.kind == PCS && !r.enableOk) notes += "enable FAILED; ";
    if (c.kind == PCS && r.enableOk && r.configOk != 1) notes += "config FAILED; ";
    if (r.hwFull) notes += "hwBufferFull " + std::to_string(r.hwFull) + "; ";
    if (r.getDataErrors) notes += "GetData errors " + std::to_string(r.getDataErrors) + "; ";
    if (r.cuptiErrors) notes += "CUPTI errors " + std::to_string(r.cuptiErrors) + "; ";
    if (r.corrNonzero) notes += "corrId = launch's " + std::to_string(r.corrMatch) + "; ";
    if (c.kind == PCS) notes += "2^" + std::to_string(r.effPeriod);
    std::printf(
        "%-16s %8.1f %6.2f %6.1f %9llu %8llu %8llu %6llu %5.1f %5.1f %5.1f %5.1f %-40s %4d/%-4llu "
        "%s\n",
        c.name, r.medMs, base > 0 ? r.medMs / base : 0.0, r.enqMs, r.total, r.dropped, r.nonUsr,
        r.records, pct(0), pct(1), pct(2), r.hotLinePct, top.c_str(), r.corrNonzero, r.records,
        notes.c_str());
  }
  std::printf(
      "loop_ms: median of %d rounds (host clock, launch to sync); x_base: / first baseline; "
      "total/dropped/non_usr: CUPTI's counters summed over all GetData buffers; recs: PC records; "
      "mem/fma/hot%%: share of per-PC samples; line%%: pcs_hot samples on line %d; corr!=0: PC "
      "records with a correlationId / all. Elapsed %.1f s\n",
      kRounds, hotLine, (now_ms() - start) / 1000);
  return 0;
}

}  // namespace pcprobe
