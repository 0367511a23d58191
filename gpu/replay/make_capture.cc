// GPU test program for replay: runs one kernel of replay_kernels.cubin on
// inputs it builds, and writes a replay capture of that launch (module image
// = the cubin's bytes, parameters from cuFuncGetParamInfo, before/after
// images of every allocation) with the replay payload writer. What the
// capture engine's --replay-capture has to do, done by hand for one launch.
//
//   replay_make_capture --cubin FILE --variant follow|scatter -o OUT.sbt
//                       [--claim-sm NN] [--check-taken]
// --claim-sm: record another compute capability (tests the arch check).
// --check-taken: with the allocations still live, replay in this process
//   with relocation off and expect the "address already taken" error.
#include <cuda.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tracesmith/base/file_util.h"
#include "tracesmith/format/replay_payload.h"
#include "tracesmith/replay/gpu_replayer.h"

namespace {

using namespace tracesmith;
using namespace tracesmith::replay;

#define CHECK_CU(expr)                                                                          \
  do {                                                                                          \
    CUresult r_ = (expr);                                                                       \
    if (r_ != CUDA_SUCCESS) {                                                                   \
      const char* n_ = nullptr;                                                                 \
      cuGetErrorName(r_, &n_);                                                                  \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, n_ ? n_ : "?"); \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)

struct Alloc {
  CUdeviceptr ptr;
  size_t size;
};

CUdeviceptr Allocate(std::vector<Alloc>* allocs, size_t size) {
  CUdeviceptr p = 0;
  CHECK_CU(cuMemAlloc(&p, size));
  allocs->push_back({p, size});
  return p;
}

std::vector<uint8_t> Download(const Alloc& a) {
  std::vector<uint8_t> v(a.size);
  CHECK_CU(cuMemcpyDtoH(v.data(), a.ptr, a.size));
  return v;
}

// Host image of the device struct in replay_kernels.cu.
struct Node {
  uint64_t data;
  uint64_t next;
  int32_t n;
  float scale;
};
static_assert(sizeof(Node) == 24);

}  // namespace

int main(int argc, char** argv) {
  std::string cubin_path, variant = "follow", out_path;
  int claim_sm = 0;
  bool check_taken = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--cubin")
      cubin_path = next();
    else if (a == "--variant")
      variant = next();
    else if (a == "-o")
      out_path = next();
    else if (a == "--claim-sm")
      claim_sm = std::atoi(next().c_str());
    else if (a == "--check-taken")
      check_taken = true;
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (cubin_path.empty() || out_path.empty() || (variant != "follow" && variant != "scatter")) {
    std::fprintf(stderr, "usage: %s --cubin FILE --variant follow|scatter -o OUT.sbt\n", argv[0]);
    return 2;
  }
  auto cubin = ReadFileToString(cubin_path);
  if (!cubin.ok()) {
    std::fprintf(stderr, "%s\n", cubin.status().ToString().c_str());
    return 1;
  }
  std::vector<uint8_t> image(cubin->begin(), cubin->end());

  CHECK_CU(cuInit(0));
  CUdevice dev;
  CHECK_CU(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK_CU(cuCtxSetCurrent(ctx));
  char name[256] = {};
  int major = 0, minor = 0, driver = 0;
  CHECK_CU(cuDeviceGetName(name, sizeof(name), dev));
  CHECK_CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CHECK_CU(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  CHECK_CU(cuDriverGetVersion(&driver));
  CUmodule module;
  CHECK_CU(cuModuleLoadData(&module, image.data()));
  const char* fn_name = variant == "follow" ? "follow_list" : "scatter_add";
  CUfunction fn;
  CHECK_CU(cuModuleGetFunction(&fn, module, fn_name));

  std::mt19937 rng(7);
  std::vector<Alloc> allocs;
  std::vector<std::vector<uint8_t>> values;  // one per kernel parameter
  auto value = [&](auto v) {
    std::vector<uint8_t> b(sizeof(v));
    std::memcpy(b.data(), &v, sizeof(v));
    values.push_back(b);
  };
  uint32_t threads = 0;
  std::vector<float> expect;  // follow: the expected output, for a sanity check
  CUdeviceptr out_ptr = 0;
  if (variant == "follow") {
    const int n = 1 << 20;
    threads = n;
    const int lens[3] = {n, n / 2, n / 4};
    const float scales[3] = {1.0f, 0.5f, 0.25f};
    std::vector<CUdeviceptr> data;
    std::vector<std::vector<float>> host(3);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (int k = 0; k < 3; ++k) {
      host[k].resize(size_t(lens[k]));
      for (float& f : host[k]) f = u(rng);
      data.push_back(Allocate(&allocs, host[k].size() * 4));
      CHECK_CU(cuMemcpyHtoD(data[k], host[k].data(), host[k].size() * 4));
    }
    CUdeviceptr nodes = Allocate(&allocs, 3 * sizeof(Node));
    Node hn[3];
    for (int k = 0; k < 3; ++k)
      hn[k] = {data[k], k < 2 ? nodes + (k + 1) * sizeof(Node) : 0, lens[k], scales[k]};
    CHECK_CU(cuMemcpyHtoD(nodes, hn, sizeof(hn)));
    out_ptr = Allocate(&allocs, size_t(n) * 4);
    CHECK_CU(cuMemsetD8(out_ptr, 0xff, size_t(n) * 4));
    expect.resize(n);
    for (int i = 0; i < n; ++i) {
      float acc = 0;
      for (int k = 0; k < 3; ++k)
        if (i < lens[k]) acc += host[k][i] * scales[k];
      expect[i] = acc + 3;
    }
    value(uint64_t(nodes));
    value(uint64_t(out_ptr));
    value(int32_t(n));
  } else {
    const int n = 1 << 22, buckets = 64;
    threads = n;
    std::vector<float> src(n);
    std::vector<int32_t> index(n);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::uniform_int_distribution<int> e(-20, 20);
    for (int i = 0; i < n; ++i) {
      src[i] = std::ldexp(u(rng), e(rng));  // wide magnitudes: order changes the rounding
      index[i] = int32_t(rng() % buckets);
    }
    CUdeviceptr s = Allocate(&allocs, src.size() * 4);
    CUdeviceptr x = Allocate(&allocs, index.size() * 4);
    CUdeviceptr d = Allocate(&allocs, buckets * 4);
    CHECK_CU(cuMemcpyHtoD(s, src.data(), src.size() * 4));
    CHECK_CU(cuMemcpyHtoD(x, index.data(), index.size() * 4));
    CHECK_CU(cuMemsetD8(d, 0, buckets * 4));
    value(uint64_t(s));
    value(uint64_t(x));
    value(uint64_t(d));
    value(int32_t(n));
  }

  // Parameter layout from the driver, as capture would take it.
  format::LaunchRecord launch;
  launch.index = 0;
  launch.function = fn_name;
  for (size_t k = 0;; ++k) {
    size_t off = 0, size = 0;
    if (cuFuncGetParamInfo(fn, k, &off, &size) != CUDA_SUCCESS) break;
    launch.param_info.push_back({uint32_t(off), uint32_t(size)});
  }
  if (launch.param_info.size() != values.size()) {
    std::fprintf(stderr, "cuFuncGetParamInfo reported %zu parameters, expected %zu\n",
                 launch.param_info.size(), values.size());
    return 1;
  }
  std::vector<void*> args;
  for (size_t k = 0; k < values.size(); ++k) {
    const format::ParamInfo& p = launch.param_info[k];
    if (p.size != values[k].size()) {
      std::fprintf(stderr, "parameter %zu: size %u, expected %zu\n", k, p.size, values[k].size());
      return 1;
    }
    launch.params.resize(std::max<size_t>(launch.params.size(), p.offset + p.size));
    std::memcpy(launch.params.data() + p.offset, values[k].data(), p.size);
    args.push_back(values[k].data());
  }
  launch.snapshot_ranges = uint32_t(allocs.size());
  launch.block[0] = 256;
  launch.grid[0] = (threads + 255) / 256;

  CHECK_CU(cuCtxSynchronize());
  std::vector<std::vector<uint8_t>> before;
  for (const Alloc& a : allocs) before.push_back(Download(a));
  CUevent t0, t1;
  CHECK_CU(cuEventCreate(&t0, CU_EVENT_DEFAULT));
  CHECK_CU(cuEventCreate(&t1, CU_EVENT_DEFAULT));
  CHECK_CU(cuEventRecord(t0, nullptr));
  CHECK_CU(cuLaunchKernel(fn, launch.grid[0], 1, 1, launch.block[0], 1, 1, 0, nullptr, args.data(),
                          nullptr));
  CHECK_CU(cuEventRecord(t1, nullptr));
  CHECK_CU(cuEventSynchronize(t1));
  float ms = 0;
  CHECK_CU(cuEventElapsedTime(&ms, t0, t1));
  launch.recorded_ns = uint64_t(double(ms) * 1e6);
  std::vector<std::vector<uint8_t>> after;
  for (const Alloc& a : allocs) after.push_back(Download(a));

  if (variant == "follow") {  // the kernel really followed the pointers
    std::vector<float> got(expect.size());
    std::memcpy(got.data(), after.back().data(), got.size() * 4);
    for (size_t i = 0; i < got.size(); ++i)
      if (!(std::fabs(got[i] - expect[i]) <= 1e-5f * (1 + std::fabs(expect[i])))) {
        std::fprintf(stderr, "follow_list wrong at %zu: %g, expected %g\n", i, got[i], expect[i]);
        return 1;
      }
  }

  {
    auto w = format::SbtWriter::Open(out_path);
    if (!w.ok()) {
      std::fprintf(stderr, "%s\n", w.status().ToString().c_str());
      return 1;
    }
    format::ReplayPayloadWriter p(w->get());
    format::CaptureInfo info{name, uint32_t(major), uint32_t(minor), uint32_t(driver),
                             "replay_make_capture"};
    if (claim_sm) info.cc_major = uint32_t(claim_sm / 10), info.cc_minor = uint32_t(claim_sm % 10);
    Status st = p.WriteCaptureInfo(info);
    auto mod = p.AddModule(image, format::ImageKind::kCubin, "replay_kernels.cubin");
    if (st.ok()) st = mod.status();
    launch.module_hash = mod.ok() ? *mod : 0;
    if (st.ok()) st = p.AddLaunch(launch);
    for (size_t k = 0; k < allocs.size() && st.ok(); ++k) {
      st = p.AddSnapshot(0, format::SnapshotPhase::kBefore, allocs[k].ptr, before[k]);
      if (st.ok()) st = p.AddSnapshot(0, format::SnapshotPhase::kAfter, allocs[k].ptr, after[k]);
    }
    if (st.ok()) st = (*w)->Close();
    if (!st.ok()) {
      std::fprintf(stderr, "writing %s: %s\n", out_path.c_str(), st.ToString().c_str());
      return 1;
    }
  }
  std::printf("captured %s: %zu allocations", fn_name, allocs.size());
  for (const Alloc& a : allocs) std::printf(" 0x%llx+%zu", (unsigned long long)a.ptr, a.size);
  std::printf(", kernel %.2f us -> %s\n", ms * 1000.0, out_path.c_str());

  if (check_taken) {
    auto reader = format::SbtReader::Open(out_path);
    auto cap = reader.ok() ? format::ReadReplayCapture(**reader)
                           : StatusOr<format::ReplayCapture>(reader.status());
    if (!cap.ok()) {
      std::fprintf(stderr, "reading back: %s\n", cap.status().ToString().c_str());
      return 1;
    }
    GpuReplayOptions same_only;
    same_only.allow_relocation = false;
    Status st = ReplayOnGpu(
        *cap, same_only, [](const LaunchOutcome&) {}, nullptr);
    const bool ok = !st.ok() && st.message().find("already taken") != std::string::npos;
    std::printf("address-taken check: %s: %s\n", ok ? "PASS" : "FAIL",
                st.ok() ? "replay unexpectedly succeeded" : st.message().c_str());
    if (!ok) return 1;
  }
  return 0;
}
