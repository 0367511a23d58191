// CUDA IPC between two processes, for the capture's ipc_open / ipc_close rows
// (MemoryEvent op 9 / 10, from driver callbacks on cuIpcOpenMemHandle /
// cuIpcCloseMemHandle). Usage: ipc_pair --ipc
//
// Parent: cudaMalloc's kBytes, fills them with a known pattern on the GPU, takes a
// cudaIpcMemHandle, then starts a child: a fresh exec of this same binary
// (posix_spawn of /proc/self/exe, never a bare fork of a CUDA process) with
// "--ipc-child HEX" (the 64-byte handle as 128 hex digits). It waits for the
// child, checks its exit status, frees the buffer.
// Child: opens the handle (ts_ipc_open: one cudaIpcOpenMemHandle), copies the
// buffer back and checks the pattern, closes it (ts_ipc_close: one
// cudaIpcCloseMemHandle), exits 0. The child makes no allocation of its own.
//
// Expected rows: in the child's trace exactly one ipc_open (op 9, address = the
// pointer printed on "ipc_pair: child pid P opened 0x..."), stack naming
// ts_ipc_open, and one ipc_close (op 10) at the same address; in the parent's
// trace no IPC rows (cudaIpcGetMemHandle makes none).
// Prints "ipc_pair: parent pid P", "ipc_pair: child pid P opened 0xADDR",
// "ipc_pair: child pattern ok N bytes", "ipc_pair: child closed",
// "ipc_pair: parent child pid P exit 0", "ipc_pair: done"; exits 1 on any mismatch.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "check.h"

#define NOINLINE extern "C" __attribute__((noinline))

extern char** environ;

constexpr size_t kBytes = 1 << 20;

__host__ __device__ inline unsigned char Pattern(size_t i) {
  return static_cast<unsigned char>((i * 7 + 3) ^ (i >> 8));
}

__global__ void fill(unsigned char* p, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = Pattern(i);
}

NOINLINE void* ts_ipc_open(const cudaIpcMemHandle_t* h) {
  void* p = nullptr;
  CHECK(cudaIpcOpenMemHandle(&p, *h, cudaIpcMemLazyEnablePeerAccess));
  return p;
}
NOINLINE void ts_ipc_close(void* p) { CHECK(cudaIpcCloseMemHandle(p)); }

static std::string ToHex(const void* data, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  const auto* b = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    s += kDigits[b[i] >> 4];
    s += kDigits[b[i] & 15];
  }
  return s;
}

static bool FromHex(const char* s, void* data, size_t n) {
  if (std::strlen(s) != 2 * n) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  auto* b = static_cast<unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    int hi = nibble(s[2 * i]), lo = nibble(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    b[i] = static_cast<unsigned char>(hi << 4 | lo);
  }
  return true;
}

static int Child(const char* hex) {
  cudaIpcMemHandle_t h;
  if (!FromHex(hex, &h, sizeof(h))) {
    std::fprintf(stderr, "ipc_pair: child: bad handle (want %zu hex digits)\n", 2 * sizeof(h));
    return 1;
  }
  CHECK(cudaSetDevice(0));
  void* p = ts_ipc_open(&h);
  std::printf("ipc_pair: child pid %d opened 0x%llx\n", int(getpid()),
              static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(p)));
  std::fflush(stdout);
  std::vector<unsigned char> host(kBytes);
  CHECK(cudaMemcpy(host.data(), p, kBytes, cudaMemcpyDeviceToHost));
  size_t bad = 0;
  for (size_t i = 0; i < kBytes; ++i) bad += host[i] != Pattern(i);
  ts_ipc_close(p);
  if (bad) {
    std::printf("ipc_pair: child pattern FAIL %zu of %zu bytes differ\n", bad, kBytes);
    return 1;
  }
  std::printf("ipc_pair: child pattern ok %zu bytes\n", kBytes);
  std::printf("ipc_pair: child closed\n");
  return 0;
}

static int Parent() {
  CHECK(cudaSetDevice(0));
  std::printf("ipc_pair: parent pid %d\n", int(getpid()));
  unsigned char* buf = nullptr;
  CHECK(cudaMalloc(&buf, kBytes));
  fill<<<64, 256>>>(buf, kBytes);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  cudaIpcMemHandle_t h;
  CHECK(cudaIpcGetMemHandle(&h, buf));
  std::printf("ipc_pair: parent buffer 0x%llx %zu bytes\n",
              static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(buf)), kBytes);
  std::fflush(stdout);

  std::string hex = ToHex(&h, sizeof(h));
  char arg0[] = "ipc_pair", arg1[] = "--ipc-child";
  char* argv[] = {arg0, arg1, hex.data(), nullptr};
  pid_t pid = 0;
  int rc = posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, environ);
  if (rc != 0) {
    std::printf("ipc_pair: parent posix_spawn FAIL: %s\n", std::strerror(rc));
    return 1;
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) {
    std::printf("ipc_pair: parent waitpid FAIL: %s\n", std::strerror(errno));
    return 1;
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::printf("ipc_pair: parent child pid %d exit %d\n", int(pid), code);
  CHECK(cudaFree(buf));
  if (code != 0) return 1;
  std::printf("ipc_pair: done\n");
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--ipc-child") == 0) return Child(argv[2]);
  if (argc == 2 && std::strcmp(argv[1], "--ipc") == 0) return Parent();
  std::fprintf(stderr, "usage: ipc_pair --ipc\n");
  return 2;
}
