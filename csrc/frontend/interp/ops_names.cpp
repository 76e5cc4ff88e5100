// Opcode handlers for names reached through the frame: globals, attributes and imports.
// Assumes CPython 3.11/3.12 bytecode (oparg encodings from kOparg); rows in opcode_table.cpp.
#include "common/error.h"
#include "common/py_import.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {
namespace {

std::string name_at(const InterpFrame& frame, int index) {
  return to_std_string(PyTuple_GET_ITEM(frame.code->co_names, index));
}

}  // namespace

bool Tracer::op_load_global(const bytecode::Instruction& inst) {
  if (inst.arg & 1) push(Value::null());
  push(load_global(name_at(frame(), inst.arg >> 1)));
  return true;
}

bool Tracer::op_store_global(const bytecode::Instruction& inst) {
  ValuePtr value = pop();
  store_global(name_at(frame(), inst.arg), std::move(value));
  return true;
}

bool Tracer::op_load_attr(const bytecode::Instruction& inst) {
  std::string name = name_at(frame(), inst.arg >> kOparg.load_attr_shift);
  ValuePtr base = pop();
  if (kOparg.load_attr_method && (inst.arg & 1)) push(Value::null());
  push(load_attr(base, name));
  return true;
}

bool Tracer::op_load_method(const bytecode::Instruction& inst) {
  ValuePtr base = pop();
  push(Value::null());
  push(load_attr(base, name_at(frame(), inst.arg)));
  return true;
}

bool Tracer::op_load_super_attr(const bytecode::Instruction& inst) {
  // super().name (3.12): [super, __class__, self] -> the attribute (method form: NULL first).
  ValuePtr self = pop();
  ValuePtr cls = pop();
  ValuePtr super_fn = pop();
  ValuePtr bound = call_value(super_fn, {cls, self}, {});
  if (inst.arg & 1) push(Value::null());
  push(load_attr(bound, name_at(frame(), inst.arg >> 2)));
  return true;
}

bool Tracer::op_store_attr(const bytecode::Instruction& inst) {
  ValuePtr object = pop();
  ValuePtr value = pop();
  store_attr(std::move(object), name_at(frame(), inst.arg), std::move(value));
  return true;
}

bool Tracer::op_delete_attr(const bytecode::Instruction& inst) {
  delete_attr(pop(), name_at(frame(), inst.arg));
  return true;
}

bool Tracer::op_import_name(const bytecode::Instruction& inst) {
  // Only modules already imported: importing one for the first time runs its code. A relative
  // import is resolved against the frame's package first, as the import system does.
  ValuePtr fromlist = pop();
  ValuePtr level = pop();
  if (!level->is_constant() || !PyLong_Check(level->obj.ptr())) unsupported("an import with a traced level");
  long depth = PyLong_AsLong(level->obj.ptr());
  Ref name = Ref::borrow(PyTuple_GET_ITEM(frame().code->co_names, inst.arg));
  Ref absolute = name;
  if (depth > 0) {
    Ref resolved = call_helper("cdynamo._trace_support", "resolve_relative_import",
                               {name, Ref::borrow(frame().globals), level->obj});
    if (resolved.ptr() == Py_None) unsupported("a relative import outside a package");
    absolute = resolved;
  }
  PyObject* modules = PySys_GetObject("modules");  // borrowed
  if (!modules || !PyDict_GetItem(modules, absolute.ptr()))
    unsupported("importing " + to_std_string(absolute) + ", which is not imported yet");
  Ref module = check(PyImport_ImportModuleLevelObject(name.ptr(), frame().globals, nullptr,
                                                      fromlist->is_constant() ? fromlist->obj.ptr() : nullptr,
                                                      static_cast<int>(depth)));
  auto value = Value::constant(std::move(module));
  value->kind = ValueKind::PyModule;
  push(value);
  return true;
}

bool Tracer::op_import_from(const bytecode::Instruction& inst) {
  push(load_attr(top(), name_at(frame(), inst.arg)));
  return true;
}

}  // namespace cdynamo::interp
