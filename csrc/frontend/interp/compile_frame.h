// Entry point of the frontend's compiler: trace one frame into a graph, hand the graph to the
// backend, and return the guards plus the transformed code that calls the compiled graph.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include "common/cpython_compat.h"
#include "common/py_ref.h"
#include "frontend/codegen/made_resume.h"
#include "frontend/guards/guards.h"

namespace cdynamo::interp {

// A construct the interpreter cannot capture. The frame runs eagerly (or, with fullgraph=True,
// the user gets cdynamo.exc.Unsupported naming the construct and the line).
struct Unsupported : std::runtime_error {
  Unsupported(const std::string& reason) : std::runtime_error(reason) {}
  std::string filename;  // where in the user's code (filled by the interpreter)
  int line = -1;
  std::string function;
  bool silent = false;  // nothing worth compiling: fall back without reporting a graph break
  bool raised_before_operations = false;  // the call raises before any operation (silent too)
  bool data_dependent = false;  // a Python number or branch needed a size only the data gives
  Ref raised;  // an operation raised this on fake tensors (a shape error): a handler may take it
};

// A static trace met an input whose sizes must be symbolic (they changed since the last compile,
// or the tensor is marked dynamic): the frame is traced again with a ShapeEnv (shapes.py).
struct RetraceDynamic {
  std::string source;
  bool data_dependent = false;  // for an operation whose output size the data gives
};

struct CompiledFrame {
  std::unique_ptr<guards::RootGuardManager> guards;
  Ref transformed_code;
  // Locals the entry is specialised to by identity (slot, object address): modules passed as
  // self. config.cache_size_limit counts entries per such identity, as TorchDynamo does, so
  // twelve instances of one block class do not exhaust the limit of one code object.
  std::vector<std::pair<int, PyObject*>> identities;
  // The resume functions' code the transformed code calls after a graph break.
  std::vector<codegen::MadeResume> resume_codes;
};

// callback is the hook's (backend, options) tuple. Throws Unsupported, or PythonError/
// InternalError for failures of the backend or of cdynamo itself.
CompiledFrame compile_frame(CdFrame* frame, PyObject* callback);

// Number of arguments the transformed code takes: every argument slot of the original code
// (positional, keyword-only, *args, **kwargs), passed positionally.
int argument_slot_count(PyCodeObject* code);

}  // namespace cdynamo::interp
