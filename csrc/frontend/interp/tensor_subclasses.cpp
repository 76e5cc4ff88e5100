// torch's __torch_function__ protocol in the trace: a torch function, Tensor method or operator
// given a tensor subclass (or object) whose class writes __torch_function__ runs that code, traced;
// torch.Tensor's own runs the operator with subclass dispatch off and gives results of the class.
// The graph itself runs on plain tensors (_tensor_subclasses.running_plain). Assumes Value::cls.
#include "common/error.h"
#include "common/py_import.h"
#include "common/py_types.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {
namespace {

bool runs_own_torch_function(Handle cls) {
  static PyObject* const ask = import_attr("cdynamo._tensor_subclasses", "runs_own_torch_function").release();  // never freed: outlives the interpreter
  return Ref(check(PyObject_CallOneArg(ask, cls.ptr()))).ptr() == Py_True;
}

// value is one of args, or an item of one (an in-place operator's result is its argument).
bool is_among(const ValuePtr& value, const std::vector<ValuePtr>& args) {
  for (const ValuePtr& arg : args) {
    if (arg == value) return true;
    if (arg->is_sequence() && is_among(value, arg->items)) return true;
  }
  return false;
}

}  // namespace

bool Tracer::holds_subclass_tensor(const ValuePtr& self, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs) {
  auto holds = [](const ValuePtr& value, auto& self_ref) -> bool {
    if (value->is_tensor()) return static_cast<bool>(value->cls);
    if (!value->is_sequence()) return false;
    for (const ValuePtr& item : value->items)
      if (self_ref(item, self_ref)) return true;
    return false;
  };
  if (holds(self, holds)) return true;
  for (const ValuePtr& arg : args)
    if (holds(arg, holds)) return true;
  for (const auto& [name, value] : kwargs)
    if (holds(value, holds)) return true;
  return false;
}

void Tracer::set_subclass_dispatch(bool enabled) {
  subclass_dispatch_ = enabled;
  graph_.set_subclass_results(enabled);
}

// Subclass dispatch off while torch's operator itself runs in the trace; put back as it was.
struct Tracer::SubclassDispatchOff {
  Tracer& tracer;
  const bool before;
  explicit SubclassDispatchOff(Tracer& t) : tracer(t), before(t.subclass_dispatch_) { tracer.set_subclass_dispatch(false); }
  ~SubclassDispatchOff() { tracer.set_subclass_dispatch(before); }
  SubclassDispatchOff(const SubclassDispatchOff&) = delete;
  SubclassDispatchOff& operator=(const SubclassDispatchOff&) = delete;
};

// torch's override protocol: a torch function given a tensor of a class that runs its own
// __torch_function__, or an object whose class defines one, calls that instead with the
// function, the overriding classes (a subclass before its bases, else in argument order), the
// arguments and the keyword arguments. Null when none does (tensors of a class that only wraps
// results get them from GraphBuilder::call).
ValuePtr Tracer::torch_function_override(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs) {
  static PyObject* const name = PyUnicode_InternFromString("__torch_function__");  // immortal once interned
  std::vector<Ref> classes;
  bool runs_own = false;
  auto consider = [&](const ValuePtr& value) {
    Ref cls;
    if (value->is_tensor()) {
      if (!value->cls || !subclass_dispatch_ || !graph::GraphBuilder::wraps_results(value->cls)) return;
      cls = value->cls;
      runs_own = runs_own || runs_own_torch_function(cls);
    } else if (value->kind == ValueKind::NewObject || value->kind == ValueKind::Object) {
      cls = type_of(value);
      if (!_PyType_Lookup(as_type(cls), name)) return;
      runs_own = true;
    } else {
      return;
    }
    for (const Ref& seen : classes)
      if (seen.ptr() == cls.ptr()) return;
    auto base = std::find_if(classes.begin(), classes.end(), [&](const Ref& seen) {
      return PyType_IsSubtype(as_type(cls), as_type(seen));
    });
    classes.insert(base, cls);
  };
  for (const ValuePtr& arg : args) {
    consider(arg);
    if (arg->kind == ValueKind::List || arg->kind == ValueKind::Tuple)
      for (const ValuePtr& item : arg->items) consider(item);
  }
  for (const auto& [name, value] : kwargs) consider(value);
  if (!runs_own) return nullptr;
  // Functions outside the protocol (has_torch_function itself, tensor constructors, ...) run as they are.
  static Ref& ignored = *new Ref(call_helper("torch.overrides", "get_ignored_functions", {}));  // never freed: outlives the interpreter
  int outside = PySequence_Contains(ignored.ptr(), fn.ptr());
  check_status(outside);
  if (outside) return nullptr;
  std::vector<ValuePtr> type_values;
  for (const Ref& cls : classes) type_values.push_back(Value::constant(cls));
  ValuePtr types = Value::sequence(ValueKind::Tuple, std::move(type_values));
  for (const Ref& cls : classes) {
    std::vector<Ref> keys;
    std::vector<ValuePtr> items;
    for (const auto& [name, value] : kwargs) {
      keys.push_back(check(PyUnicode_FromString(name.c_str())));
      items.push_back(value);
    }
    ValuePtr handler = load_attr(Value::constant(cls), "__torch_function__");
    ValuePtr result = call_value(handler, {Value::constant(Ref::borrow(fn.ptr())), types, Value::sequence(ValueKind::Tuple, args),
                                           Value::dict(std::move(keys), std::move(items))},
                                 {});
    if (!(result->is_constant() && result->obj.ptr() == Py_NotImplemented)) return result;
  }
  Ref fn_name = steal(PyObject_GetAttrString(fn.ptr(), "__name__"));
  PyErr_Clear();
  raise(PyExc_TypeError, "no implementation found for '" + (fn_name ? to_std_string(fn_name) : std::string("?")) +
                             "' on types that implement __torch_function__");
}

// a op b with a tensor on either side (rhs null: a unary operator): what torch's operator passes
// __torch_function__ (_tensor_subclasses.operator_method), through the override protocol. An
// operator torch dispatches no __torch_function__ for (in place: its result is its left operand)
// runs as is, its result of the left operand's class. Null when a tensor subclass plays no part.
ValuePtr Tracer::operator_override(Handle op, const ValuePtr& lhs, const ValuePtr& rhs, const std::string& what) {
  if (!subclass_dispatch_ || !((lhs->is_tensor() && lhs->cls) || (rhs && rhs->is_tensor() && rhs->cls))) return nullptr;
  static PyObject* const method_of = import_attr("cdynamo._tensor_subclasses", "operator_method").release();  // never freed: outlives the interpreter
  const bool on_left = lhs->is_tensor();
  Ref dispatch = check(PyObject_CallFunctionObjArgs(method_of, op.ptr(), on_left ? Py_True : Py_False, nullptr));
  std::vector<ValuePtr> args{lhs};
  if (rhs) args.push_back(rhs);
  if (dispatch.ptr() == Py_None) {
    ValuePtr result;
    {
      SubclassDispatchOff off(*this);
      result = graph_.call("call_function", op, args, {}, what);
    }
    if (result->is_tensor() && !result->cls && lhs->is_tensor()) result->cls = lhs->cls;
    return result;
  }
  if (PyTuple_GET_ITEM(dispatch.ptr(), 1) == Py_True) std::reverse(args.begin(), args.end());
  return torch_function_override(Handle(PyTuple_GET_ITEM(dispatch.ptr(), 0)), args, {});
}

// t.name of a torch.Tensor attribute written in C (shape, dtype, T, grad): torch dispatches its
// getter, `torch.Tensor.name.__get__`, with (t,). Null when nothing overrides.
ValuePtr Tracer::attribute_override(const ValuePtr& tensor, const std::string& name) {
  if (!subclass_dispatch_ || !tensor->cls || !runs_own_torch_function(tensor->cls)) return nullptr;
  static Ref& plain = *new Ref(import_attr("torch", "Tensor"));  // never freed: outlives the interpreter
  Ref attr_name = check(PyUnicode_FromString(name.c_str()));
  PyObject* descriptor = _PyType_Lookup(as_type(plain), attr_name.ptr());  // borrowed
  if (!descriptor || !PyObject_TypeCheck(descriptor, &PyGetSetDescr_Type)) return nullptr;
  Ref getter = check(PyObject_GetAttrString(descriptor, "__get__"));
  return torch_function_override(getter, {tensor}, {});
}

// `torch.Tensor.name.__get__(t)` (what an attribute read dispatched to __torch_function__ calls):
// t.name in the trace. Null for other calls.
ValuePtr Tracer::call_tensor_getter(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs) {
  if (!PyObject_TypeCheck(fn.ptr(), &_PyMethodWrapper_Type) || args.size() != 1 || !kwargs.empty() || !args[0]->is_tensor())
    return nullptr;
  Ref method_name = check(PyObject_GetAttrString(fn.ptr(), "__name__"));
  Ref descriptor = check(PyObject_GetAttrString(fn.ptr(), "__self__"));
  if (to_std_string(method_name) != "__get__" || !PyObject_TypeCheck(descriptor.ptr(), &PyGetSetDescr_Type)) return nullptr;
  static Ref& base = *new Ref(import_attr("torch._C", "TensorBase"));  // never freed: outlives the interpreter
  if (reinterpret_cast<PyDescrObject*>(descriptor.ptr())->d_type != as_type(base)) return nullptr;
  return load_attr(args[0], to_std_string(reinterpret_cast<PyDescrObject*>(descriptor.ptr())->d_name));
}

// torch.Tensor.__torch_function__(func, types, args, kwargs) bound to cls (what super() reaches
// from a subclass's own), or torch._C._disabled_torch_function_impl (wraps false): func runs with
// subclass dispatch off; torch.Tensor's gives tensors in its result the class cls.
ValuePtr Tracer::tensor_torch_function(Handle cls, std::vector<ValuePtr> args, graph::KwArgs kwargs, bool wraps) {
  const char* names[] = {"func", "types", "args", "kwargs"};
  for (const auto& [name, value] : kwargs) {
    auto slot = std::find(std::begin(names), std::end(names), name);
    if (slot == std::end(names)) unsupported("__torch_function__() with the keyword argument " + name);
    size_t index = static_cast<size_t>(slot - std::begin(names));
    if (args.size() <= index) args.resize(index + 1);
    args[index] = value;
  }
  if (args.size() < 3 || !args[0] || !args[1] || !args[2]) unsupported("__torch_function__() without func, types and args");
  if (args.size() < 4 || !args[3]) args.resize(4), args[3] = Value::constant(Ref::borrow(Py_None));
  if (wraps) {
    for (const ValuePtr& type : iterate(args[1]))  // a class it is not a subclass of handles the call itself
      if (!type->is_constant() || !PyType_Check(type->obj.ptr()) ||
          !PyType_IsSubtype(as_type(cls), as_type(type->obj)))
        return Value::constant(Ref::borrow(Py_NotImplemented));
  }
  std::vector<ValuePtr> call_args = iterate(args[2]);
  graph::KwArgs call_kwargs;
  if (args[3]->kind == ValueKind::Dict) {
    for (size_t i = 0; i < args[3]->keys.size(); ++i) {
      if (!PyUnicode_Check(args[3]->keys[i].ptr())) unsupported("__torch_function__() kwargs with a key that is not a string");
      call_kwargs.emplace_back(to_std_string(args[3]->keys[i]), args[3]->items[i]);
    }
  } else if (!(args[3]->is_constant() && args[3]->obj.ptr() == Py_None)) {
    unsupported("__torch_function__() kwargs of a " + args[3]->describe());
  }
  ValuePtr result;
  {
    SubclassDispatchOff off(*this);
    result = call_value(args[0], call_args, call_kwargs);
  }
  static PyObject* const nowrap = import_attr("cdynamo._tensor_subclasses", "is_nowrap_function").release();  // never freed: outlives the interpreter
  if (!wraps || (args[0]->is_constant() && Ref(check(PyObject_CallOneArg(nowrap, args[0]->obj.ptr()))).ptr() == Py_True))
    return result;
  return with_subclass(result, cls, call_args);
}

// torch.Tensor.__torch_function__'s conversion: tensors in result (through tuples and lists) not
// already of cls become of cls. A result new to this call takes the class itself; an argument
// returned (an in-place operator's) gets a new object of the class over it, as as_subclass does.
ValuePtr Tracer::with_subclass(const ValuePtr& result, Handle cls, const std::vector<ValuePtr>& args) {
  if (result->is_tensor()) {
    Ref type = type_of(result);
    if (PyType_IsSubtype(as_type(type), as_type(cls))) return result;
    if (!result->source && !is_among(result, args)) {
      result->cls = Ref::borrow(cls.ptr());
      return result;
    }
    return subclass_alias(result, cls);
  }
  if (result->is_sequence()) {
    std::vector<ValuePtr> items;
    for (const ValuePtr& item : result->items) items.push_back(with_subclass(item, cls, args));
    ValuePtr converted = Value::sequence(result->kind, std::move(items));
    converted->obj = result->obj;  // a torch.return_types result keeps its class
    return converted;
  }
  return result;
}

// t.as_subclass(cls): another tensor object over t's data, of class cls (an alias node).
ValuePtr Tracer::subclass_alias(const ValuePtr& tensor, Handle cls) {
  static Ref& alias = *new Ref(import_attr("cdynamo._tensor_subclasses", "ALIAS"));  // never freed: outlives the interpreter
  static Ref& plain = *new Ref(import_attr("torch", "Tensor"));                       // likewise
  ValuePtr result;
  {
    SubclassDispatchOff off(*this);
    result = graph_.call("call_function", alias, {tensor}, {}, "Tensor.as_subclass()");
  }
  if (cls.ptr() != plain.ptr()) result->cls = Ref::borrow(cls.ptr());
  return result;
}

ValuePtr Tracer::tensor_as_subclass(const ValuePtr& tensor, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs) {
  static Ref& plain = *new Ref(import_attr("torch", "Tensor"));  // never freed: outlives the interpreter
  ValuePtr cls = args.size() == 1 && kwargs.empty() ? args[0] : kwargs.size() == 1 && kwargs[0].first == "cls" && args.empty() ? kwargs[0].second : nullptr;
  if (!cls || !cls->is_constant() || !PyType_Check(cls->obj.ptr()) ||
      !PyType_IsSubtype(as_type(cls->obj), as_type(plain)))
    unsupported("Tensor.as_subclass() of other than a torch.Tensor subclass");
  static PyObject* const dispatch_name = PyUnicode_InternFromString("__torch_dispatch__");  // immortal once interned
  PyObject* dispatch = _PyType_Lookup(as_type(cls->obj), dispatch_name);
  if (dispatch && dispatch != _PyType_Lookup(as_type(plain), dispatch_name))
    unsupported("Tensor.as_subclass() of a class with __torch_dispatch__ (a wrapper subclass)");
  return subclass_alias(tensor, cls->obj);
}

// An attribute a tensor's subclass writes in Python (a method, a property) shadows torch.Tensor's:
// the method bound to the tensor, the property's getter run in the trace. Null for others.
ValuePtr Tracer::subclass_attribute(const ValuePtr& tensor, const std::string& name) {
  static Ref& plain = *new Ref(import_attr("torch", "Tensor"));  // never freed: outlives the interpreter
  Ref attr_name = check(PyUnicode_FromString(name.c_str()));
  PyObject* mro = as_type(tensor->cls)->tp_mro;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); ++i) {
    PyObject* klass = PyTuple_GET_ITEM(mro, i);
    if (klass == plain.ptr()) return nullptr;  // torch.Tensor's own attributes: the tensor's
    PyObject* found = PyDict_GetItemWithError(as_type(klass)->tp_dict, attr_name.ptr());  // borrowed
    if (!found) {
      if (PyErr_Occurred()) throw PythonError();
      continue;
    }
    if (PyFunction_Check(found)) {
      auto method = std::make_shared<Value>();
      method->kind = ValueKind::UserMethod;
      method->obj = Ref::borrow(found);
      method->name = name;
      method->items = {tensor};
      return method;
    }
    if (PyObject_TypeCheck(found, &PyProperty_Type)) {
      Ref getter = check(PyObject_GetAttrString(found, "fget"));
      if (PyFunction_Check(getter.ptr())) return inline_call(getter, {tensor}, {});
    }
    if (PyObject_TypeCheck(found, &PyStaticMethod_Type) || PyObject_TypeCheck(found, &PyClassMethod_Type))
      return load_attr(Value::constant(tensor->cls), name);
    if (name.starts_with("__")) return nullptr;
    return Value::constant(Ref::borrow(found));  // a class-level constant (the class is fixed by the tensor guards)
  }
  return nullptr;
}

}  // namespace cdynamo::interp
