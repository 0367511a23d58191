#include "signal_forwarder.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>

namespace tracesmith::session {
namespace {

// The command's pid, set before any handler can run (the signals are blocked
// until then).
volatile sig_atomic_t g_command = 0;

// Async-signal-safe: kill() only, and errno is the interrupted code's.
void Forward(int sig, siginfo_t* info, void*) {
  // si_code > 0 (SI_KERNEL): the terminal sent it to the whole foreground
  // process group, which the command is part of.
  if ((sig == SIGINT || sig == SIGQUIT) && info->si_code > 0) return;
  const int saved_errno = errno;
  kill(g_command, sig);
  errno = saved_errno;
}

}  // namespace

SignalForwarder::SignalForwarder() {
  sigemptyset(&forwarded_);
  for (int sig : kSignals) sigaddset(&forwarded_, sig);
  sigprocmask(SIG_BLOCK, &forwarded_, &old_mask_);
}

void SignalForwarder::PrepareChild(pid_t parent) const {
  // The kernel sends SIGTERM when the parent dies, SIGKILL included; the
  // injection library handles it like any SIGTERM (the trace is finalised).
  // The parent may have died before this call: then nothing would come.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(128 + SIGTERM);
  sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
}

void SignalForwarder::Start(pid_t command) {
  g_command = command;
  struct sigaction fwd;
  std::memset(&fwd, 0, sizeof(fwd));
  fwd.sa_sigaction = &Forward;
  // SA_RESTART: tracesmith's own reads and writes are not cut short.
  fwd.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&fwd.sa_mask);
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    sigaction(kSignals[i], nullptr, &old_actions_[i]);
    // Ignored when tracesmith started (nohup, a background job): the command
    // inherited the same, so there is nothing to pass on.
    if (old_actions_[i].sa_handler != SIG_IGN) sigaction(kSignals[i], &fwd, nullptr);
  }
  installed_ = true;
  sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
}

void SignalForwarder::Stop() {
  sigprocmask(SIG_BLOCK, &forwarded_, nullptr);
  if (installed_)
    for (size_t i = 0; i < std::size(kSignals); ++i)
      sigaction(kSignals[i], &old_actions_[i], nullptr);
  installed_ = false;
}

void SignalForwarder::Release() const { sigprocmask(SIG_SETMASK, &old_mask_, nullptr); }

}  // namespace tracesmith::session
