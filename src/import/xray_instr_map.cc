// XRay instrumentation map of an ELF64 little-endian binary.
//
// xray_instr_map holds one 32-byte sled entry per instrumentation point:
// u64 sled address, u64 function address, u8 kind, u8 always-instrument, u8
// version, 13 bytes padding. Version 2+ (clang 12 and later) stores both
// addresses relative to the field's own address; version 0-1 stores them
// absolute, relocated by R_*_RELATIVE entries in position-independent
// binaries. Function ids are 1-based and, as in compiler-rt and llvm-xray,
// advance each time the function address changes from one sled to the next.
// Names: the defined FUNC/IFUNC symbol at (or else covering) each address in
// .symtab, or .dynsym when the binary is stripped, demangled.
#include <cxxabi.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <unordered_map>
#include "tracesmith/base/bytes.h"

#include "tracesmith/import/xray.h"

namespace tracesmith::importer {
namespace {

constexpr size_t kEhdrBytes = 64, kShdrBytes = 64, kSymBytes = 24, kRelaBytes = 24;
constexpr size_t kSledBytes = 32;
constexpr uint32_t kShtSymtab = 2, kShtRela = 4, kShtNobits = 8, kShtDynsym = 11;
constexpr uint8_t kSttFunc = 2, kSttGnuIfunc = 10;
constexpr uint32_t kRelX8664Relative = 8, kRelAarch64Relative = 1027;
// Longer symbol names are not demangled (the demangler recurses on nesting).
constexpr size_t kMaxDemangleBytes = 4096;

struct Section {
  uint32_t name, type, link;
  uint64_t addr, offset, size, entsize;
};

struct Symbol {
  uint64_t value, size;
  uint32_t name;
  uint8_t bind;
};

class ElfImage {
 public:
  explicit ElfImage(std::string_view d) : d_(d) {}

  Status Open() {
    if (d_.size() < kEhdrBytes || d_.substr(0, 4) !=
                                      "\x7f"
                                      "ELF")
      return InvalidArgument("not an ELF file");
    if (d_[4] != 2 || d_[5] != 1)
      return Unimplemented("only 64-bit little-endian ELF files are supported");
    machine_ = LoadUnaligned<uint16_t>(d_.data() + 18);
    const uint64_t shoff = LoadUnaligned<uint64_t>(d_.data() + 40);
    uint64_t shnum = LoadUnaligned<uint16_t>(d_.data() + 60);
    uint32_t shstrndx = LoadUnaligned<uint16_t>(d_.data() + 62);
    if (shoff == 0) return InvalidArgument("ELF file has no section headers");
    if (shoff > d_.size() || (d_.size() - shoff) / kShdrBytes < 1)
      return DataLoss(StrFormat("byte 40: section header table at %llu is past the end (%zu)",
                                static_cast<unsigned long long>(shoff), d_.size()));
    const Section first = ReadSection(shoff);
    if (shnum == 0) shnum = first.size;  // extended numbering
    if (shstrndx == 0xffff) shstrndx = first.link;
    if (shnum > (d_.size() - shoff) / kShdrBytes)
      return DataLoss(StrFormat("byte %llu: %llu section headers run past the end of the file",
                                static_cast<unsigned long long>(shoff),
                                static_cast<unsigned long long>(shnum)));
    for (uint64_t i = 0; i < shnum; ++i) sections_.push_back(ReadSection(shoff + i * kShdrBytes));
    if (shstrndx >= sections_.size())
      return DataLoss(StrFormat("section name table index %u out of range", shstrndx));
    ASSIGN_OR_RETURN(shstrtab_, Contents(sections_[shstrndx], "section name table"));
    return OkStatus();
  }

  const std::vector<Section>& sections() const { return sections_; }
  uint16_t machine() const { return machine_; }

  std::string_view SectionName(const Section& s) const { return CString(shstrtab_, s.name); }

  const Section* Find(std::string_view name) const {
    for (const Section& s : sections_)
      if (SectionName(s) == name) return &s;
    return nullptr;
  }

  StatusOr<std::string_view> Contents(const Section& s, const char* what) const {
    if (s.type == kShtNobits) return std::string_view();
    if (s.offset > d_.size() || s.size > d_.size() - s.offset)
      return DataLoss(StrFormat("%s at byte %llu (%llu bytes) runs past the end of the file (%zu)",
                                what, static_cast<unsigned long long>(s.offset),
                                static_cast<unsigned long long>(s.size), d_.size()));
    return d_.substr(s.offset, s.size);
  }

  // The NUL-terminated string at `offset` of a string table ("" if out of range).
  static std::string_view CString(std::string_view table, uint64_t offset) {
    if (offset >= table.size()) return {};
    std::string_view s = table.substr(offset);
    return s.substr(0, s.find('\0'));
  }

 private:
  Section ReadSection(uint64_t at) const {
    const char* p = d_.data() + at;
    return Section{LoadUnaligned<uint32_t>(p),      LoadUnaligned<uint32_t>(p + 4),
                   LoadUnaligned<uint32_t>(p + 40), LoadUnaligned<uint64_t>(p + 16),
                   LoadUnaligned<uint64_t>(p + 24), LoadUnaligned<uint64_t>(p + 32),
                   LoadUnaligned<uint64_t>(p + 56)};
  }

  std::string_view d_;
  std::string_view shstrtab_;
  std::vector<Section> sections_;
  uint16_t machine_ = 0;
};

// Relocated values of R_*_RELATIVE entries, by the address they patch.
StatusOr<std::unordered_map<uint64_t, uint64_t>> RelativeRelocations(const ElfImage& elf) {
  std::unordered_map<uint64_t, uint64_t> out;
  const uint32_t relative = elf.machine() == 183 ? kRelAarch64Relative : kRelX8664Relative;
  for (const Section& s : elf.sections()) {
    if (s.type != kShtRela) continue;
    ASSIGN_OR_RETURN(std::string_view rela, elf.Contents(s, "relocation section"));
    for (size_t i = 0; i + kRelaBytes <= rela.size(); i += kRelaBytes) {
      const char* p = rela.data() + i;
      if ((LoadUnaligned<uint64_t>(p + 8) & 0xffffffff) == relative)
        out[LoadUnaligned<uint64_t>(p)] = LoadUnaligned<uint64_t>(p + 16);
    }
  }
  return out;
}

std::string Demangle(std::string_view name) {
  if (!name.starts_with("_Z") || name.size() > kMaxDemangleBytes) return std::string(name);
  std::string mangled(name);
  int status = 0;
  char* out = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) {
    std::free(out);
    return mangled;
  }
  std::string result(out);
  std::free(out);
  return result;
}

// Function symbols of .symtab (or .dynsym), sorted by address, globals first.
StatusOr<std::pair<std::vector<Symbol>, std::string_view>> FunctionSymbols(const ElfImage& elf) {
  const Section* symtab = nullptr;
  for (uint32_t type : {kShtSymtab, kShtDynsym}) {
    for (const Section& s : elf.sections())
      if (s.type == type && symtab == nullptr) symtab = &s;
  }
  std::vector<Symbol> syms;
  if (symtab == nullptr) return std::make_pair(syms, std::string_view());
  if (symtab->link >= elf.sections().size())
    return DataLoss(StrFormat("symbol table's string table index %u out of range", symtab->link));
  ASSIGN_OR_RETURN(std::string_view table, elf.Contents(*symtab, "symbol table"));
  ASSIGN_OR_RETURN(std::string_view strtab,
                   elf.Contents(elf.sections()[symtab->link], "symbol string table"));
  for (size_t i = 0; i + kSymBytes <= table.size(); i += kSymBytes) {
    const char* p = table.data() + i;
    const uint8_t info = static_cast<uint8_t>(p[4]);
    const uint16_t shndx = LoadUnaligned<uint16_t>(p + 6);
    const uint64_t value = LoadUnaligned<uint64_t>(p + 8);
    if (((info & 0xf) != kSttFunc && (info & 0xf) != kSttGnuIfunc) || shndx == 0 || value == 0)
      continue;
    // Rank: global (1) before weak (2) before local (0).
    const uint8_t bind = info >> 4;
    syms.push_back(Symbol{value, LoadUnaligned<uint64_t>(p + 16), LoadUnaligned<uint32_t>(p),
                          static_cast<uint8_t>(bind == 1   ? 0
                                               : bind == 2 ? 1
                                                           : 2)});
  }
  std::sort(syms.begin(), syms.end(), [](const Symbol& a, const Symbol& b) {
    return a.value != b.value ? a.value < b.value : a.bind < b.bind;
  });
  return std::make_pair(std::move(syms), strtab);
}

// The symbol at `addr`, else the last one before it whose size covers it.
const Symbol* SymbolAt(const std::vector<Symbol>& syms, uint64_t addr) {
  auto it = std::upper_bound(syms.begin(), syms.end(), addr,
                             [](uint64_t a, const Symbol& s) { return a < s.value; });
  if (it == syms.begin()) return nullptr;
  const uint64_t at = std::prev(it)->value;
  auto first = std::lower_bound(syms.begin(), it, at,
                                [](const Symbol& s, uint64_t v) { return s.value < v; });
  if (at == addr) return &*first;
  for (auto s = first; s != it; ++s)
    if (addr - s->value < s->size) return &*s;
  return nullptr;
}

}  // namespace

std::string XRayInstrMap::Name(int32_t id) const {
  if (id >= 1 && static_cast<size_t>(id) <= names.size() && !names[id - 1].empty())
    return names[id - 1];
  return "function#" + std::to_string(id);
}

StatusOr<XRayInstrMap> ParseXRayInstrMap(std::string_view data) {
  ElfImage elf(data);
  RETURN_IF_ERROR(elf.Open());
  const Section* map = elf.Find("xray_instr_map");
  if (map == nullptr)
    return NotFound("no xray_instr_map section (not built with -fxray-instrument?)");
  ASSIGN_OR_RETURN(std::string_view sleds, elf.Contents(*map, "xray_instr_map"));
  if (sleds.empty()) return NotFound("xray_instr_map has no contents (stripped copy?)");
  if (sleds.size() % kSledBytes != 0)
    return DataLoss(StrFormat("xray_instr_map at byte %llu: size %zu is not a multiple of %zu",
                              static_cast<unsigned long long>(map->offset), sleds.size(),
                              kSledBytes));
  std::unordered_map<uint64_t, uint64_t> relocs;  // read for version 0-1 sleds only
  bool relocs_read = false;
  XRayInstrMap out;
  uint64_t current = 0;
  for (size_t i = 0; i < sleds.size(); i += kSledBytes) {
    const char* p = sleds.data() + i;
    const uint64_t at = map->addr + i;  // the entry's own address
    uint64_t function = LoadUnaligned<uint64_t>(p + 8);
    const uint8_t version = static_cast<uint8_t>(p[18]);
    if (version >= 2) {
      function += at + 8;
    } else {
      if (!relocs_read) {
        ASSIGN_OR_RETURN(relocs, RelativeRelocations(elf));
        relocs_read = true;
      }
      auto r = relocs.find(at + 8);
      if (r != relocs.end()) function = r->second;
    }
    ++out.sleds;
    if (out.addresses.empty() || function != current) {
      current = function;
      out.addresses.push_back(function);
    }
  }
  ASSIGN_OR_RETURN(auto symbols, FunctionSymbols(elf));
  out.names.reserve(out.addresses.size());
  for (uint64_t addr : out.addresses) {
    const Symbol* s = SymbolAt(symbols.first, addr);
    out.names.push_back(s ? Demangle(ElfImage::CString(symbols.second, s->name)) : std::string());
  }
  return out;
}

StatusOr<XRayInstrMap> LoadXRayInstrMap(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError(StrFormat("cannot open %s: %s", path.c_str(), strerror(errno)));
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size <= 0) {
    close(fd);
    return InvalidArgument(path + ": empty or unreadable file, not an ELF binary");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  // Mapped, not read: only the section headers, the map and the symbols are touched.
  void* base = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (base == MAP_FAILED)
    return IoError(StrFormat("cannot map %s: %s", path.c_str(), strerror(errno)));
  auto map = ParseXRayInstrMap(std::string_view(static_cast<const char*>(base), size));
  munmap(base, size);
  if (!map.ok()) return Status(map.status().code(), path + ": " + map.status().message());
  size_t slash = path.rfind('/');
  map->binary = slash == std::string::npos ? path : path.substr(slash + 1);
  return map;
}

}  // namespace tracesmith::importer
