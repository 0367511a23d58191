// tracesmith.load's reading (read_columns.cc): an SBT file's records as NumPy columns.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

namespace tracesmith::cluster {
class RunSource;
}

namespace tracesmith::python {

// Column dicts of record kinds, by label, with the strings and the damage; `lazy`: the event
// kinds of `kinds` only, the others left "pending" for ReadKinds.
pybind11::dict ReadColumns(const std::string& path, bool strict,
                           const std::vector<std::string>& kinds, bool lazy);
// The pending event kinds of a trace ReadColumns(lazy) loaded, from the same file (`identity`).
pybind11::dict ReadKinds(const std::string& path, const std::vector<std::string>& kinds,
                         bool strict, uint64_t identity, const std::string& what);
// The same over a run of several files merged on the fly (cluster::RunSource, no temporary
// file): the columns of the file MergeTraces would write; `what`: the run in messages.
pybind11::dict ReadRunColumns(cluster::RunSource& run, const std::string& what, bool strict,
                              const std::vector<std::string>& kinds, bool lazy);
pybind11::dict ReadRunKinds(cluster::RunSource& run, const std::vector<std::string>& kinds,
                            uint64_t identity, const std::string& what);

}  // namespace tracesmith::python
