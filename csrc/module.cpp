// The cdynamo._C module: creates it and its _testing submodule, then lets each part register.
// Assumes a single interpreter (module state is process-global).
#include "module.h"
#include "common/error.h"

namespace cdynamo {

void add_functions(PyObject* module, PyMethodDef* methods) {
  check_status(PyModule_AddFunctions(module, methods));
}

}  // namespace cdynamo

static PyModuleDef cdynamo_module = {PyModuleDef_HEAD_INIT, "cdynamo._C",
                                     "cdynamo's C++ core: frame hook, bytecode, interpreter, guards",
                                     -1, nullptr};
static PyModuleDef testing_module = {PyModuleDef_HEAD_INIT, "cdynamo._C._testing",
                                     "Stage-by-stage access to cdynamo's C++ core, for tests", -1,
                                     nullptr};

// Ownership contract: returns a new reference to the module, or NULL with an exception set.
PyMODINIT_FUNC PyInit__C(void) {
  using namespace cdynamo;
  CDYNAMO_BOUNDARY_BEGIN
  Ref module = check(PyModule_Create(&cdynamo_module));
  Ref testing = check(PyModule_Create(&testing_module));
  init_bytecode(module.ptr(), testing.ptr());
  init_guards(module.ptr(), testing.ptr());
  init_hook(module.ptr(), testing.ptr());
  init_interp(module.ptr(), testing.ptr());
  init_lower(module.ptr(), testing.ptr());
  init_backend_runtime(module.ptr(), testing.ptr());
  init_inductor(module.ptr(), testing.ptr());
  check_status(PyModule_AddObject(module.ptr(), "_testing", testing.release()));
  return module.release();
  CDYNAMO_BOUNDARY_END(nullptr)
}
