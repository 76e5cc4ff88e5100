// Attributes of nn.Module objects read by the trace: parameters and buffers as the graph's
// attributes, submodules, class entries and a class's own __getattr__. Assumes wrap() for the rest.
#include "common/error.h"
#include "common/py_import.h"
#include "common/py_types.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {
namespace {

bool is_tensor(Handle obj) {
  static Ref& tensor_type = *new Ref(import_attr("torch", "Tensor"));  // never freed: outlives the interpreter
  int result = PyObject_IsInstance(obj.ptr(), tensor_type.ptr());
  check_status(result);
  return result;
}

}  // namespace

// A parameter, buffer or submodule of the module's tables (what nn.Module.__getattr__ finds), or
// null. Each found entry is guarded by identity.
ValuePtr Tracer::module_table_attr(const ValuePtr& module, const std::string& name) {
  PyObject* obj = module->obj.ptr();
  SourcePtr source = module->source ? Source::attr(module->source, name) : nullptr;
  if (source) check_source_depth(source);
  auto guard_identity = [&](PyObject* found) {
    if (source) source->manager(*guards_).add_id_match(found);
  };
  std::string path = module->module_path + "." + name;
  Ref dict = check(PyObject_GenericGetDict(obj, nullptr));
  for (const char* table : {"_parameters", "_buffers", "_modules"}) {
    PyObject* entries = PyDict_GetItemString(dict.ptr(), table);
    if (!entries || !PyDict_Check(entries)) continue;
    PyObject* found = PyDict_GetItemString(entries, name.c_str());
    if (!found) continue;
    guard_identity(found);
    if (found == Py_None) return Value::constant(Ref::borrow(found), source);
    if (is_tensor(found)) {
      // Parameters and buffers stay attributes of the GraphModule: the graph reads the
      // module's current tensors at each call; guards only check it is the same object.
      // A module made for this call (serve_one_call_with) is the graph's own: no guard needed.
      const bool made_for_this_call = module->module_path.starts_with(kMadeWithState);
      if (!source && !made_for_this_call) unsupported("a tensor of an nn.Module made inside the compiled function");
      auto seen = attributes_.find(found);
      if (seen != attributes_.end()) return seen->second;
      if (auto input = tensor_inputs_.find(found); input != tensor_inputs_.end()) return input->second;  // read first another way
      ValuePtr value = graph_.add_attribute(found, path, source);
      static Ref& grad_enabled = *new Ref(import_attr("torch", "is_grad_enabled"));  // never freed: outlives the interpreter
      if (source && Ref(check(PyObject_CallNoArgs(grad_enabled.ptr()))).ptr() == Py_True) {
        // With gradients on, the graph's autograd follows each parameter's flag.
        Ref flag = check(PyObject_GetAttrString(found, "requires_grad"));
        source->manager(*guards_).add_requires_grad_match(flag.ptr() == Py_True);
      }
      attributes_.emplace(found, value);
      keep_alive_.push_back(Ref::borrow(found));
      return value;
    }
    auto value = Value::constant(Ref::borrow(found), source);
    value->kind = ValueKind::NNModule;
    value->module_path = path;
    return value;
  }
  return nullptr;
}

// An attribute of a module: of one the frame reaches, guarded (its identity, or the entry's); of
// a stateless module the trace made (no source: made from constants, holding no tensors), the
// module's own object, unguarded.
ValuePtr Tracer::nn_module_attr(ValuePtr module, const std::string& name) {
  PyObject* obj = module->obj.ptr();
  SourcePtr source = module->source ? Source::attr(module->source, name) : nullptr;
  if (source) check_source_depth(source);
  if (ValuePtr entry = module_table_attr(module, name)) return entry;
  Ref dict = check(PyObject_GenericGetDict(obj, nullptr));
  Ref key = check(PyUnicode_FromString(name.c_str()));
  // The class's own entry (not what getattr makes of it): a property runs in the trace, a
  // staticmethod takes no self. All fixed by the module's identity, which is guarded.
  PyObject* raw = _PyType_Lookup(Py_TYPE(obj), key.ptr());
  Ref raw_ref = Ref::borrow(raw);
  if (raw && PyObject_TypeCheck(raw, &PyProperty_Type)) {
    Ref getter = check(PyObject_GetAttrString(raw, "fget"));
    if (PyFunction_Check(getter.ptr())) return inline_call(getter, {module}, {});
  }
  if (raw && PyObject_TypeCheck(raw, &PyStaticMethod_Type))
    return Value::constant(check(PyObject_GetAttrString(raw, "__func__")));
  if (raw && PyObject_TypeCheck(raw, &PyClassMethod_Type)) {
    auto method = std::make_shared<Value>();
    method->kind = ValueKind::UserMethod;
    method->obj = check(PyObject_GetAttrString(raw, "__func__"));
    method->name = name;
    method->items = {Value::constant(Ref::borrow(reinterpret_cast<PyObject*>(Py_TYPE(obj))))};
    return method;
  }
  if (PyObject* instance_value = PyDict_GetItemString(dict.ptr(), name.c_str())) {
    if (source) return wrap(instance_value, source);
    if (is_tensor(Handle(instance_value))) unsupported("a tensor of an nn.Module made inside the compiled function");
    keep_alive_.push_back(Ref::borrow(instance_value));
    return Value::constant(Ref::borrow(instance_value));
  }
  if (!raw) {
    // Found nowhere: the class's own __getattr__ runs in the trace (one delegating to a wrapped
    // module returns that module's parameters, which stay parameters of the graph). The trace
    // relies on the name staying out of the module's tables.
    static Ref& module_getattr = *new Ref(check(PyObject_GetAttrString(import_attr("torch.nn", "Module").ptr(), "__getattr__")));  // never freed: outlives the interpreter
    Ref getattr_name = interned("__getattr__");
    PyObject* getattr_fn = _PyType_Lookup(Py_TYPE(obj), getattr_name.ptr());
    if (getattr_fn && PyFunction_Check(getattr_fn) && getattr_fn != module_getattr.ptr()) {
      if (module->source)
        for (const char* table : {"_parameters", "_buffers", "_modules"}) {
          PyObject* entries = PyDict_GetItemString(dict.ptr(), table);
          if (!entries || !PyDict_Check(entries)) continue;
          std::vector<Ref> keys;
          PyObject *entry_key, *entry_value;
          Py_ssize_t pos = 0;
          while (PyDict_Next(entries, &pos, &entry_key, &entry_value)) keys.push_back(Ref::borrow(entry_key));
          Source::attr(module->source, table)->manager(*guards_).add_dict_key_order(std::move(keys));
        }
      return inline_call(Ref::borrow(getattr_fn), {module, Value::constant(key)}, {});
    }
  }
  Ref attr = steal(PyObject_GetAttrString(obj, name.c_str()));
  if (!attr) {
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) raise_python_error();
    if (source) module->source->manager(*guards_).add_no_attr(name);  // absent now; the trace relies on that
    raise_python_error();
  }
  Ref class_attr = steal(PyObject_GetAttrString(reinterpret_cast<PyObject*>(Py_TYPE(obj)), name.c_str()));
  PyErr_Clear();
  if (class_attr && PyObject_TypeCheck(class_attr.ptr(), &PyProperty_Type))
    unsupported("the property " + std::string(Py_TYPE(obj)->tp_name) + "." + name + " (properties run user code)");
  if (class_attr && PyFunction_Check(class_attr.ptr())) {
    // A method of the module's class: guarded where it is read, as the class may be given
    // another one between calls (a patched method).
    auto method = std::make_shared<Value>();
    method->kind = ValueKind::UserMethod;
    method->obj = class_attr;
    method->name = name;
    method->items = {module};
    if (module->source) Source::attr(Source::attr(module->source, "__class__"), name)->manager(*guards_).add_id_match(class_attr);
    return method;
  }
  // A class-level value (not a method): read again by the guards at the attribute's source, as
  // the class may change it, or an instance attribute come to shadow it, between calls.
  if (source) return wrap(attr.ptr(), source);
  return Value::constant(std::move(attr));
}

}  // namespace cdynamo::interp
