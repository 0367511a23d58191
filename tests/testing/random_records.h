// Random records for round-trip and corruption tests, driven by the field
// descriptors so every field of every kind is exercised.
#pragma once

#include <cstring>
#include <random>

#include "tracesmith/model/trace.h"

namespace tracesmith::testing {

inline uint64_t RandomBits(std::mt19937_64& rng, const model::FieldDesc& f) {
  // Mix small values (the common case the codec optimises) with extremes.
  uint64_t v;
  switch (rng() % 4) {
    case 0:
      v = rng() % 4;
      break;
    case 1:
      v = rng() % 100000;
      break;
    default:
      v = rng();
      break;
  }
  if (f.type == model::FieldType::kF64) {
    double d = static_cast<double>(static_cast<int64_t>(rng() % 2000001) - 1000000) / 7.0;
    std::memcpy(&v, &d, 8);
  }
  return v;
}

template <typename T>
T RandomRecord(std::mt19937_64& rng) {
  T row{};
  for (size_t i = 0; i < model::RecordTraits<T>::kNumFields; ++i) {
    const auto& f = model::RecordTraits<T>::kAllFields[i];
    model::StoreField(&row, f, RandomBits(rng, f));
  }
  return row;
}

// A trace with `rows_per_kind` random rows of every kind (config fields drawn
// from a small pool so dictionaries have repeats) and some strings.
inline model::Trace RandomTrace(uint64_t seed, size_t rows_per_kind) {
  std::mt19937_64 rng(seed);
  model::Trace t;
  for (int i = 0; i < 20; ++i)
    t.strings.Intern("string_" + std::to_string(rng() % 1000) + "_" + std::to_string(i));
  model::ForEachRecordType([&]<typename T>() {
    std::vector<T> pool;
    for (int i = 0; i < 5; ++i) pool.push_back(RandomRecord<T>(rng));
    for (size_t i = 0; i < rows_per_kind; ++i) {
      T row = RandomRecord<T>(rng);
      row.SetConfig(pool[rng() % pool.size()].GetConfig());
      t.Rows<T>().push_back(row);
    }
  });
  return t;
}

}  // namespace tracesmith::testing
