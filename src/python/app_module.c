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

/* The id of kwargs as one JSON object's text (0: none or not kept); -1 on error. */
static long ArgsId(PyObject* kwargs) {
  if (!kwargs || PyDict_GET_SIZE(kwargs) == 0) return 0;
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

typedef struct {
  PyObject_HEAD PyObject* name;
  PyObject* kwargs; /* NULL: none */
  uint64_t start_ns;
} RangeObject;

static void RangeDealloc(RangeObject* r) {
  Py_XDECREF(r->name);
  Py_XDECREF(r->kwargs);
  Py_TYPE(r)->tp_free((PyObject*)r);
}

static PyObject* RangeNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  if (PyTuple_GET_SIZE(args) != 1) {
    PyErr_SetString(PyExc_TypeError, "tracesmith.range(name, **args) takes 1 positional argument");
    return NULL;
  }
  PyObject* name = PyTuple_GET_ITEM(args, 0);
  if (!PyUnicode_Check(name)) {
    if (PyCallable_Check(name) && g_decorate) /* @tracesmith.range without a name */
      return PyObject_CallFunctionObjArgs(g_decorate, Py_None, name, NULL);
    return NotAName(name, "range");
  }
  RangeObject* r = (RangeObject*)type->tp_alloc(type, 0);
  if (!r) return NULL;
  Py_INCREF(name);
  r->name = name;
  if (kwargs && PyDict_GET_SIZE(kwargs)) {
    r->kwargs = PyDict_Copy(kwargs);
    if (!r->kwargs) {
      Py_DECREF(r);
      return NULL;
    }
  }
  return (PyObject*)r;
}

static PyObject* RangeEnter(RangeObject* r, PyObject* unused) {
  (void)unused;
  r->start_ns = Capturing() ? g_api->now() : 0;
  Py_INCREF(r);
  return (PyObject*)r;
}

static PyObject* RangeExit(RangeObject* r, PyObject* const* args, Py_ssize_t nargs) {
  (void)args;
  (void)nargs;
  const uint64_t start = r->start_ns;
  r->start_ns = 0;
  if (!start || !Capturing()) Py_RETURN_FALSE;
  long id = NameId(r->name, "range");
  if (id < 0) return NULL;
  long args_id = ArgsId(r->kwargs);
  if (args_id < 0) return NULL;
  g_api->range((uint32_t)id, (uint32_t)args_id, start);
  Py_RETURN_FALSE;
}

/* range("x")(func): the decorator form, made in Python (_app_api._decorate). */
static PyObject* RangeCall(RangeObject* r, PyObject* args, PyObject* kwargs) {
  if (kwargs || PyTuple_GET_SIZE(args) != 1 || !PyCallable_Check(PyTuple_GET_ITEM(args, 0)) ||
      !g_decorate) {
    PyErr_SetString(PyExc_TypeError, "tracesmith.range(name) decorates one function");
    return NULL;
  }
  return PyObject_CallFunctionObjArgs(g_decorate, (PyObject*)r, PyTuple_GET_ITEM(args, 0), NULL);
}

static PyObject* RangeGetName(RangeObject* r, void* unused) {
  (void)unused;
  Py_INCREF(r->name);
  return r->name;
}
static PyObject* RangeGetArgs(RangeObject* r, void* unused) {
  (void)unused;
  return r->kwargs ? PyDict_Copy(r->kwargs) : PyDict_New();
}

static PyMethodDef kRangeMethods[] = {
    {"__enter__", (PyCFunction)RangeEnter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))RangeExit, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL}};
static PyGetSetDef kRangeGetSet[] = {{"name", (getter)RangeGetName, NULL, NULL, NULL},
                                     {"args", (getter)RangeGetArgs, NULL, NULL, NULL},
                                     {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject RangeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tracesmith.range",
    .tp_basicsize = sizeof(RangeObject),
    .tp_dealloc = (destructor)RangeDealloc,
    .tp_call = (ternaryfunc)RangeCall,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "with tracesmith.range(name, **args): ... -- a range on this thread's timeline;\n"
        "@tracesmith.range(name) decorates a function (each call a range).",
    .tp_methods = kRangeMethods,
    .tp_getset = kRangeGetSet,
    .tp_new = RangeNew,
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
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT, "_app", NULL, -1, kMethods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__app(void) {
  if (PyType_Ready(&RangeType) < 0) return NULL;
  PyObject* m = PyModule_Create(&kModule);
  if (!m) return NULL;
  g_names = PyDict_New();
  if (!g_names) return NULL;
  Py_INCREF(&RangeType);
  if (PyModule_AddObject(m, "range", (PyObject*)&RangeType) < 0) return NULL;
  g_api = ts_app_api();
  return m;
}
