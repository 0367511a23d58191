// Every id field of every record kind has a rule for merging, and a field
// without one is named.
#include "tracesmith/cluster/id_fields.h"

#include <gtest/gtest.h>

#include "tracesmith/model/records.h"

namespace tracesmith::cluster {
namespace {

TEST(IdFields, EveryIdFieldOfEveryRecordKindHasARule) {
  EXPECT_EQ(UnclassifiedRecordIdFields(), std::vector<std::string>{});
  EXPECT_EQ(ClassifyField("name_id"), IdSpace::kString);
  EXPECT_EQ(ClassifyField("stack_id"), IdSpace::kStackNode);
  EXPECT_EQ(ClassifyField("pid"), IdSpace::kPid);
  EXPECT_EQ(ClassifyField("correlation_id"), IdSpace::kPerProcess);
  EXPECT_EQ(ClassifyField("bytes"), IdSpace::kValue);
}

TEST(IdFields, ANewIdFieldWithoutARuleIsNamed) {
  // A kind as records.h would define it, with a field added later.
  struct Widget {
    uint64_t ts_ns;
    uint32_t pid, name_id, widget_id, owner_pid;
  };
  const model::FieldDesc fields[] = {
      {"ts_ns", offsetof(Widget, ts_ns), model::FieldType::kU64, model::FieldRole::kTime},
      {"pid", offsetof(Widget, pid), model::FieldType::kU32, model::FieldRole::kConfig},
      {"name_id", offsetof(Widget, name_id), model::FieldType::kU32, model::FieldRole::kConfig},
      {"widget_id", offsetof(Widget, widget_id), model::FieldType::kU32, model::FieldRole::kDelta},
      {"owner_pid", offsetof(Widget, owner_pid), model::FieldType::kU32,
       model::FieldRole::kConfig}};
  EXPECT_EQ(UnclassifiedIdFields("widget", fields),
            (std::vector<std::string>{"widget.widget_id", "widget.owner_pid"}));
  // And with the rules of a version that forgot one, the real kinds fail.
  std::vector<IdFieldRule> rules;
  for (const IdFieldRule& r : IdFieldRules())
    if (std::string_view(r.field) != "demangled_id") rules.push_back(r);
  EXPECT_EQ(UnclassifiedIdFields("kernel",
                                 std::span(model::RecordTraits<model::KernelEvent>::kAllFields,
                                           model::RecordTraits<model::KernelEvent>::kNumFields),
                                 rules),
            std::vector<std::string>{"kernel.demangled_id"});
}

}  // namespace
}  // namespace tracesmith::cluster
