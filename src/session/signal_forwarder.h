// Passes the signals that stop a program (SIGINT, SIGQUIT, SIGTERM, SIGHUP)
// from the process that runs a command under capture (RunUnderCapture,
// `tracesmith profile`) to that command, as `timeout` and `nsys` do, so that
// stopping tracesmith stops the command and tracesmith still waits for it,
// reports and ends with its status. The command is never left running
// unsupervised. Private to capture/ (run_command.cc); the handlers are
// process-wide, so one forwarder is active at a time.
//
// SIGTERM and SIGHUP are always passed on. SIGINT and SIGQUIT only when a
// process sent them (kill, sigqueue, tgkill): the terminal's Ctrl-C and
// Ctrl-\ go to the whole foreground process group, the command included, and
// are not sent to it a second time.
//
// Use, around fork():
//   SignalForwarder fwd;               // blocks the signals
//   pid_t pid = fork();
//   child:  fwd.PrepareChild(parent);  // then exec
//   parent: fwd.Start(pid);            // pending signals are passed on now
//           waitid(..., WEXITED | WNOWAIT); fwd.Stop(); waitpid(...); ...;
//           fwd.Release();
#pragma once

#include <signal.h>
#include <sys/types.h>

namespace tracesmith::session {

class SignalForwarder {
 public:
  // Blocks the forwarded signals. Done before fork(): a signal that arrives
  // before the handlers know the command's pid waits for them instead of
  // ending tracesmith with the command orphaned.
  SignalForwarder();
  SignalForwarder(const SignalForwarder&) = delete;
  SignalForwarder& operator=(const SignalForwarder&) = delete;

  // In the child, before exec (async-signal-safe). The command gets SIGTERM
  // if tracesmith dies without forwarding anything (SIGKILL), and ends at
  // once if that already happened; then the signal mask tracesmith started
  // with comes back. Dispositions are left as inherited: signals ignored by
  // nohup or in a background job stay ignored by the command.
  void PrepareChild(pid_t parent) const;

  // In the parent: installs the forwarding handlers for `command` (except for
  // signals tracesmith was started ignoring) and unblocks, so that signals
  // that arrived since the constructor are passed on now.
  void Start(pid_t command);

  // In the parent, once the command has ended but before it is reaped (until
  // then its pid cannot be given to another process, which a late forward
  // would hit): blocks the signals again and puts back tracesmith's own
  // dispositions. Safe to call without Start().
  void Stop();

  // Restores the signal mask tracesmith started with: signals held since
  // Stop() take effect now, as signals to tracesmith itself.
  void Release() const;

 private:
  static constexpr int kSignals[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
  sigset_t forwarded_;
  sigset_t old_mask_;
  struct sigaction old_actions_[sizeof(kSignals) / sizeof(kSignals[0])];
  bool installed_ = false;
};

}  // namespace tracesmith::session
