// The dummy record type of record_list_test.cc, added here and nowhere else.
//
// record_list_test compiles the model and format libraries' sources, the
// capture's RowSink and the CSV exporter with TS_TEST_EXTRA_RECORDS_HEADER
// naming this file, so model/records.h's table (TS_RECORD_TABLE) gains one
// event row and every list made from it gains the type: TableKind, the
// struct and its RecordTraits, RecordTypes / EventTypes, ForEachRecordType,
// Trace's tables, RowSink::Append, EventSink::On and the TimeOrderer's
// queues. Kind 63: the last event number below the metadata kinds (64),
// unused by the real list.
#pragma once

// clang-format off
#define TS_DUMMY_FIELDS(X)                       \
  X(uint64_t, start_ns, kTime)                   \
  X(uint64_t, end_ns, kRelStart)                 \
  X(uint64_t, payload, kDelta)                   \
  X(double, level, kRaw)                         \
  X(uint32_t, pid, kConfig)                      \
  X(uint32_t, lane, kConfig)                     \
  X(uint32_t, name_id, kConfig)
#define TS_TEST_EXTRA_EVENT_RECORDS(EVENT) EVENT(DummyEvent, kDummy, 63, "dummy", TS_DUMMY_FIELDS)
// clang-format on
