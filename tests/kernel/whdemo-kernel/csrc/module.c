/* The op registration table of whdemo_kernel._C. No CUDA call happens at import. */
#define Py_LIMITED_API 0x030A0000
#include <Python.h>
#include <stdlib.h>

#include "whdemo.h"

PyObject* whdemo_shm_name(PyObject* self, PyObject* args);

static float* to_floats(PyObject* seq, Py_ssize_t* n) {
  PyObject* fast = PySequence_List(seq);
  if (!fast) return NULL;
  *n = PyList_Size(fast);
  float* buf = (float*)malloc(sizeof(float) * (size_t)(*n > 0 ? *n : 1));
  for (Py_ssize_t i = 0; buf && i < *n; i++) {
    double v = PyFloat_AsDouble(PyList_GetItem(fast, i));
    if (v == -1.0 && PyErr_Occurred()) {
      free(buf);
      buf = NULL;
      break;
    }
    buf[i] = (float)v;
  }
  Py_DECREF(fast);
  if (!buf && !PyErr_Occurred()) PyErr_NoMemory();
  return buf;
}

static PyObject* from_floats(const float* buf, Py_ssize_t n) {
  PyObject* out = PyList_New(n);
  for (Py_ssize_t i = 0; out && i < n; i++) PyList_SetItem(out, i, PyFloat_FromDouble(buf[i]));
  return out;
}

static PyObject* run(int op, PyObject* a_obj, PyObject* b_obj, float s) {
  Py_ssize_t n = 0, nb = 0;
  float *a = NULL, *b = NULL, *out = NULL;
  PyObject* result = NULL;
  char err[256] = {0};
  if (!(a = to_floats(a_obj, &n))) return NULL;
  if (b_obj && !(b = to_floats(b_obj, &nb))) goto done;
  if (b_obj && nb != n) {
    PyErr_SetString(PyExc_ValueError, "inputs differ in length");
    goto done;
  }
  out = (float*)malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  if (whdemo_launch(op, a, b, s, out, (long long)n, err, (int)sizeof err) != 0) {
    PyErr_SetString(PyExc_RuntimeError, err);
    goto done;
  }
  result = from_floats(out, n);
done:
  free(a);
  free(b);
  free(out);
  return result;
}

static PyObject* whdemo_vector_add(PyObject* self, PyObject* args) {
  PyObject *a, *b;
  (void)self;
  if (!PyArg_ParseTuple(args, "OO", &a, &b)) return NULL;
  return run(WHDEMO_ADD, a, b, 0.0f);
}

static PyObject* whdemo_scale(PyObject* self, PyObject* args) {
  PyObject* a;
  float s;
  (void)self;
  if (!PyArg_ParseTuple(args, "Of", &a, &s)) return NULL;
  return run(WHDEMO_SCALE, a, NULL, s);
}

static PyObject* whdemo_silu(PyObject* self, PyObject* args) {
  PyObject* a;
  (void)self;
  if (!PyArg_ParseTuple(args, "O", &a)) return NULL;
  return run(WHDEMO_SILU, a, NULL, 0.0f);
}

static PyObject* whdemo_devices(PyObject* self, PyObject* args) {
  (void)self;
  (void)args;
  return PyLong_FromLong(whdemo_device_count());
}

/* Hazard 4: the op table registers every op, including the POSIX-only one. */
static PyMethodDef whdemo_methods[] = {
    {"vector_add", whdemo_vector_add, METH_VARARGS, "a + b (float32, on the GPU)"},
    {"scale", whdemo_scale, METH_VARARGS, "a * s (float32, on the GPU)"},
    {"silu", whdemo_silu, METH_VARARGS, "a * sigmoid(a) (float32, on the GPU)"},
    {"device_count", whdemo_devices, METH_NOARGS, "number of CUDA devices (0 without a GPU)"},
    {"shm_name", whdemo_shm_name, METH_NOARGS, "POSIX shared-memory segment name"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef whdemo_module = {
    PyModuleDef_HEAD_INIT, "_C", "whdemo CUDA kernels", -1, whdemo_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__C(void) { return PyModule_Create(&whdemo_module); }
