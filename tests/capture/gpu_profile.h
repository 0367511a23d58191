// Shared by the GPU capture tests: run `tracesmith profile` on a program and
// read the trace back. Environment (set by scripts/gpu-check.sh):
//   TS_TRACESMITH  the tracesmith binary      TS_GPU_BIN  compiled gpu/programs
//   TS_GPU_OUT     where traces are written   TS_TORCH_WORKLOAD  torch_mlp_train.py
#pragma once

#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tracesmith/capture/device_query.h"
#include "tracesmith/format/sbt_reader.h"

namespace tracesmith::capture {

inline std::string Env(const char* name, const char* fallback = "") {
  const char* v = getenv(name);
  return v && *v ? v : fallback;
}

inline bool HaveGpu() {
  static int have = -1;
  if (have < 0) {
    auto info = QueryDevices();
    have = info.ok() && !info->devices.empty() && !Env("TS_GPU_BIN").empty();
  }
  return have == 1;
}

#define REQUIRE_GPU() \
  if (!HaveGpu()) GTEST_SKIP() << "skipped (no GPU)"

struct ProfileRun {
  int status = 0;
  std::string output;
  std::string trace_path;
  model::Trace trace;
  format::ReadReport report;
  int exit_code() const { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }
};

// Profiles `program args` into TS_GPU_OUT/<name>.sbt.
inline ProfileRun Profile(const std::string& name, const std::string& program,
                          const std::string& options = "", const std::string& env = "") {
  ProfileRun r;
  r.trace_path = Env("TS_GPU_OUT", "/tmp") + "/" + name + ".sbt";
  std::string cmd = env + " " + Env("TS_TRACESMITH") + " profile -f " + options + " -o " +
                    r.trace_path + " -- " + program + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) r.output.append(buf, n);
  r.status = pclose(p);
  std::printf("[%s] %s\n%s", name.c_str(), cmd.c_str(), r.output.c_str());
  auto t = format::ReadTraceFile(r.trace_path, &r.report);
  if (t.ok()) r.trace = std::move(*t);
  return r;
}

inline std::string Program(const std::string& name) { return Env("TS_GPU_BIN") + "/" + name; }

}  // namespace tracesmith::capture
