#include "tracesmith/symbolize/sass.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <vector>

#include "tracesmith/base/text.h"
#include "tracesmith/format/job_file_names.h"

extern char** environ;

namespace tracesmith::symbolize {
namespace {

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// "/*01a0*/" at the start of `s`: its value; false otherwise.
bool OffsetComment(std::string_view s, uint32_t* offset) {
  if (!s.starts_with("/*")) return false;
  const size_t end = s.find("*/");
  if (end == std::string_view::npos || end < 3 || end > 2 + 8) return false;
  uint32_t v = 0;
  for (char c : s.substr(2, end - 2)) {
    if (!IsHex(c)) return false;
    v = v * 16 + uint32_t(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  *offset = v;
  return true;
}

// The function a line opens: ".section .text.NAME,..." or the label ".text.NAME:".
bool SectionName(std::string_view line, std::string* name) {
  std::string_view s = line;
  if (s.starts_with(".section")) {
    s = Trim(s.substr(8));
    if (!s.starts_with(".text.")) return false;
    s.remove_prefix(6);
    const size_t comma = s.find(',');
    *name = std::string(Trim(s.substr(0, comma)));
    return !name->empty();
  }
  if (s.starts_with(".text.") && s.ends_with(":")) {
    *name = std::string(s.substr(6, s.size() - 7));
    return !name->empty();
  }
  return false;
}

bool Executable(const std::string& path) {
  return !path.empty() && access(path.c_str(), X_OK) == 0;
}

// Runs argv with stdout to `out_path`; true when it exited 0 within timeout_s.
bool RunTo(const std::vector<std::string>& argv, const std::string& out_path, double timeout_s,
           std::string* error) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    *error = argv[0] + ": cannot run it (errno " + std::to_string(rc) + ")";
    return false;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  for (;;) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0) {
      *error = argv[0] + ": lost track of it";
      return false;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      *error = argv[0] + " took longer than " + std::to_string(int(timeout_s)) + " s: given up";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *error = argv[0] + " " + argv.back() + " failed (exit status " +
             std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) + ")";
    return false;
  }
  return true;
}

}  // namespace

SassListing ParseNvdisasm(std::string_view listing) {
  SassListing out;
  std::map<uint32_t, std::string>* current = nullptr;
  std::string name;
  while (!listing.empty()) {
    const size_t nl = listing.find('\n');
    std::string_view line = Trim(listing.substr(0, nl));
    listing.remove_prefix(nl == std::string_view::npos ? listing.size() : nl + 1);
    if (SectionName(line, &name)) {
      current = &out[name];
      continue;
    }
    uint32_t offset = 0;
    if (!current || !OffsetComment(line, &offset)) continue;
    std::string_view text = Trim(line.substr(line.find("*/") + 2));
    // The encoding comment after the instruction ("/* 0x000fe2... */"), then its ';'.
    if (const size_t comment = text.find("/*"); comment != std::string_view::npos)
      text = Trim(text.substr(0, comment));
    if (text.ends_with(";")) text = Trim(text.substr(0, text.size() - 1));
    if (text.empty()) continue;
    current->try_emplace(offset, text);
  }
  return out;
}

std::string FindNvdisasm() {
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(var); v && *v && Executable(std::string(v) + "/bin/nvdisasm"))
      return std::string(v) + "/bin/nvdisasm";
  if (Executable("/usr/local/cuda/bin/nvdisasm")) return "/usr/local/cuda/bin/nvdisasm";
  if (const char* path = std::getenv("PATH")) {
    std::string_view rest = path;
    while (!rest.empty()) {
      const size_t colon = rest.find(':');
      const std::string dir(rest.substr(0, colon));
      rest.remove_prefix(colon == std::string_view::npos ? rest.size() : colon + 1);
      if (!dir.empty() && Executable(dir + "/nvdisasm")) return dir + "/nvdisasm";
    }
  }
  return "";
}

std::vector<uint32_t> FunctionSymbolIndices(const std::string& elf_path,
                                            const std::set<std::string, std::less<>>& functions) {
  std::vector<uint32_t> out;
  if (functions.empty() || elf_version(EV_CURRENT) == EV_NONE) return out;
  const int fd = open(elf_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  if (Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr)) {
    for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
      GElf_Shdr sh;
      if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != SHT_SYMTAB || sh.sh_entsize == 0)
        continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      const size_t n = sh.sh_size / sh.sh_entsize;
      for (size_t i = 1; data != nullptr && i < n; ++i) {
        GElf_Sym sym;
        if (gelf_getsym(data, int(i), &sym) == nullptr) break;
        const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
        if (name && GELF_ST_TYPE(sym.st_info) == STT_FUNC && functions.count(name))
          out.push_back(uint32_t(i));
      }
    }
    elf_end(elf);
  }
  close(fd);
  return out;
}

StatusOr<SassStats> AddSass(model::Trace* trace, const std::string& cubin_dir,
                            const SassOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  SassStats stats;
  // The sampled instructions without text yet, by cubin.
  using Key = std::tuple<uint32_t, uint32_t, uint32_t>;  // pid, function id, pc offset
  std::map<uint64_t, std::set<Key>> wanted;
  std::set<std::tuple<uint64_t, uint32_t, uint32_t, uint32_t>> done;
  for (const model::PcSass& s : trace->Rows<model::PcSass>())
    done.emplace(s.cubin_crc, s.pid, s.function_id, s.pc_offset);
  for (const model::PcLine& l : trace->Rows<model::PcLine>())
    if (!done.count({l.cubin_crc, l.pid, l.function_id, l.pc_offset}) &&
        wanted[l.cubin_crc].emplace(l.pid, l.function_id, l.pc_offset).second)
      stats.instructions++;
  if (wanted.empty()) return stats;
  stats.nvdisasm = options.nvdisasm.empty() ? FindNvdisasm() : options.nvdisasm;
  if (stats.nvdisasm.empty())
    return NotFound(
        "nvdisasm (CUDA toolkit) not found in $CUDA_HOME/bin, /usr/local/cuda/bin or PATH: the "
        "sampled instructions keep their offsets without SASS text (run `tracesmith symbolize` "
        "where the toolkit is, with the trace's .cubins directory beside it)");
  // One nvdisasm per module, as many at once as there are cores (PyTorch's
  // sampled modules took 76 s one after the other on the H200 machine).
  struct Job {
    uint64_t crc = 0;
    std::string cubin;
    std::set<std::string, std::less<>> functions;  // the sampled ones
    enum { kPending, kMissing, kSkipped, kFailed, kDone } state = kPending;
    std::string error;
    SassListing listing;
  };
  std::vector<Job> jobs;
  for (const auto& [crc, keys] : wanted) {
    Job& j = jobs.emplace_back();
    j.crc = crc;
    j.cubin = cubin_dir + "/" + format::CubinFileName(crc);
    for (const auto& [pid, function_id, pc] : keys)
      j.functions.emplace(trace->strings.Get(function_id));
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    char tmp[] = "/tmp/tracesmith-sass-XXXXXX";
    const int fd = mkstemp(tmp);
    if (fd >= 0) close(fd);
    for (size_t k; (k = next.fetch_add(1)) < jobs.size();) {
      Job& j = jobs[k];
      struct stat st;
      if (stat(j.cubin.c_str(), &st) != 0) {
        j.state = Job::kMissing;
        continue;
      }
      if (fd < 0 || std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() >
                        options.budget_s) {
        j.state = fd < 0 ? Job::kFailed : Job::kSkipped;
        if (fd < 0) j.error = "cannot create a temporary file for nvdisasm's listing";
        continue;
      }
      auto list = [&](const std::vector<std::string>& argv) {
        if (!RunTo(argv, tmp, options.timeout_s, &j.error)) return false;
        std::ifstream in(tmp, std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        j.listing = ParseNvdisasm(text.str());
        std::erase_if(j.listing, [&](const auto& f) { return !j.functions.count(f.first); });
        return true;
      };
      // The sampled functions alone (nvdisasm -fun: their symbols' indices); the
      // whole cubin when that fails or misses one (an nvdisasm without -fun).
      const std::vector<uint32_t> indices = FunctionSymbolIndices(j.cubin, j.functions);
      std::string fun;
      for (uint32_t i : indices) fun += (fun.empty() ? "" : ",") + std::to_string(i);
      const bool some = !fun.empty() && list({stats.nvdisasm, "-c", "-fun", fun, j.cubin}) &&
                        j.listing.size() == j.functions.size();
      if (!some && !list({stats.nvdisasm, "-c", j.cubin})) {
        j.state = Job::kFailed;
        continue;
      }
      j.error.clear();
      j.state = Job::kDone;
    }
    if (fd >= 0) unlink(tmp);
  };
  const size_t workers = std::min<size_t>(
      jobs.size(), options.jobs ? options.jobs : std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  for (const Job& j : jobs) {  // in CRC order: the rows do not depend on the timing
    if (j.state == Job::kMissing) stats.cubins_missing++;
    if (j.state == Job::kSkipped) stats.cubins_skipped++;
    if (j.state == Job::kFailed) {
      stats.cubins_failed++;
      if (stats.first_error.empty()) stats.first_error = j.error;
    }
    if (j.state != Job::kDone) continue;
    stats.cubins++;
    for (const auto& [pid, function_id, pc] : wanted[j.crc]) {
      auto f = j.listing.find(trace->strings.Get(function_id));
      if (f == j.listing.end()) continue;
      auto i = f->second.find(pc);
      if (i == f->second.end()) continue;
      model::PcSass row;
      row.pc_offset = pc;
      row.text_id = trace->strings.Intern(i->second);
      row.pid = pid;
      row.cubin_crc = j.crc;
      row.function_id = function_id;
      trace->Rows<model::PcSass>().push_back(row);
      stats.with_text++;
    }
  }
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return stats;
}

}  // namespace tracesmith::symbolize
