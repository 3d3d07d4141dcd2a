/* POSIX-only op: the name of a shared-memory segment (like sgl-kernel's transfer.cu). */
#define Py_LIMITED_API 0x030A0000
#include <Python.h>
#include <unistd.h>

PyObject* whdemo_shm_name(PyObject* self, PyObject* args) {
  (void)self;
  (void)args;
  return PyUnicode_FromFormat("/whdemo-%ld", (long)getpid());
}
