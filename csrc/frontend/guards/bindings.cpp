// Python-visible functions of the guards part (cdynamo._C and cdynamo._C._testing).
// Assumes registration happens once, from PyInit__C.
#include "module.h"

namespace cdynamo {

void init_guards(PyObject* module, PyObject* testing) {
  (void)module;
  (void)testing;
}

}  // namespace cdynamo
