#include "tracesmith/stacks/build_id.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace tracesmith::stacks {

std::string BuildIdFromNotes(const uint8_t* p, size_t size) {
  static const char kHex[] = "0123456789abcdef";
  auto align4 = [](size_t v) { return (v + 3) & ~size_t{3}; };
  while (size >= sizeof(ElfW(Nhdr))) {
    ElfW(Nhdr) nh;
    std::memcpy(&nh, p, sizeof(nh));
    size_t name_sz = align4(nh.n_namesz), desc_sz = align4(nh.n_descsz);
    size_t total = sizeof(nh) + name_sz + desc_sz;
    if (total > size) break;
    const uint8_t* name = p + sizeof(nh);
    if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
      std::string out;
      const uint8_t* desc = name + name_sz;
      for (size_t i = 0; i < nh.n_descsz; ++i) {
        out += kHex[desc[i] >> 4];
        out += kHex[desc[i] & 15];
      }
      return out;
    }
    p += total;
    size -= total;
  }
  return "";
}

std::string ReadBuildIdFromFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st;
  std::string out;
  if (fstat(fd, &st) == 0 && size_t(st.st_size) >= sizeof(ElfW(Ehdr))) {
    void* map = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED) {
      const auto* base = static_cast<const uint8_t*>(map);
      size_t size = size_t(st.st_size);
      ElfW(Ehdr) eh;
      std::memcpy(&eh, base, sizeof(eh));
      if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
          eh.e_phoff < size && eh.e_phnum * sizeof(ElfW(Phdr)) <= size - eh.e_phoff) {
        for (int i = 0; i < eh.e_phnum && out.empty(); ++i) {
          ElfW(Phdr) ph;
          std::memcpy(&ph, base + eh.e_phoff + i * sizeof(ph), sizeof(ph));
          if (ph.p_type == PT_NOTE && ph.p_offset < size && ph.p_filesz <= size - ph.p_offset)
            out = BuildIdFromNotes(base + ph.p_offset, ph.p_filesz);
        }
      }
      munmap(map, size_t(st.st_size));
    }
  }
  close(fd);
  return out;
}

}  // namespace tracesmith::stacks
