"""The package's names of the record kinds follow the C++ record list.

model/records.h's TS_RECORD_TABLE is the one list of record kinds; the
extension reports it as a trace's `kinds` (every label, in its order, events
first). The Python API's attribute names (`kernels`, `stack_nodes`, ...) and
EVENT_KINDS are a naming table of their own: a kind added to the C++ list
without a name here fails this test instead of going unnoticed.
"""

import tracesmith
from tracesmith import _trace


def test_kind_names_follow_the_record_list(mlp):
    t = tracesmith.load(mlp)
    assert list(_trace.KINDS.values()) == t.kinds
    # Field 0 of every event kind is its timestamp (records.h); of no metadata kind.
    events = [k for k in t.kinds if t.table(k).fields[0] in ("start_ns", "ts_ns")]
    assert list(_trace.EVENT_KINDS) == events == t.kinds[:len(events)]
