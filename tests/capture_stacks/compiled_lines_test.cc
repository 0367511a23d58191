// torch.compile's model lines (issue #41 item 1): torch's structured log and
// Inductor's output code as PyTorch 2.11 writes them (gpu/probes/
// inductor_lines.py, H200, 2026-11-30), made up here, read into trace entries.
#include "tracesmith/symbolize/compiled_lines.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "tracesmith/model/stack_builder.h"

namespace tracesmith::symbolize {
namespace {

namespace fs = std::filesystem;

// Output code as Inductor writes it with INDUCTOR_PROVENANCE=1 (line numbers
// in the comments on the right are the file's).
const char kCode[] =
    "def call(self, args):\n"                                                                // 1
    "    # [Provenance debug handles] triton_per_fused_native_layer_norm_0:1\n"              // 2
    "    stream0 = get_raw_stream(0)\n"                                                      // 3
    "    triton_per_fused_native_layer_norm_0.run(buf3, primals_3, 1024, stream=stream0)\n"  // 4
    "    buf5 = empty_strided_cuda((1024, 768), (768, 1), torch.float32)\n"                  // 5
    "    # [Provenance debug handles] extern_kernels.addmm:2\n"                              // 6
    "    extern_kernels.addmm(primals_5, reinterpret_tensor(buf4, (1024, 256), (256, 1), 0),\n"  // 7
    "        alpha=1, beta=1, out=buf5)\n"                                           // 8
    "    del buf4\n"                                                                 // 9
    "    # [Provenance debug handles] triton_poi_fused_gelu_view_3:8\n"              // 10
    "    triton_poi_fused_gelu_view_3.run(buf12, buf13, 1048576, stream=stream0)\n"  // 11
    "    return (buf13, )\n";                                                        // 12

const char kStacks[] =
    "{\"triton_per_fused_native_layer_norm_0:1\": [\"  File \\\"/m/block.py\\\", line 13, in "
    "forward\\n    h = s.ln(x)\\n\"], \"extern_kernels.addmm:2\": [\"  File \\\"/m/model.py\\\", "
    "line 30, in forward\\n    x = self.block(x)\\n  File \\\"/m/block.py\\\", line 14, in "
    "forward\\n\"], \"triton_poi_fused_gelu_view_3:8\": [\"  File \\\"/m/block.py\\\", line 17, "
    "in forward\\n\", \"  File \\\"/m/block.py\\\", line 16, in forward\\n\"]}";

// A structured-log entry: the glog prefix, the JSON, the payload lines each
// after a tab.
std::string Entry(const std::string& meta, const std::string& payload) {
  std::string out = "V1130 05:37:01.123456 1234 torch/_logging/structured.py:28] " + meta + "\n";
  size_t at = 0;
  while (at < payload.size()) {
    size_t eol = payload.find('\n', at);
    if (eol == std::string::npos) eol = payload.size();
    out += "\t" + payload.substr(at, eol - at) + "\n";
    at = eol + 1;
  }
  return out;
}

TEST(CompiledLines, StackTracesAndHandleLines) {
  const model::ModelStack st = ParseStackTrace(
      "Gradient addition node due to multiple use of tensor around:\n"
      "  File \"/m/model.py\", line 30, in forward\n    x = self.block(x)\n"
      "  File \"/m/block.py\", line 17, in forward\n    return x\n  File \"junk\n"
      "  File \"\", line 0, in nowhere\n");  // no file: skipped (found by the fuzzer)
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0], (model::ModelFrame{"forward", "/m/model.py", 30}));
  EXPECT_EQ(st[1], (model::ModelFrame{"forward", "/m/block.py", 17}));
  const std::map<uint32_t, std::string> h = HandleLines(kCode);
  EXPECT_EQ(h.at(3), "triton_per_fused_native_layer_norm_0:1");
  EXPECT_EQ(h.at(4), "triton_per_fused_native_layer_norm_0:1");
  EXPECT_FALSE(h.count(5));  // after the call: no handle
  EXPECT_EQ(h.at(7), "extern_kernels.addmm:2");
  EXPECT_EQ(h.at(8), "extern_kernels.addmm:2");  // the call's continuation
  EXPECT_FALSE(h.count(9));
  EXPECT_EQ(h.at(11), "triton_poi_fused_gelu_view_3:8");
  EXPECT_FALSE(h.count(12));
  EXPECT_FALSE(h.count(1));
  // A comment whose call never comes maps nothing.
  EXPECT_TRUE(
      HandleLines("    # [Provenance debug handles] k:1\n    buf0 = x\n\n    del buf0\n").empty());
}

TEST(CompiledLines, LogToTraceEntries) {
  const fs::path dir = fs::temp_directory_path() / ("ts_torch_trace_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string gen = (dir / "cabc.py").string();
  const std::string other = "/tmp/torchinductor_u/zz/czz.py";
  {
    std::ofstream log(dir / "dedicated_log_torch_trace_rank_0.log");
    log << Entry("{\"dynamo_start\": {\"stack\": []}, \"frame_id\": 0}", "")
        // another graph first, whose handles the table below does not name
        << Entry("{\"inductor_output_code\": {\"filename\": \"" + other + "\"}}",
                 "def call(args):\n    # [Provenance debug handles] triton_poi_fused_add_0:1\n"
                 "    triton_poi_fused_add_0.run(buf0, stream=stream0)\n")
        << Entry("{\"inductor_output_code\": {\"filename\": \"" + gen + "\"}, \"frame_id\": 0}",
                 kCode)
        << "not a log line\n"
        << Entry(
               "{\"artifact\": {\"name\": \"inductor_provenance_tracking_kernel_stack_traces\", "
               "\"encoding\": \"json\"}, \"frame_id\": 0}",
               kStacks)
        << Entry(
               "{\"artifact\": {\"name\": \"inductor_provenance_tracking_kernel_stack_traces\","
               " \"encoding\": \"json\"}}",
               "{broken")
        // The nodes: the layer norm's kernel from two pre-grad nodes, the addmm's none.
        << Entry("{\"artifact\": {\"name\": \"inductor_provenance_tracking_node_mappings\"}}",
                 "{\"cppCodeToPost\": {\"triton_per_fused_native_layer_norm_0:1\": "
                 "[\"var_mean\", \"add_2\", \"mul\"], \"extern_kernels.addmm:2\": [\"addmm\"]}, "
                 "\"postToPre\": {\"var_mean\": [\"x_1\"], \"add_2\": [\"x_1\", \"ln\"], "
                 "\"mul\": [\"ln\"]}, \"version\": \"2.0\"}");
  }
  auto graphs = ReadTorchTrace(dir.string());
  ASSERT_TRUE(graphs.ok()) << graphs.status().ToString();
  ASSERT_EQ(graphs->size(), 2u);
  EXPECT_TRUE((*graphs)[0].stacks.empty());  // no table names its handle
  EXPECT_EQ((*graphs)[1].file, gen);
  EXPECT_EQ((*graphs)[1].stacks.size(), 3u);
  EXPECT_EQ((*graphs)[1].nodes.at("triton_per_fused_native_layer_norm_0:1"),
            (std::vector<std::string>{"x_1", "ln"}));
  EXPECT_TRUE((*graphs)[1].nodes.at("extern_kernels.addmm:2").empty());
  EXPECT_FALSE(ReadTorchTrace((dir / "none").string()).ok());

  // A trace whose stacks hold lines 4, 7, 11 and 5 of the generated file (read from
  // disk when it is there: written now) and a line of a file no graph names.
  { std::ofstream(gen) << kCode; }
  model::Trace t;
  model::StackBuilder sb(&t);
  auto py = [&](const std::string& file, uint32_t line) {
    model::Frame f;
    f.kind = model::kFramePython;
    f.function_id = t.strings.Intern("Runner.call");
    f.file_id = t.strings.Intern(file);
    f.line = line;
    return sb.InternFrame(f);
  };
  for (uint32_t line : {4u, 7u, 11u, 5u}) py(gen, line);
  py("/home/u/train.py", 4);
  const CompiledLinesStats stats = AddCompiledLines(&t, *graphs);
  EXPECT_EQ(stats.generated_lines, 4u);
  EXPECT_EQ(stats.with_model, 3u);
  std::map<std::string, model::CompiledLine> got;
  for (const model::MetadataEntry& m : t.Rows<model::MetadataEntry>())
    got[std::string(t.strings.Get(m.key_id))] =
        model::DecodeCompiledLine(t.strings.Get(m.value_id));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got.at(model::CompiledLineKey(gen, 4)),
            (model::CompiledLine{{{{"forward", "/m/block.py", 13}}}, {"x_1", "ln"}}));
  EXPECT_EQ(got.at(model::CompiledLineKey(gen, 7)).stacks,
            (std::vector<model::ModelStack>{
                {{"forward", "/m/model.py", 30}, {"forward", "/m/block.py", 14}}}));
  EXPECT_EQ(got.at(model::CompiledLineKey(gen, 11)).stacks.size(), 2u);  // fused from two lines
  // Once there, not added again.
  AddCompiledLines(&t, *graphs);
  EXPECT_EQ(t.Rows<model::MetadataEntry>().size(), 3u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tracesmith::symbolize
