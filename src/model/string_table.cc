#include "tracesmith/model/string_table.h"

namespace tracesmith::model {

StringTable::StringTable() : strings_(1), present_(1, true) { index_.emplace(std::string(), 0); }

uint32_t StringTable::Intern(std::string_view s) {
  auto it = index_.find(std::string(s));
  if (it != index_.end()) return it->second;
  auto id = static_cast<uint32_t>(strings_.size());
  strings_.emplace_back(s);
  present_.push_back(true);
  index_.emplace(std::string(s), id);
  return id;
}

void StringTable::Set(uint32_t id, std::string_view s) {
  if (id == 0) return;
  if (id >= strings_.size()) {
    strings_.resize(id + 1);
    present_.resize(id + 1, false);
  }
  strings_[id] = std::string(s);
  present_[id] = true;
  index_.emplace(std::string(s), id);
}

}  // namespace tracesmith::model
