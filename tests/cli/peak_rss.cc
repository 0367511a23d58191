// ts_peak_rss KIB_FILE PROGRAM [ARGS...]: runs PROGRAM as its child, writes the
// child's peak RSS in KiB to KIB_FILE and exits with the child's status
// (128 + signal when a signal ended it).
//
// Why a helper (tests/cli/measured_run.h): a child's ru_maxrss includes the
// pages of the process it was forked from (the kernel keeps the high-water
// mark across exec; fork, vfork and posix_spawn alike). Forked from a test
// process that has grown (a whole test binary in one process, as the asan
// preset runs them), the command would be charged for the test's memory.
// Forked from this small program it is charged for its own only.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: ts_peak_rss KIB_FILE PROGRAM [ARGS...]\n");
    return 2;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("ts_peak_rss: fork");
    return 2;
  }
  if (pid == 0) {
    execv(argv[2], argv + 2);
    std::perror("ts_peak_rss: exec");
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) != pid) {
    std::perror("ts_peak_rss: wait4");
    return 2;
  }
  FILE* f = std::fopen(argv[1], "w");
  if (f == nullptr || std::fprintf(f, "%ld\n", usage.ru_maxrss) < 0 || std::fclose(f) != 0) {
    std::perror("ts_peak_rss: writing the peak");
    return 2;
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}
