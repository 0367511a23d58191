// Interned strings of a trace. Id 0 is the empty string. Ids are dense and
// stable: the writer streams them in id order, the reader puts them back at
// the same ids (a recovered trace may have gaps, which read as "").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tracesmith::model {

class StringTable {
 public:
  StringTable();

  // Returns the id of `s`, adding it if new.
  uint32_t Intern(std::string_view s);
  // The string with this id; "" for 0, unknown or missing ids.
  std::string_view Get(uint32_t id) const {
    return id < strings_.size() ? std::string_view(strings_[id]) : std::string_view();
  }
  bool Has(uint32_t id) const { return id < present_.size() && present_[id]; }
  // Places `s` at `id` (reader side). Grows the table; later Intern()s dedup against it.
  void Set(uint32_t id, std::string_view s);
  // Number of ids (including 0 and any gaps).
  uint32_t size() const { return static_cast<uint32_t>(strings_.size()); }

 private:
  std::vector<std::string> strings_;
  std::vector<bool> present_;
  std::unordered_map<std::string, uint32_t> index_;
};

}  // namespace tracesmith::model
