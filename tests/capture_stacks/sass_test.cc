// SASS text for sampled GPU instructions (symbolize/sass.h): nvdisasm's
// listing parsed per function and offset (with and without encoding
// comments, labels and predicates), and AddSass end to end with a stand-in
// nvdisasm (a script printing a listing), a missing cubin, a failing and a
// missing nvdisasm, and instructions that already have text; an ELF cubin's
// sampled functions listed alone (nvdisasm -fun).
#include "tracesmith/symbolize/sass.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "testing/temp_dir.h"
#include "tracesmith/format/job_file_names.h"

// A function of this test binary named as the kernel of kListing below: the
// binary is then an ELF file whose symbol table holds it, as a cubin's would.
extern "C" [[gnu::used, gnu::noinline]] void _Z7pcs_hotPji() { asm volatile(""); }

namespace tracesmith::symbolize {
namespace {

// As nvdisasm 13 prints `nvdisasm -c` (two kernels; the second with the
// encodings that -hex or older versions append).
constexpr const char* kListing =
    R"(	.headerflags	@"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90"
	.elftype	@"ET_EXEC"


//--------------------- .text._Z7pcs_hotPji       --------------------------
	.section	.text._Z7pcs_hotPji,"ax",@progbits
	.sectioninfo	@"SHI_REGISTERS=10"
	.align	128
        .global         _Z7pcs_hotPji
        .type           _Z7pcs_hotPji,@function
        .size           _Z7pcs_hotPji,(.L_x_3 - _Z7pcs_hotPji)
        .other          _Z7pcs_hotPji,@"STO_CUDA_ENTRY STV_DEFAULT"
_Z7pcs_hotPji:
.text._Z7pcs_hotPji:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_TID.X ;
.L_x_0:
        /*00b0*/                   IMAD R5, R5, 0x19660d, RZ ;
        /*00c0*/              @!P0 BRA `(.L_x_0) ;
        /*00d0*/                   EXIT ;
//--------------------- .text._Z7pcs_memPKfjiPf   --------------------------
	.section	.text._Z7pcs_memPKfjiPf,"ax",@progbits
_Z7pcs_memPKfjiPf:
        /*0000*/                   MOV R1, c[0x0][0x28] ;                 /* 0x00000a0000017a02 */
                                                                          /* 0x000fe40000000f00 */
        /*0040*/                   LDG.E R4, desc[UR4][R2.64] ;           /* 0x0000000402047981 */
)";

TEST(Sass, ParsesFunctionsAndOffsets) {
  const SassListing l = ParseNvdisasm(kListing);
  ASSERT_EQ(l.size(), 2u);
  const auto& hot = l.at("_Z7pcs_hotPji");
  EXPECT_EQ(hot.size(), 5u);
  EXPECT_EQ(hot.at(0x0), "LDC R1, c[0x0][0x28]");
  EXPECT_EQ(hot.at(0xb0), "IMAD R5, R5, 0x19660d, RZ");
  EXPECT_EQ(hot.at(0xc0), "@!P0 BRA `(.L_x_0)");
  EXPECT_EQ(hot.at(0xd0), "EXIT");
  const auto& mem = l.at("_Z7pcs_memPKfjiPf");
  EXPECT_EQ(mem.size(), 2u);
  EXPECT_EQ(mem.at(0x0), "MOV R1, c[0x0][0x28]");
  EXPECT_EQ(mem.at(0x40), "LDG.E R4, desc[UR4][R2.64]");
}

TEST(Sass, IgnoresWhatItDoesNotKnow) {
  EXPECT_TRUE(ParseNvdisasm("").empty());
  EXPECT_TRUE(ParseNvdisasm("/*0010*/ NOP ;\n").empty());  // no function yet
  EXPECT_TRUE(ParseNvdisasm(".section .data.x\n/*0010*/ NOP ;\n").empty());
  const SassListing l = ParseNvdisasm(
      ".text.f:\n/*zz*/ NOP ;\n/*0010 NOP\n/*123456789*/ NOP\n/*0020*/ ;\n/*0030*/ NOP");
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l.at("f").size(), 1u);
  EXPECT_EQ(l.at("f").at(0x30), "NOP");
}

class AddSassTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cubins_ = dir_ / "t.sbt.cubins";
    mkdir(cubins_.c_str(), 0755);
    std::ofstream(dir_ / "listing.txt") << kListing;
    fake_ = dir_ / "nvdisasm";
    std::ofstream(fake_) << "#!/bin/sh\ncat '" << (dir_ / "listing.txt") << "'\n";
    chmod(fake_.c_str(), 0755);
    std::ofstream(cubins_ + "/" + format::CubinFileName(0xABC)) << "cubin bytes";
    hot_ = t_.strings.Intern("_Z7pcs_hotPji");
    for (uint32_t pc : {0xb0u, 0xc0u, 0x400u}) Line(0xABC, hot_, pc);
    Line(0xDEF, hot_, 0x10);  // a module whose cubin was not kept
    std::ofstream(cubins_ + "/" + format::CubinFileName(0x111)) << "another module";
    Line(0x111, hot_, 0xd0);
  }
  void Line(uint64_t crc, uint32_t fn, uint32_t pc) {
    model::PcLine l{};
    l.pc_offset = pc;
    l.pid = 7;
    l.cubin_crc = crc;
    l.function_id = fn;
    t_.Rows<model::PcLine>().push_back(l);
  }
  testing::TempDir dir_;
  std::string cubins_, fake_;
  model::Trace t_;
  uint32_t hot_ = 0;
};

TEST_F(AddSassTest, GivesSampledInstructionsTheirText) {
  SassOptions o;
  o.nvdisasm = fake_;
  o.jobs = 2;  // two modules listed at once
  auto s = AddSass(&t_, cubins_, o);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->instructions, 5u);
  EXPECT_EQ(s->with_text, 3u);  // 0x400 is not in the listing
  EXPECT_EQ(s->cubins, 2u);
  EXPECT_EQ(s->cubins_missing, 1u);
  const auto& rows = t_.Rows<model::PcSass>();
  ASSERT_EQ(rows.size(), 3u);  // by module CRC, then as sampled
  EXPECT_EQ(rows[0].cubin_crc, 0x111u);
  EXPECT_EQ(t_.strings.Get(rows[0].text_id), "EXIT");
  EXPECT_EQ(rows[1].pc_offset, 0xb0u);
  EXPECT_EQ(t_.strings.Get(rows[1].text_id), "IMAD R5, R5, 0x19660d, RZ");
  EXPECT_EQ(rows[2].pid, 7u);
  EXPECT_EQ(rows[2].cubin_crc, 0xABCu);
  EXPECT_EQ(rows[2].function_id, hot_);
  EXPECT_EQ(t_.strings.Get(rows[2].text_id), "@!P0 BRA `(.L_x_0)");
  // Again: the instructions with text are not asked for twice.
  s = AddSass(&t_, cubins_, o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->instructions, 2u);
  EXPECT_EQ(s->with_text, 0u);
  EXPECT_EQ(t_.Rows<model::PcSass>().size(), 3u);
}

TEST(Sass, FunctionSymbolIndicesOfAnElfFile) {
  const std::set<std::string, std::less<>> hot = {"_Z7pcs_hotPji"};
  const std::vector<uint32_t> at = FunctionSymbolIndices("/proc/self/exe", hot);
  ASSERT_EQ(at.size(), 1u);
  EXPECT_GT(at[0], 0u);
  EXPECT_TRUE(FunctionSymbolIndices("/proc/self/exe", {"_Z9not_therev"}).empty());
  testing::TempDir dir;
  std::ofstream(dir / "text") << "not an ELF file";
  EXPECT_TRUE(FunctionSymbolIndices(dir / "text", hot).empty());
  EXPECT_TRUE(FunctionSymbolIndices(dir / "missing", hot).empty());
}

// A cubin that is ELF: nvdisasm lists the sampled functions alone (-fun and
// their symbol indices); an nvdisasm that refuses -fun lists the whole cubin.
TEST_F(AddSassTest, ListsOnlyTheSampledFunctionsOfAnElfCubin) {
  const std::vector<uint32_t> at = FunctionSymbolIndices("/proc/self/exe", {"_Z7pcs_hotPji"});
  ASSERT_EQ(at.size(), 1u);
  std::filesystem::copy_file("/proc/self/exe", cubins_ + "/" + format::CubinFileName(0xABC),
                             std::filesystem::copy_options::overwrite_existing);
  const std::string args = dir_ / "args.txt";
  for (const bool knows_fun : {true, false}) {
    SCOPED_TRACE(knows_fun ? "nvdisasm with -fun" : "nvdisasm without -fun");
    std::remove(args.c_str());
    t_.Rows<model::PcSass>().clear();
    SassOptions o;
    o.nvdisasm = dir_ / (knows_fun ? "fun" : "nofun");
    std::ofstream(o.nvdisasm) << "#!/bin/sh\necho \"$*\" >> '" << args << "'\n"
                              << (knows_fun ? "" : "case \"$*\" in *-fun*) exit 2;; esac\n")
                              << "cat '" << (dir_ / "listing.txt") << "'\n";
    chmod(o.nvdisasm.c_str(), 0755);
    o.jobs = 1;
    auto s = AddSass(&t_, cubins_, o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->with_text, 3u);
    EXPECT_EQ(s->cubins_failed, 0u) << s->first_error;
    std::ifstream in(args);
    std::vector<std::string> calls;
    for (std::string line; std::getline(in, line);) calls.push_back(line);
    const std::string abc = cubins_ + "/" + format::CubinFileName(0xABC);
    const std::string fun = "-c -fun " + std::to_string(at[0]) + " " + abc;
    if (knows_fun) {
      EXPECT_EQ(std::count(calls.begin(), calls.end(), fun), 1) << ::testing::PrintToString(calls);
      EXPECT_EQ(std::count(calls.begin(), calls.end(), "-c " + abc), 0);
    } else {
      EXPECT_EQ(std::count(calls.begin(), calls.end(), "-c " + abc), 1)
          << ::testing::PrintToString(calls);
    }
    // The module that is not ELF is listed whole.
    const std::string other = "-c " + cubins_ + "/" + format::CubinFileName(0x111);
    EXPECT_EQ(std::count(calls.begin(), calls.end(), other), 1);
  }
}

TEST_F(AddSassTest, NvdisasmThatFailsOrIsMissing) {
  SassOptions o;
  o.nvdisasm = dir_ / "broken";
  std::ofstream(o.nvdisasm) << "#!/bin/sh\nexit 3\n";
  chmod(o.nvdisasm.c_str(), 0755);
  auto s = AddSass(&t_, cubins_, o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->cubins_failed, 2u);
  EXPECT_NE(s->first_error.find("exit status 3"), std::string::npos) << s->first_error;
  EXPECT_TRUE(t_.Rows<model::PcSass>().empty());
  o.nvdisasm = dir_ / "no-such-nvdisasm";
  s = AddSass(&t_, cubins_, o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->cubins_failed, 2u);
  EXPECT_NE(s->first_error.find("cannot run it"), std::string::npos) << s->first_error;
}

TEST(Sass, NothingSampledNothingToDo) {
  model::Trace t;
  SassOptions o;
  o.nvdisasm = "/nonexistent/nvdisasm";
  auto s = AddSass(&t, "/nonexistent", o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->instructions, 0u);
}

}  // namespace
}  // namespace tracesmith::symbolize
