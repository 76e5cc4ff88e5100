// Class statements inside traced code: LOAD_BUILD_CLASS, the class body run in the trace on a
// namespace (LOAD_NAME/STORE_NAME...), and the class made now from what the body defined.
// Assumes the class is one per compiled code (eager makes one per call), as for namedtuple().
#include "common/error.h"
#include "common/py_import.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {
namespace {

std::string name_at(const InterpFrame& frame, int index) {
  return to_std_string(PyTuple_GET_ITEM(frame.code->co_names, index));
}

// The name of a localsplus slot (LOAD_CLASSDEREF and LOAD_FROM_DICT_OR_DEREF look it up by name).
Ref slot_name(const InterpFrame& frame, int slot) {
  return Ref::borrow(PyTuple_GET_ITEM(frame.code->co_localsplusnames, slot));
}

}  // namespace

const ValuePtr& Tracer::class_namespace() {
  if (!frame().names) unsupported("a name lookup outside a class body (module-level code)");
  return frame().names;
}

bool Tracer::op_load_build_class(const bytecode::Instruction&) {
  push(Value::constant(Ref::borrow(PyDict_GetItemString(frame().builtins, "__build_class__"))));
  return true;
}

bool Tracer::op_load_name(const bytecode::Instruction& inst) {
  std::string name = name_at(frame(), inst.arg);
  const ValuePtr& names = class_namespace();
  int at = names->dict_index(Ref(check(PyUnicode_FromString(name.c_str()))));
  push(at >= 0 ? names->items[at] : load_global(name));  // the body's names, then globals and builtins
  return true;
}

bool Tracer::op_store_name(const bytecode::Instruction& inst) {
  ValuePtr value = pop();
  class_namespace()->dict_set(check(PyUnicode_FromString(name_at(frame(), inst.arg).c_str())), std::move(value));
  return true;
}

bool Tracer::op_setup_annotations(const bytecode::Instruction&) {  // the body's __annotations__ dict
  const ValuePtr& names = class_namespace();
  Ref key = check(PyUnicode_FromString("__annotations__"));
  if (names->dict_index(key) < 0) names->dict_set(std::move(key), Value::dict({}, {}));
  return true;
}

bool Tracer::op_load_locals(const bytecode::Instruction&) {  // 3.12: the class body's namespace
  push(class_namespace());
  return true;
}

bool Tracer::op_load_classderef(const bytecode::Instruction& inst) {  // 3.11
  int at = class_namespace()->dict_index(slot_name(frame(), inst.arg));
  if (at >= 0) {
    push(frame().names->items[at]);
    return true;
  }
  return op_load_deref(inst);
}

bool Tracer::op_load_from_dict_or_deref(const bytecode::Instruction& inst) {  // 3.12
  ValuePtr mapping = pop();
  if (mapping->kind != ValueKind::Dict) unsupported("a class body whose namespace is a " + mapping->describe());
  int at = mapping->dict_index(slot_name(frame(), inst.arg));
  if (at >= 0) {
    push(mapping->items[at]);
    return true;
  }
  return op_load_deref(inst);
}

// __build_class__(body, name, *bases, **keywords): the body runs in the trace on a new namespace
// (what it reads is guarded as any trace's reads), then the class is made now, by a metaclass that
// runs no Python code of the program (_trace_support.CLASS_MAKING_METACLASSES), from the
// constants and functions the body defined.
ValuePtr Tracer::builtin_build_class(Handle, std::vector<ValuePtr>& args, graph::KwArgs& kwargs) {
  if (args.size() < 2 || args[0]->kind != ValueKind::Function || !args[1]->is_constant() ||
      !PyUnicode_Check(args[1]->obj.ptr()))
    return nullptr;
  const ValuePtr body = args[0];
  Ref bases = check(PyTuple_New(static_cast<Py_ssize_t>(args.size() - 2)));
  for (size_t i = 2; i < args.size(); ++i) {
    if (!args[i]->is_constant() || !PyType_Check(args[i]->obj.ptr()))
      unsupported("a class statement whose base is a " + args[i]->describe());
    PyTuple_SET_ITEM(bases.ptr(), i - 2, Ref(args[i]->obj).release());
  }
  Ref keywords = check(PyDict_New());  // class_making_metaclass takes `metaclass=` out of it
  for (const auto& [key, value] : kwargs) {
    if (!value->is_constant()) unsupported("a class statement whose keyword " + key + " is a " + value->describe());
    check_status(PyDict_SetItemString(keywords.ptr(), key.c_str(), value->obj.ptr()));
  }
  // The metaclass (from `metaclass=` and the bases), refused unless making a class with it runs
  // no Python code of the program; its __prepare__ is then a plain dict's.
  Ref metaclass = call_helper("cdynamo._trace_support", "class_making_metaclass", {bases, keywords});
  if (metaclass.ptr() == Py_None)
    unsupported("a class statement whose metaclass, a base's __init_subclass__ or __mro_entries__ runs Python code");
  ValuePtr names = Value::dict({}, {});
  ValuePtr class_cell = inline_call(body->obj, {}, {}, &body->items, false, names);
  Ref namespace_dict = check(PyDict_New());
  Ref real_cell;
  if (class_cell->kind == ValueKind::Cell) real_cell = check(PyCell_New(nullptr));
  for (size_t i = 0; i < names->keys.size(); ++i) {
    const ValuePtr& value = names->items[i];
    Ref real;
    if (value == class_cell && real_cell) {
      real = real_cell;  // __classcell__: type() fills it with the class
    } else if (value->kind == ValueKind::Function) {
      real = method_of_class_made_now(value, class_cell, real_cell);
    } else if (value->is_fully_constant()) {
      real = value->as_python_constant();
      // A class attribute is shared by every instance: a mutable one would be shared across calls
      // (the class is made once). __annotations__ is the body's record of annotations, not state.
      if (to_std_string(names->keys[i]) != "__annotations__" && PyObject_Hash(real.ptr()) == -1) {
        PyErr_Clear();
        unsupported("a class defined in the function with a mutable class attribute (" + to_std_string(names->keys[i]) + ")");
      }
    } else {
      unsupported("a class defined in the function whose " + to_std_string(names->keys[i]) + " is a " + value->describe());
    }
    check_status(PyDict_SetItem(namespace_dict.ptr(), names->keys[i].ptr(), real.ptr()));
  }
  Ref call_args = check(PyTuple_Pack(3, args[1]->obj.ptr(), bases.ptr(), namespace_dict.ptr()));
  Ref made = checked(PyObject_Call(metaclass.ptr(), call_args.ptr(), keywords.ptr()));
  ValuePtr made_class = Value::constant(made);
  if (class_cell->kind == ValueKind::Cell) class_cell->items = {made_class};  // __class__ in the trace's own cells
  keep_alive_.push_back(made);
  return made_class;
}

// A function the class body defined, as the real function the class holds: its closure may only
// be the body's __class__ cell (the class made now fills the real one).
Ref Tracer::method_of_class_made_now(const ValuePtr& function, const ValuePtr& class_cell, const Ref& real_cell) {
  if (function->items.empty()) return function->obj;
  Ref closure = check(PyTuple_New(static_cast<Py_ssize_t>(function->items.size())));
  for (size_t i = 0; i < function->items.size(); ++i) {
    if (function->items[i] != class_cell || !real_cell)
      unsupported("a method of a class defined in the function that reads the function's variables");
    PyTuple_SET_ITEM(closure.ptr(), i, Ref(real_cell).release());
  }
  PyObject* old = function->obj.ptr();
  Ref method = check(PyFunction_New(PyFunction_GET_CODE(old), PyFunction_GET_GLOBALS(old)));
  check_status(PyFunction_SetClosure(method.ptr(), closure.ptr()));
  if (PyObject* defaults = PyFunction_GET_DEFAULTS(old)) check_status(PyFunction_SetDefaults(method.ptr(), defaults));
  if (PyObject* kwdefaults = PyFunction_GET_KW_DEFAULTS(old)) check_status(PyFunction_SetKwDefaults(method.ptr(), kwdefaults));
  if (PyObject* annotations = PyFunction_GET_ANNOTATIONS(old)) check_status(PyFunction_SetAnnotations(method.ptr(), annotations));
  Ref qualname = check(PyObject_GetAttrString(old, "__qualname__"));
  check_status(PyObject_SetAttrString(method.ptr(), "__qualname__", qualname.ptr()));
  if (auto found = made_defaults_.find(old); found != made_defaults_.end()) {
    made_defaults_[method.ptr()] = found->second;  // its default Values, shared as the one object
    keep_alive_.push_back(method);
  }
  return method;
}

}  // namespace cdynamo::interp
