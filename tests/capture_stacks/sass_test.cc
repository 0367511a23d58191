// SASS text for sampled GPU instructions (symbolize/sass.h): nvdisasm's
// listing parsed per function and offset (with and without encoding
// comments, labels and predicates), and AddSass end to end with a stand-in
// nvdisasm (a script printing a listing), a missing cubin, a failing and a
// missing nvdisasm, and instructions that already have text.
#include "tracesmith/symbolize/sass.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "testing/temp_dir.h"
#include "tracesmith/format/job_file_names.h"

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
