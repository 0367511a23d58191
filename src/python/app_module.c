/* tracesmith._app: the fast path of tracesmith.counter / instant / range (the
 * program's own events on the capture's timeline), written against the
 * CPython C API so that a call costs one C function call (METH_FASTCALL),
 * a dict lookup of the name's id and a write into the thread's ring of the
 * capture library (include/tracesmith/app/app.h, in C: this file is also the
 * header's C user). When nothing captures a call checks its arguments and
 * returns.
 *
 * The capture library is the one app.h finds (dlsym(RTLD_DEFAULT), then
 * $CUDA_INJECTION64_PATH under `tracesmith profile`, then
 * $TRACESMITH_INJECT_LIB); tracesmith.profile() passes the one it loaded to
 * attach(). Names' ids are cached in a dict of at most kMaxCachedNames
 * entries (ids are the library's, valid for the process's life). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "tracesmith/app/app.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Twice the library's cap on distinct names (app_events.h): past it a name
 * is looked up in the library on every call, and the dict stops growing. */
#define kMaxCachedNames 20000

static const TracesmithAppApi* g_api;
static PyObject* g_names;    /* str -> int id */
static PyObject* g_dumps;    /* json.dumps, imported on first use */
static PyObject* g_decorate; /* tracesmith._app_api._decorate(range, func) */

static int Capturing(void) { return g_api && __atomic_load_n(g_api->capturing, __ATOMIC_RELAXED); }

/* The TypeError of a name that is not a str (NULL, to return). */
static PyObject* NotAName(PyObject* name, const char* what) {
  PyErr_Format(PyExc_TypeError, "tracesmith.%s: the name must be a str, not %.100s", what,
               Py_TYPE(name)->tp_name);
  return NULL;
}

/* The library's id of `name` (a str), cached; 0 when it was not kept. -1 on error. */
static long NameId(PyObject* name, const char* what) {
  if (!PyUnicode_Check(name)) {
    NotAName(name, what);
    return -1;
  }
  PyObject* cached = PyDict_GetItemWithError(g_names, name);
  if (cached) return PyLong_AsLong(cached);
  if (PyErr_Occurred()) return -1;
  Py_ssize_t len = 0;
  const char* text = PyUnicode_AsUTF8AndSize(name, &len);
  if (!text) return -1;
  uint32_t id = g_api->intern(text, (size_t)len, 0);
  if (id && PyDict_GET_SIZE(g_names) < kMaxCachedNames) {
    PyObject* v = PyLong_FromUnsignedLong(id);
    if (!v || PyDict_SetItem(g_names, name, v) < 0) {
      Py_XDECREF(v);
      return -1;
    }
    Py_DECREF(v);
  }
  return (long)id;
}

/* ---- arguments as JSON, without json.dumps for the common values ----------- */

typedef struct {
  char* p;
  Py_ssize_t n, cap;
} JsonOut;

static int Put(JsonOut* o, const char* s, Py_ssize_t len) {
  if (o->n + len > o->cap) return 0;
  memcpy(o->p + o->n, s, (size_t)len);
  o->n += len;
  return 1;
}

/* A str as json.dumps writes it (ensure_ascii: only ' '..'~' as they are). */
static int PutStr(JsonOut* o, PyObject* str) {
  static const char kHex[] = "0123456789abcdef";
  const int kind = PyUnicode_KIND(str);
  const void* data = PyUnicode_DATA(str);
  const Py_ssize_t len = PyUnicode_GET_LENGTH(str);
  if (!Put(o, "\"", 1)) return 0;
  for (Py_ssize_t i = 0; i < len; ++i) {
    Py_UCS4 c = PyUnicode_READ(kind, data, i);
    char e[12];
    Py_ssize_t k = 0;
    if (c == '"' || c == '\\') {
      e[k++] = '\\', e[k++] = (char)c;
    } else if (c >= ' ' && c <= '~') {
      e[k++] = (char)c;
    } else if (c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f') {
      e[k++] = '\\';
      e[k++] = c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : c == '\b' ? 'b' : 'f';
    } else {
      Py_UCS4 units[2] = {c, 0};
      int count = 1;
      if (c > 0xffff) {  // a surrogate pair, as json.dumps writes it
        c -= 0x10000;
        units[0] = 0xd800 | (c >> 10), units[1] = 0xdc00 | (c & 0x3ff), count = 2;
      }
      for (int u = 0; u < count; ++u) {
        e[k++] = '\\', e[k++] = 'u';
        for (int shift = 12; shift >= 0; shift -= 4) e[k++] = kHex[(units[u] >> shift) & 0xf];
      }
    }
    if (!Put(o, e, k)) return 0;
  }
  return Put(o, "\"", 1);
}

/* kwargs as json.dumps(kwargs, default=str) writes them, when every value is
 * a str, int, float (finite), bool or None and the text fits; else 0 (then
 * json.dumps). Returns the length. */
static Py_ssize_t FastJson(PyObject* kwargs, char* buf, Py_ssize_t cap) {
  JsonOut o = {buf, 0, cap};
  Py_ssize_t pos = 0;
  PyObject *k, *v;
  if (!Put(&o, "{", 1)) return 0;
  for (int first = 1; PyDict_Next(kwargs, &pos, &k, &v); first = 0) {
    if ((!first && !Put(&o, ", ", 2)) || !PyUnicode_Check(k) || !PutStr(&o, k) || !Put(&o, ": ", 2))
      return 0;
    char num[32];
    if (v == Py_None) {
      if (!Put(&o, "null", 4)) return 0;
    } else if (v == Py_True || v == Py_False) {
      if (!Put(&o, v == Py_True ? "true" : "false", v == Py_True ? 4 : 5)) return 0;
    } else if (PyLong_CheckExact(v)) {
      int overflow = 0;
      long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
      if (overflow || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
      }
      if (!Put(&o, num, snprintf(num, sizeof num, "%lld", x))) return 0;
    } else if (PyFloat_CheckExact(v)) {
      const double d = PyFloat_AS_DOUBLE(v);
      if (!isfinite(d)) return 0;  // json.dumps writes NaN / Infinity
      char* r = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
      if (!r) {
        PyErr_Clear();
        return 0;
      }
      const int ok = Put(&o, r, (Py_ssize_t)strlen(r));
      PyMem_Free(r);
      if (!ok) return 0;
    } else if (PyUnicode_CheckExact(v)) {
      if (!PutStr(&o, v)) return 0;
    } else {
      return 0;
    }
  }
  return Put(&o, "}", 1) ? o.n : 0;
}

/* The id of kwargs as one JSON object's text (0: none or not kept); -1 on error. */
static long ArgsId(PyObject* kwargs) {
  if (!kwargs || PyDict_GET_SIZE(kwargs) == 0) return 0;
  char buf[1024];
  const Py_ssize_t fast = FastJson(kwargs, buf, (Py_ssize_t)sizeof buf);
  if (fast > 0) return (long)g_api->intern(buf, (size_t)fast, 1);
  if (!g_dumps) {
    PyObject* json = PyImport_ImportModule("json");
    if (!json) return -1;
    g_dumps = PyObject_GetAttrString(json, "dumps");
    Py_DECREF(json);
    if (!g_dumps) return -1;
  }
  PyObject* call_kw = Py_BuildValue("{s:O}", "default", (PyObject*)&PyUnicode_Type);
  if (!call_kw) return -1;
  PyObject* args = PyTuple_Pack(1, kwargs);
  PyObject* text = args ? PyObject_Call(g_dumps, args, call_kw) : NULL;
  Py_XDECREF(args);
  Py_DECREF(call_kw);
  if (!text) return -1;
  Py_ssize_t len = 0;
  const char* s = PyUnicode_AsUTF8AndSize(text, &len);
  long id = s ? (long)g_api->intern(s, (size_t)len, 1) : -1;
  Py_DECREF(text);
  return id;
}

static PyObject* Counter(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "tracesmith.counter(name, value) takes 2 arguments");
    return NULL;
  }
  double value = PyFloat_AsDouble(args[1]);
  if (value == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError,
                 "tracesmith.counter(%R, ...): the value must be a real number, "
                 "not %.100s",
                 args[0], Py_TYPE(args[1])->tp_name);
    return NULL;
  }
  if (!Capturing()) {
    if (!PyUnicode_Check(args[0])) return NotAName(args[0], "counter");
    Py_RETURN_NONE;
  }
  long id = NameId(args[0], "counter");
  if (id < 0) return NULL;
  g_api->counter((uint32_t)id, value);
  Py_RETURN_NONE;
}

static PyObject* Instant(PyObject* self, PyObject* args, PyObject* kwargs) {
  (void)self;
  if (PyTuple_GET_SIZE(args) != 1) {
    PyErr_SetString(PyExc_TypeError,
                    "tracesmith.instant(name, **args) takes 1 positional argument");
    return NULL;
  }
  PyObject* name = PyTuple_GET_ITEM(args, 0);
  if (!Capturing()) {
    if (!PyUnicode_Check(name)) return NotAName(name, "instant");
    Py_RETURN_NONE;
  }
  long id = NameId(name, "instant");
  if (id < 0) return NULL;
  long args_id = ArgsId(kwargs);
  if (args_id < 0) return NULL;
  g_api->instant((uint32_t)id, (uint32_t)args_id);
  Py_RETURN_NONE;
}

/* ---- range: a context manager, and a decorator ---------------------------- */

/* The fast path of `with tracesmith.range("eval"):` (docs/benchmarks.md):
 *  - range("eval") is a vectorcall of the type (no argument tuple, no keyword
 *    dict unless there are keywords) and takes a finished object from a free
 *    list instead of the allocator;
 *  - the `with` statement's look-ups of __enter__ and __exit__ return the
 *    object itself (RangeMethodType below, a descriptor that binds to nothing
 *    new) rather than two new bound-method objects, and the object's own
 *    vectorcall does the work: no arguments is __enter__, three is __exit__,
 *    one callable is the decorator (range("x")(func));
 *  - __exit__ finds the name's id in a table keyed by the str object itself
 *    (a literal's str is the same object at every call of its call site)
 *    before the dict of all names. */

typedef struct {
  PyObject_HEAD vectorcallfunc vectorcall; /* RangeCall */
  PyObject* name;
  PyObject* kwargs; /* NULL: none */
  uint64_t start_ns;
} RangeObject;

static PyTypeObject RangeType;

/* 256 slots, keyed by the str object's address; a slot holds a reference to
 * its str, so that address is not reused by another str while it is there. */
#define kNameSlots 256
static struct {
  PyObject* name;
  uint32_t id;
} g_name_slots[kNameSlots];

static void ClearNameSlots(void) {
  for (int i = 0; i < kNameSlots; ++i) Py_CLEAR(g_name_slots[i].name);
}

static long RangeNameId(PyObject* name) {
  const size_t slot = ((uintptr_t)name >> 4) % kNameSlots;
  if (g_name_slots[slot].name == name) return g_name_slots[slot].id;
  long id = NameId(name, "range");
  if (id > 0) {
    Py_INCREF(name);
    Py_XSETREF(g_name_slots[slot].name, name);
    g_name_slots[slot].id = (uint32_t)id;
  }
  return id;
}

/* Finished objects kept for the next range(...) (the GIL guards the list). */
#define kRangeFreeMax 64
static RangeObject* g_range_free[kRangeFreeMax];
static int g_range_nfree;

static PyObject* RangeCall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames);

static void RangeDealloc(RangeObject* r) {
  Py_CLEAR(r->name);
  Py_CLEAR(r->kwargs);
  if (g_range_nfree < kRangeFreeMax) {
    g_range_free[g_range_nfree++] = r;
    return;
  }
  Py_TYPE(r)->tp_free((PyObject*)r);
}

/* A new range of `name` (a str) with its keyword arguments (NULL: none; copied). */
static PyObject* RangeMake(PyObject* name, PyObject* kwargs) {
  RangeObject* r;
  if (g_range_nfree > 0) {
    r = g_range_free[--g_range_nfree];
    PyObject_Init((PyObject*)r, &RangeType);
  } else {
    r = PyObject_New(RangeObject, &RangeType);
    if (!r) return NULL;
  }
  r->vectorcall = RangeCall;
  Py_INCREF(name);
  r->name = name;
  r->kwargs = NULL;
  r->start_ns = 0;
  if (kwargs && PyDict_GET_SIZE(kwargs)) {
    r->kwargs = PyDict_Copy(kwargs);
    if (!r->kwargs) {
      Py_DECREF(r);
      return NULL;
    }
  }
  return (PyObject*)r;
}

/* tracesmith.range(name, **args) and @tracesmith.range (a function, no name). */
static PyObject* RangeNewWith(PyObject* name, PyObject* kwargs) {
  if (PyUnicode_Check(name)) return RangeMake(name, kwargs);
  if (PyCallable_Check(name) && g_decorate && !kwargs) /* @tracesmith.range without a name */
    return PyObject_CallFunctionObjArgs(g_decorate, Py_None, name, NULL);
  return NotAName(name, "range");
}

static PyObject* RangeTypeCall(PyObject* type, PyObject* const* args, size_t nargsf,
                               PyObject* kwnames) {
  (void)type;
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (nargs != 1) {
    PyErr_SetString(PyExc_TypeError, "tracesmith.range(name, **args) takes 1 positional argument");
    return NULL;
  }
  if (!kwnames || PyTuple_GET_SIZE(kwnames) == 0) return RangeNewWith(args[0], NULL);
  PyObject* kwargs = PyDict_New();
  if (!kwargs) return NULL;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); ++i)
    if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) {
      Py_DECREF(kwargs);
      return NULL;
    }
  PyObject* r = RangeNewWith(args[0], kwargs);
  Py_DECREF(kwargs);
  return r;
}

/* tp_new, for callers that do not use vectorcall (type.__call__ with a tuple). */
static PyObject* RangeNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  (void)type;
  if (PyTuple_GET_SIZE(args) != 1) {
    PyErr_SetString(PyExc_TypeError, "tracesmith.range(name, **args) takes 1 positional argument");
    return NULL;
  }
  return RangeNewWith(PyTuple_GET_ITEM(args, 0), kwargs && PyDict_GET_SIZE(kwargs) ? kwargs : NULL);
}

static PyObject* RangeEnter(RangeObject* r) {
  r->start_ns = Capturing() ? g_api->now() : 0;
  Py_INCREF(r);
  return (PyObject*)r;
}

static PyObject* RangeExit(RangeObject* r) {
  const uint64_t start = r->start_ns;
  r->start_ns = 0;
  if (!start || !Capturing()) Py_RETURN_FALSE;
  long id = RangeNameId(r->name);
  if (id < 0) return NULL;
  long args_id = ArgsId(r->kwargs);
  if (args_id < 0) return NULL;
  g_api->range((uint32_t)id, (uint32_t)args_id, start);
  Py_RETURN_FALSE;
}

/* range("x")(func): the decorator form, made in Python (_app_api._decorate). */
static PyObject* RangeDecorate(RangeObject* r, PyObject* func) {
  if (!PyCallable_Check(func) || !g_decorate) {
    PyErr_SetString(PyExc_TypeError, "tracesmith.range(name) decorates one function");
    return NULL;
  }
  return PyObject_CallFunctionObjArgs(g_decorate, (PyObject*)r, func, NULL);
}

/* The object's vectorcall: r() enters, r(exc_type, exc, tb) exits, r(func) decorates. */
static PyObject* RangeCall(PyObject* self, PyObject* const* args, size_t nargsf,
                           PyObject* kwnames) {
  RangeObject* r = (RangeObject*)self;
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (!kwnames) {
    if (nargs == 3) return RangeExit(r);
    if (nargs == 0) return RangeEnter(r);
    if (nargs == 1) return RangeDecorate(r, args[0]);
  }
  PyErr_SetString(PyExc_TypeError, "tracesmith.range(name) decorates one function");
  return NULL;
}

/* __enter__ and __exit__ in the type's dict. Looked up on a range (the `with`
 * statement, r.__exit__) they are the range itself: its call enters or exits
 * by its number of arguments. Looked up on the type (contextlib.ExitStack:
 * type(cm).__enter__(cm)) they are themselves, called with the range first. */
typedef struct {
  PyObject_HEAD vectorcallfunc vectorcall; /* RangeMethodCall */
  int exit;
} RangeMethodObject;

static PyObject* RangeMethodGet(PyObject* self, PyObject* obj, PyObject* type) {
  (void)type;
  PyObject* r = obj && obj != Py_None && Py_TYPE(obj) == &RangeType ? obj : self;
  Py_INCREF(r);
  return r;
}

static PyObject* RangeMethodCall(PyObject* self, PyObject* const* args, size_t nargsf,
                                 PyObject* kwnames) {
  const int exit = ((RangeMethodObject*)self)->exit;
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (kwnames || nargs != (exit ? 4 : 1) || Py_TYPE(args[0]) != &RangeType) {
    PyErr_Format(PyExc_TypeError, "tracesmith.range.%s takes a range%s",
                 exit ? "__exit__" : "__enter__", exit ? " and 3 arguments" : "");
    return NULL;
  }
  return exit ? RangeExit((RangeObject*)args[0]) : RangeEnter((RangeObject*)args[0]);
}

static PyTypeObject RangeMethodType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracesmith._app.RangeMethod",
    .tp_basicsize = sizeof(RangeMethodObject),
    .tp_vectorcall_offset = offsetof(RangeMethodObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_descr_get = RangeMethodGet,
};

static RangeMethodObject g_enter = {PyObject_HEAD_INIT(&RangeMethodType) RangeMethodCall, 0};
static RangeMethodObject g_exit = {PyObject_HEAD_INIT(&RangeMethodType) RangeMethodCall, 1};

static PyObject* RangeGetName(RangeObject* r, void* unused) {
  (void)unused;
  Py_INCREF(r->name);
  return r->name;
}
static PyObject* RangeGetArgs(RangeObject* r, void* unused) {
  (void)unused;
  return r->kwargs ? PyDict_Copy(r->kwargs) : PyDict_New();
}

static PyGetSetDef kRangeGetSet[] = {{"name", (getter)RangeGetName, NULL, NULL, NULL},
                                     {"args", (getter)RangeGetArgs, NULL, NULL, NULL},
                                     {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject RangeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracesmith.range",
    .tp_basicsize = sizeof(RangeObject),
    .tp_dealloc = (destructor)RangeDealloc,
    .tp_vectorcall_offset = offsetof(RangeObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc =
        "with tracesmith.range(name, **args): ... -- a range on this thread's timeline;\n"
        "@tracesmith.range(name) decorates a function (each call a range).",
    .tp_getset = kRangeGetSet,
    .tp_new = RangeNew,
    .tp_vectorcall = RangeTypeCall,
};

/* Puts __enter__ and __exit__ in the type's dict (after PyType_Ready). */
static int RangeAddMethods(void) {
  if (PyType_Ready(&RangeMethodType) < 0) return -1;
  if (PyDict_SetItemString(RangeType.tp_dict, "__enter__", (PyObject*)&g_enter) < 0 ||
      PyDict_SetItemString(RangeType.tp_dict, "__exit__", (PyObject*)&g_exit) < 0)
    return -1;
  PyType_Modified(&RangeType);
  return 0;
}

/* ---- the decorator: a function whose every call is a range ------------------- */

/* @tracesmith.range(name) wraps the function in this object rather than in a
 * Python function around a `with` (which cost ~160 ns more per call: a frame
 * and the with statement's look-ups). Its vectorcall takes the start time,
 * calls the function with the same arguments, and records the range, also
 * when the function raises (as the `with` form does). A descriptor like a
 * function (methods bind), with a __dict__ for functools.update_wrapper. */
typedef struct {
  PyObject_HEAD vectorcallfunc vectorcall; /* RangedCall */
  PyObject* func;
  PyObject* name;   /* str */
  PyObject* kwargs; /* NULL: none */
  PyObject* dict;
} RangedObject;

static PyTypeObject RangedType;

static PyObject* RangedCall(PyObject* self, PyObject* const* args, size_t nargsf,
                            PyObject* kwnames) {
  RangedObject* f = (RangedObject*)self;
  if (!Capturing()) return PyObject_Vectorcall(f->func, args, nargsf, kwnames);
  /* The ids before the call: a failure here is not mixed with the function's. */
  long id = RangeNameId(f->name);
  if (id < 0) return NULL;
  long args_id = ArgsId(f->kwargs);
  if (args_id < 0) return NULL;
  const uint64_t start = g_api->now();
  PyObject* result = PyObject_Vectorcall(f->func, args, nargsf, kwnames);
  if (Capturing()) g_api->range((uint32_t)id, (uint32_t)args_id, start);
  return result;
}

static int RangedTraverse(RangedObject* f, visitproc visit, void* arg) {
  Py_VISIT(f->func);
  Py_VISIT(f->name);
  Py_VISIT(f->kwargs);
  Py_VISIT(f->dict);
  return 0;
}

static int RangedClear(RangedObject* f) {
  Py_CLEAR(f->func);
  Py_CLEAR(f->name);
  Py_CLEAR(f->kwargs);
  Py_CLEAR(f->dict);
  return 0;
}

static void RangedDealloc(RangedObject* f) {
  PyObject_GC_UnTrack(f);
  RangedClear(f);
  Py_TYPE(f)->tp_free((PyObject*)f);
}

/* f.method on an instance: a bound method, as for a Python function. */
static PyObject* RangedGet(PyObject* self, PyObject* obj, PyObject* type) {
  (void)type;
  if (!obj || obj == Py_None) {
    Py_INCREF(self);
    return self;
  }
  return PyMethod_New(self, obj);
}

/* _ranged(func, range): the decorated function (functools.update_wrapper is
 * applied in Python, once). */
static PyObject* Ranged(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 2 || !PyCallable_Check(args[0]) || Py_TYPE(args[1]) != &RangeType) {
    PyErr_SetString(PyExc_TypeError, "_ranged(func, range)");
    return NULL;
  }
  RangeObject* r = (RangeObject*)args[1];
  RangedObject* f = PyObject_GC_New(RangedObject, &RangedType);
  if (!f) return NULL;
  f->vectorcall = RangedCall;
  Py_INCREF(args[0]);
  f->func = args[0];
  Py_INCREF(r->name);
  f->name = r->name;
  f->kwargs = NULL;
  f->dict = NULL;
  if (r->kwargs) {
    f->kwargs = PyDict_Copy(r->kwargs);
    if (!f->kwargs) {
      Py_DECREF(f);
      return NULL;
    }
  }
  PyObject_GC_Track(f);
  return (PyObject*)f;
}

static PyGetSetDef kRangedGetSet[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject RangedType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracesmith.ranged_function",
    .tp_basicsize = sizeof(RangedObject),
    .tp_dealloc = (destructor)RangedDealloc,
    .tp_vectorcall_offset = offsetof(RangedObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A function decorated with @tracesmith.range: each call is a range.",
    .tp_traverse = (traverseproc)RangedTraverse,
    .tp_clear = (inquiry)RangedClear,
    .tp_descr_get = RangedGet,
    .tp_dictoffset = offsetof(RangedObject, dict),
    .tp_getset = kRangedGetSet,
};

/* ---- module ---------------------------------------------------------------- */

static PyObject* Enabled(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  return PyBool_FromLong(Capturing());
}

static PyObject* Attached(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  return PyBool_FromLong(g_api != NULL);
}

/* attach(path): use the capture library at `path` (tracesmith.profile loaded it). */
static PyObject* Attach(PyObject* self, PyObject* arg) {
  (void)self;
  const char* path = PyUnicode_AsUTF8(arg);
  if (!path) return NULL;
  const TracesmithAppApi* api = ts_app_load(path);
  if (api && api != g_api) {
    g_api = api;
    PyDict_Clear(g_names); /* ids of another library */
    ClearNameSlots();
  }
  return PyBool_FromLong(api != NULL);
}

static PyObject* SetDecorate(PyObject* self, PyObject* fn) {
  (void)self;
  Py_XDECREF(g_decorate);
  Py_INCREF(fn);
  g_decorate = fn;
  Py_RETURN_NONE;
}

static PyMethodDef kMethods[] = {
    {"counter", (PyCFunction)(void (*)(void))Counter, METH_FASTCALL,
     "counter(name, value): the program's counter `name` is `value` from now on."},
    {"instant", (PyCFunction)(void (*)(void))Instant, METH_VARARGS | METH_KEYWORDS,
     "instant(name, **args): a point in time on this thread, with its arguments."},
    {"enabled", Enabled, METH_NOARGS, "Whether a capture records these calls now."},
    {"attached", Attached, METH_NOARGS, "Whether a capture library was found."},
    {"attach", Attach, METH_O, "attach(path): use the capture library at path."},
    {"_set_decorate", SetDecorate, METH_O, NULL},
    {"_ranged", (PyCFunction)(void (*)(void))Ranged, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT, "_app", NULL, -1, kMethods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__app(void) {
  if (PyType_Ready(&RangeType) < 0 || RangeAddMethods() < 0 || PyType_Ready(&RangedType) < 0)
    return NULL;
  PyObject* m = PyModule_Create(&kModule);
  if (!m) return NULL;
  g_names = PyDict_New();
  if (!g_names) return NULL;
  Py_INCREF(&RangeType);
  if (PyModule_AddObject(m, "range", (PyObject*)&RangeType) < 0) return NULL;
  g_api = ts_app_api();
  return m;
}
