// UnwindRule: how to step from one x86-64 frame to its caller, packed in 64
// bits so the rule cache can publish it with one atomic store.
#pragma once

#include <cstdint>

namespace tracesmith::stacks {

enum class RuleKind : uint8_t {
  kInvalid = 0,       // never stored; a cache slot without a rule reads as this
  kCfa = 1,           // CFA = (rbp ? rbp : rsp) + cfa_offset; RA at CFA-8
  kFramePointer = 2,  // no usable CFI: CFA = rbp+16, RA at rbp+8, caller rbp at rbp
  kEnd = 3,           // outermost frame (RA undefined, e.g. _start, clone)
};

struct UnwindRule {
  RuleKind kind = RuleKind::kInvalid;
  bool cfa_is_rbp = false;
  bool rbp_saved = false;  // caller's rbp is stored at CFA + rbp_offset
  int16_t rbp_offset = 0;
  int32_t cfa_offset = 0;

  uint64_t Pack() const {
    return uint64_t(uint8_t(kind)) | uint64_t(cfa_is_rbp) << 2 | uint64_t(rbp_saved) << 3 |
           uint64_t(uint16_t(rbp_offset)) << 16 | uint64_t(uint32_t(cfa_offset)) << 32;
  }
  static UnwindRule Unpack(uint64_t v) {
    UnwindRule r;
    r.kind = RuleKind(v & 3);
    r.cfa_is_rbp = (v >> 2) & 1;
    r.rbp_saved = (v >> 3) & 1;
    r.rbp_offset = int16_t(uint16_t(v >> 16));
    r.cfa_offset = int32_t(uint32_t(v >> 32));
    return r;
  }
};

// Computes the rule for code address `pc` (for a return address, pass ra-1)
// from the .eh_frame_hdr section mapped at `eh_frame_hdr`. Returns a
// kFramePointer rule when the CFI cannot be expressed as an UnwindRule or
// `pc` has no FDE. Parses trusted, loaded module memory only.
UnwindRule ComputeRuleFromEhFrameHdr(uintptr_t eh_frame_hdr, uintptr_t pc);

// From `copy`, a copy of the .eh_frame_hdr loaded at `eh_frame_hdr` (`size` bytes): where
// .eh_frame begins, and its search table (`count` sorted (initial location, FDE) pairs of
// datarel int32, inside the copy). False when the header is not the usual kind.
bool EhFrameHdrTable(const uint8_t* copy, size_t size, uintptr_t eh_frame_hdr, uintptr_t* eh_frame,
                     const int32_t** table, uint64_t* count);

// From `copy`, a copy of the .eh_frame_hdr loaded at `eh_frame_hdr` (`size`
// bytes, from PT_GNU_EH_FRAME): where .eh_frame begins and the address of its
// farthest FDE (which ends the part the table indexes). False when the header
// is not the usual kind.
bool EhFrameTableSpan(const uint8_t* copy, size_t size, uintptr_t eh_frame_hdr, uintptr_t* begin,
                      uintptr_t* last_fde);

// Makes the rule cache's pages (1 MiB, in .bss) present ahead, so that a
// thread storing a new return address's rule does not fault a page in
// (PrepareModules' first call, on the writer). x86-64; elsewhere a no-op.
void PrepareRuleCache();

// Finds the .eh_frame_hdr of the module containing `pc`; 0 when none. May
// take the dynamic loader's lock: slow path only.
uintptr_t FindEhFrameHdr(uintptr_t pc);

}  // namespace tracesmith::stacks
