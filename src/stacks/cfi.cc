// DWARF call-frame information (.eh_frame) reduced to UnwindRules.
//
// Only what x86-64 compilers emit for ordinary code is modelled: the CFA as
// a register plus offset, and "saved at CFA+N" for rbp and the return
// address. Anything else (CFA expressions in PLT stubs and signal
// trampolines, registers saved in other registers) yields the frame-pointer
// fallback, which is also what a missing FDE yields. References: the LSB
// "Exception Frames" chapter and DWARF 4 section 6.4.
#include <dlfcn.h>
#include <link.h>

#include <cstring>

#include "fde_index.h"
#include "unwind_rule.h"

namespace tracesmith::stacks {
namespace {

// DW_EH_PE_* pointer encodings.
constexpr uint8_t kPeOmit = 0xff;
constexpr uint8_t kPeAbsptr = 0x00, kPeUleb = 0x01, kPeUdata2 = 0x02, kPeUdata4 = 0x03,
                  kPeUdata8 = 0x04, kPeSleb = 0x09, kPeSdata2 = 0x0a, kPeSdata4 = 0x0b,
                  kPeSdata8 = 0x0c;
constexpr uint8_t kPePcrel = 0x10, kPeDatarel = 0x30, kPeIndirect = 0x80;

// x86-64 DWARF register numbers.
constexpr uint64_t kRegRbp = 6, kRegRsp = 7, kRegRa = 16;

// A bounds-checked reader over trusted module memory. `ok` turns false on
// any overrun and every later read returns 0.
struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;

  bool Has(size_t n) {
    if (!ok || size_t(end - p) < n) ok = false;
    return ok;
  }
  template <typename T>
  T Fixed() {
    if (!Has(sizeof(T))) return 0;
    T v;
    std::memcpy(&v, p, sizeof(T));
    p += sizeof(T);
    return v;
  }
  uint64_t Uleb() {
    uint64_t v = 0;
    for (int shift = 0; Has(1); shift += 7) {
      uint8_t b = *p++;
      if (shift < 64) v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    return 0;
  }
  int64_t Sleb() {
    int64_t v = 0;
    int shift = 0;
    uint8_t b = 0;
    do {
      if (!Has(1)) return 0;
      b = *p++;
      if (shift < 64) v |= int64_t(b & 0x7f) << shift;
      shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40)) v |= -(int64_t(1) << shift);
    return v;
  }
  // An encoded pointer; `datarel_base` serves DW_EH_PE_datarel.
  uint64_t Pointer(uint8_t enc, uintptr_t datarel_base = 0) {
    if (enc == kPeOmit) return 0;
    uintptr_t here = uintptr_t(p);
    uint64_t v = 0;
    switch (enc & 0x0f) {
      case kPeAbsptr:
        v = Fixed<uint64_t>();
        break;
      case kPeUleb:
        v = Uleb();
        break;
      case kPeUdata2:
        v = Fixed<uint16_t>();
        break;
      case kPeUdata4:
        v = Fixed<uint32_t>();
        break;
      case kPeUdata8:
        v = Fixed<uint64_t>();
        break;
      case kPeSleb:
        v = uint64_t(Sleb());
        break;
      case kPeSdata2:
        v = uint64_t(int64_t(Fixed<int16_t>()));
        break;
      case kPeSdata4:
        v = uint64_t(int64_t(Fixed<int32_t>()));
        break;
      case kPeSdata8:
        v = Fixed<uint64_t>();
        break;
      default:
        ok = false;
        return 0;
    }
    switch (enc & 0x70) {
      case 0:
        break;
      case kPePcrel:
        v += here;
        break;
      case kPeDatarel:
        v += datarel_base;
        break;
      default:
        ok = false;
        return 0;  // textrel/funcrel/aligned: not used on x86-64 Linux
    }
    if (enc & kPeIndirect) {
      // Only personality pointers use this; we skip their value anyway.
      v = 0;
    }
    return v;
  }
};

// One row of the CFI table, restricted to the registers we track.
struct CfiState {
  enum RegRule : uint8_t { kSame, kOffset, kUndefined, kOther };
  uint64_t cfa_reg = kRegRsp;
  int64_t cfa_offset = 8;
  bool cfa_expression = false;
  RegRule rbp = kSame, ra = kOffset;
  int64_t rbp_offset = 0, ra_offset = -8;
};

struct Cie {
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint64_t ra_reg = kRegRa;
  uint8_t fde_encoding = kPeAbsptr;
  bool has_augmentation_data = false;
  Cursor initial_instructions{nullptr, nullptr};
};

// Reads the length field of a CIE/FDE; returns the record's end or nullptr.
const uint8_t* RecordEnd(Cursor* c) {
  uint64_t len = c->Fixed<uint32_t>();
  if (len == 0xffffffffu) len = c->Fixed<uint64_t>();
  if (!c->ok || len == 0 || len > (1ull << 30)) return nullptr;
  return c->p + len;
}

bool ParseCie(const uint8_t* at, Cie* cie) {
  Cursor c{at, at + 16};  // widened once the length is known
  const uint8_t* end = RecordEnd(&c);
  if (!end) return false;
  c.end = end;
  if (c.Fixed<uint32_t>() != 0) return false;  // CIE id is 0 in .eh_frame
  uint8_t version = c.Fixed<uint8_t>();
  const char* aug = reinterpret_cast<const char*>(c.p);
  size_t aug_len = strnlen(aug, size_t(end - c.p));
  if (!c.Has(aug_len + 1)) return false;
  c.p += aug_len + 1;
  if (aug_len >= 2 && aug[0] == 'e' && aug[1] == 'h') c.Fixed<uint64_t>();  // legacy "eh"
  cie->code_align = c.Uleb();
  cie->data_align = c.Sleb();
  cie->ra_reg = version == 1 ? c.Fixed<uint8_t>() : c.Uleb();
  if (aug_len > 0 && aug[0] == 'z') {
    cie->has_augmentation_data = true;
    uint64_t len = c.Uleb();
    if (!c.Has(len)) return false;
    Cursor a{c.p, c.p + len};
    for (size_t i = 1; i < aug_len && a.ok; ++i) {
      switch (aug[i]) {
        case 'R':
          cie->fde_encoding = a.Fixed<uint8_t>();
          break;
        case 'P':
          a.Pointer(a.Fixed<uint8_t>());
          break;
        case 'L':
          a.Fixed<uint8_t>();
          break;
        case 'S':
        case 'B':
          break;
        default:
          i = aug_len;
          break;  // unknown: the length lets us skip the rest
      }
    }
    c.p += len;
  }
  cie->initial_instructions = Cursor{c.p, end};
  return c.ok;
}

// Runs CFA instructions until the row covering `pc` is reached. `loc` is
// the address the row starts at. Returns false on malformed or unsupported
// input (DW_CFA_set_loc aside, which is rare and handled).
bool Execute(Cursor c, const Cie& cie, uint64_t* loc, uint64_t pc, const CfiState& initial,
             CfiState* s) {
  CfiState stack[8];  // DW_CFA_remember_state nesting; compilers use 1-2
  int depth = 0;
  auto set_reg = [&](uint64_t reg, CfiState::RegRule rule, int64_t off) {
    if (reg == kRegRbp)
      s->rbp = rule, s->rbp_offset = off;
    else if (reg == cie.ra_reg)
      s->ra = rule, s->ra_offset = off;
  };
  auto restore_reg = [&](uint64_t reg) {
    if (reg == kRegRbp)
      s->rbp = initial.rbp, s->rbp_offset = initial.rbp_offset;
    else if (reg == cie.ra_reg)
      s->ra = initial.ra, s->ra_offset = initial.ra_offset;
  };
  auto advance = [&](uint64_t delta) {
    *loc += delta * cie.code_align;
    return *loc <= pc;
  };
  while (c.ok && c.p < c.end) {
    uint8_t op = c.Fixed<uint8_t>();
    uint8_t low = op & 0x3f;
    switch (op >> 6) {
      case 1:  // DW_CFA_advance_loc
        if (!advance(low)) return true;
        continue;
      case 2:  // DW_CFA_offset
        set_reg(low, CfiState::kOffset, int64_t(c.Uleb()) * cie.data_align);
        continue;
      case 3:  // DW_CFA_restore
        restore_reg(low);
        continue;
    }
    switch (op) {
      case 0x00:
        break;      // nop
      case 0x01: {  // set_loc
        uint64_t target = c.Pointer(cie.fde_encoding);
        if (target > pc) return true;
        *loc = target;
        break;
      }
      case 0x02:
        if (!advance(c.Fixed<uint8_t>())) return true;
        break;
      case 0x03:
        if (!advance(c.Fixed<uint16_t>())) return true;
        break;
      case 0x04:
        if (!advance(c.Fixed<uint32_t>())) return true;
        break;
      case 0x05: {  // offset_extended
        uint64_t reg = c.Uleb();
        set_reg(reg, CfiState::kOffset, int64_t(c.Uleb()) * cie.data_align);
        break;
      }
      case 0x06:
        restore_reg(c.Uleb());
        break;
      case 0x07:
        set_reg(c.Uleb(), CfiState::kUndefined, 0);
        break;
      case 0x08:
        set_reg(c.Uleb(), CfiState::kSame, 0);
        break;
      case 0x09: {  // register
        uint64_t reg = c.Uleb();
        c.Uleb();
        set_reg(reg, CfiState::kOther, 0);
        break;
      }
      case 0x0a:  // remember_state
        if (depth == 8) return false;
        stack[depth++] = *s;
        break;
      case 0x0b:  // restore_state
        if (depth == 0) return false;
        *s = stack[--depth];
        break;
      case 0x0c:  // def_cfa
        s->cfa_reg = c.Uleb();
        s->cfa_offset = int64_t(c.Uleb());
        s->cfa_expression = false;
        break;
      case 0x0d:
        s->cfa_reg = c.Uleb();
        s->cfa_expression = false;
        break;
      case 0x0e:
        s->cfa_offset = int64_t(c.Uleb());
        break;
      case 0x0f: {  // def_cfa_expression
        uint64_t len = c.Uleb();
        if (c.Has(len)) c.p += len;
        s->cfa_expression = true;
        break;
      }
      case 0x10:
      case 0x16: {  // expression, val_expression
        uint64_t reg = c.Uleb();
        uint64_t len = c.Uleb();
        if (c.Has(len)) c.p += len;
        set_reg(reg, CfiState::kOther, 0);
        break;
      }
      case 0x11: {  // offset_extended_sf
        uint64_t reg = c.Uleb();
        set_reg(reg, CfiState::kOffset, c.Sleb() * cie.data_align);
        break;
      }
      case 0x12:  // def_cfa_sf
        s->cfa_reg = c.Uleb();
        s->cfa_offset = c.Sleb() * cie.data_align;
        s->cfa_expression = false;
        break;
      case 0x13:
        s->cfa_offset = c.Sleb() * cie.data_align;
        break;
      case 0x14:
      case 0x15: {  // val_offset(_sf): value, not a save slot
        uint64_t reg = c.Uleb();
        if (op == 0x14)
          c.Uleb();
        else
          c.Sleb();
        set_reg(reg, CfiState::kOther, 0);
        break;
      }
      case 0x2e:
        c.Uleb();
        break;      // GNU_args_size
      case 0x2f: {  // GNU_negative_offset_extended
        uint64_t reg = c.Uleb();
        set_reg(reg, CfiState::kOffset, -int64_t(c.Uleb()) * cie.data_align);
        break;
      }
      default:
        return false;
    }
  }
  return c.ok;
}

UnwindRule FramePointerRule() {
  UnwindRule r;
  r.kind = RuleKind::kFramePointer;
  return r;
}

UnwindRule ToRule(const CfiState& s) {
  UnwindRule r;
  if (s.ra == CfiState::kUndefined) {
    r.kind = RuleKind::kEnd;
    return r;
  }
  if (s.cfa_expression || (s.cfa_reg != kRegRsp && s.cfa_reg != kRegRbp) ||
      s.ra != CfiState::kOffset || s.ra_offset != -8 || s.cfa_offset < 8 ||
      s.cfa_offset > (1 << 30) || s.rbp == CfiState::kOther || s.rbp == CfiState::kUndefined ||
      (s.rbp == CfiState::kOffset && (s.rbp_offset < -32768 || s.rbp_offset > 32767))) {
    return FramePointerRule();
  }
  r.kind = RuleKind::kCfa;
  r.cfa_is_rbp = s.cfa_reg == kRegRbp;
  r.cfa_offset = int32_t(s.cfa_offset);
  r.rbp_saved = s.rbp == CfiState::kOffset;
  r.rbp_offset = int16_t(s.rbp_offset);
  return r;
}

}  // namespace

UnwindRule ComputeRuleFromEhFrameHdr(uintptr_t eh_frame_hdr, uintptr_t pc) {
  if (eh_frame_hdr == 0) return FramePointerRule();
  const auto* hdr = reinterpret_cast<const uint8_t*>(eh_frame_hdr);
  // Header: version, eh_frame_ptr encoding, fde_count encoding, table encoding.
  Cursor c{hdr, hdr + 4 + 8 + 8};
  uint8_t version = c.Fixed<uint8_t>();
  uint8_t ptr_enc = c.Fixed<uint8_t>();
  uint8_t count_enc = c.Fixed<uint8_t>();
  uint8_t table_enc = c.Fixed<uint8_t>();
  if (version != 1 || table_enc != (kPeDatarel | kPeSdata4)) return FramePointerRule();
  c.Pointer(ptr_enc, eh_frame_hdr);
  uint64_t count = c.Pointer(count_enc, eh_frame_hdr);
  if (!c.ok || count == 0 || count > (1u << 28)) return FramePointerRule();
  // Binary search the sorted (initial_location, fde) table, both datarel.
  const auto* table = reinterpret_cast<const int32_t*>(c.p);
  const int64_t rel_pc = int64_t(pc - eh_frame_hdr);
  uint64_t lo = 0, hi = count;
  // The entries of pc's page when the writer indexed this table (fde_index.h), checked
  // against the table itself: a stale index costs the full search, never a wrong entry.
  if (uint64_t nlo, nhi; NarrowFdeSearch(eh_frame_hdr, rel_pc, count, &nlo, &nhi) &&
                         table[2 * nlo] <= rel_pc && (nhi == count || table[2 * nhi] > rel_pc)) {
    lo = nlo;
    hi = nhi;
    CountNarrowedSearch();
  }
  while (hi - lo > 1) {
    uint64_t mid = (lo + hi) / 2;
    if (table[2 * mid] <= rel_pc)
      lo = mid;
    else
      hi = mid;
  }
  if (table[2 * lo] > rel_pc) return FramePointerRule();
  const auto* fde = reinterpret_cast<const uint8_t*>(eh_frame_hdr + table[2 * lo + 1]);

  Cursor f{fde, fde + 16};
  const uint8_t* fde_end = RecordEnd(&f);
  if (!fde_end) return FramePointerRule();
  f.end = fde_end;
  const uint8_t* cie_ptr_at = f.p;
  uint32_t cie_offset = f.Fixed<uint32_t>();
  if (!f.ok || cie_offset == 0) return FramePointerRule();
  Cie cie;
  if (!ParseCie(cie_ptr_at - cie_offset, &cie)) return FramePointerRule();
  uint64_t pc_begin = f.Pointer(cie.fde_encoding);
  uint64_t pc_range = f.Pointer(cie.fde_encoding & 0x0f);
  if (!f.ok || pc < pc_begin || pc >= pc_begin + pc_range) return FramePointerRule();
  if (cie.has_augmentation_data) {
    uint64_t len = f.Uleb();
    if (!f.Has(len)) return FramePointerRule();
    f.p += len;
  }

  CfiState initial;
  uint64_t loc = pc_begin;
  if (!Execute(cie.initial_instructions, cie, &loc, ~0ull, initial, &initial)) {
    return FramePointerRule();
  }
  CfiState state = initial;
  loc = pc_begin;
  if (!Execute(f, cie, &loc, pc, initial, &state)) return FramePointerRule();
  return ToRule(state);
}

bool EhFrameHdrTable(const uint8_t* copy, size_t size, uintptr_t eh_frame_hdr, uintptr_t* eh_frame,
                     const int32_t** table, uint64_t* count) {
  Cursor c{copy, copy + size};
  uint8_t version = c.Fixed<uint8_t>();
  uint8_t ptr_enc = c.Fixed<uint8_t>();
  uint8_t count_enc = c.Fixed<uint8_t>();
  uint8_t table_enc = c.Fixed<uint8_t>();
  if (version != 1 || table_enc != (kPeDatarel | kPeSdata4)) return false;
  // A pcrel pointer (ld writes eh_frame_ptr so) is read relative to the copy:
  // moved to where the header is loaded.
  const uintptr_t moved = eh_frame_hdr - uintptr_t(copy);
  *eh_frame =
      uintptr_t(c.Pointer(ptr_enc, eh_frame_hdr)) + ((ptr_enc & 0x70) == kPePcrel ? moved : 0);
  *count = c.Pointer(count_enc, eh_frame_hdr) + ((count_enc & 0x70) == kPePcrel ? moved : 0);
  if (!c.ok || *eh_frame == 0 || *count == 0 || *count > (1u << 28) || !c.Has(*count * 8))
    return false;
  *table = reinterpret_cast<const int32_t*>(c.p);
  return true;
}

bool EhFrameTableSpan(const uint8_t* copy, size_t size, uintptr_t eh_frame_hdr, uintptr_t* begin,
                      uintptr_t* last_fde) {
  uintptr_t eh_frame = 0;
  const int32_t* table = nullptr;
  uint64_t count = 0;
  if (!EhFrameHdrTable(copy, size, eh_frame_hdr, &eh_frame, &table, &count)) return false;
  // The FDE the farthest into .eh_frame ends it (CIEs come before their FDEs).
  int64_t last = 0;
  for (uint64_t i = 0; i < count; ++i) {
    int32_t fde;
    std::memcpy(&fde, table + 2 * i + 1, 4);
    if (i == 0 || fde > last) last = fde;
  }
  if (eh_frame_hdr + last < eh_frame) return false;
  *begin = eh_frame;
  *last_fde = eh_frame_hdr + uintptr_t(last);
  return true;
}

uintptr_t FindEhFrameHdr(uintptr_t pc) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
  // glibc 2.35+: lock-free lookup that also returns the PT_GNU_EH_FRAME address.
  dl_find_object result;
  if (_dl_find_object(reinterpret_cast<void*>(pc), &result) == 0) {
    return reinterpret_cast<uintptr_t>(result.dlfo_eh_frame);
  }
  return 0;
#else
  struct Search {
    uintptr_t pc;
    uintptr_t hdr;
  } search{pc, 0};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        uintptr_t hdr = 0;
        bool inside = false;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          uintptr_t start = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && s->pc >= start && s->pc < start + ph.p_memsz) inside = true;
          if (ph.p_type == PT_GNU_EH_FRAME) hdr = start;
        }
        if (!inside) return 0;
        s->hdr = hdr;
        return 1;
      },
      &search);
  return search.hdr;
#endif
}

}  // namespace tracesmith::stacks
