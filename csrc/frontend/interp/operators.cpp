// Python operators on traced values: truth, arithmetic, comparison, subscripts, unpacking
// (iteration: iteration.cpp). Constants fold at trace time; anything touching a tensor becomes a graph node.
#include <tuple>
#include "common/error.h"
#include "common/py_import.h"
#include "common/py_types.h"
#include "frontend/interp/tracer.h"
#include "frontend/interp/traced_keys.h"

namespace cdynamo::interp {
namespace {

bool involves_tensor(const ValuePtr& value, WalkPath& path) {
  if (value->is_tensor()) return true;
  if (!value->is_sequence()) return false;
  PathStep step(path, value.get(), "data");
  if (step.cycle()) return false;  // back at a list being looked at: nothing new below
  for (const auto& item : value->items)
    if (involves_tensor(item, path)) return true;
  return false;
}

bool involves_tensor(const ValuePtr& value) {
  WalkPath path;
  return involves_tensor(value, path);
}

std::string operator_name(Handle op) {
  Ref name = steal(PyObject_GetAttrString(op.ptr(), "__name__"));
  if (!name) {
    PyErr_Clear();
    return "operator";
  }
  return "operator." + to_std_string(name);
}

// The special methods behind an operator: (forward, reflected); an in-place form tries its own
// first, then falls back to the plain operator's pair.
struct OperatorMethods {
  const char* inplace;
  const char* forward;
  const char* reflected;
};

const OperatorMethods* operator_methods(const std::string& what) {
  static const std::pair<const char*, OperatorMethods> table[] = {
      {"add", {nullptr, "__add__", "__radd__"}},       {"sub", {nullptr, "__sub__", "__rsub__"}},
      {"mul", {nullptr, "__mul__", "__rmul__"}},       {"matmul", {nullptr, "__matmul__", "__rmatmul__"}},
      {"truediv", {nullptr, "__truediv__", "__rtruediv__"}}, {"floordiv", {nullptr, "__floordiv__", "__rfloordiv__"}},
      {"mod", {nullptr, "__mod__", "__rmod__"}},       {"pow", {nullptr, "__pow__", "__rpow__"}},
      {"and_", {nullptr, "__and__", "__rand__"}},      {"or_", {nullptr, "__or__", "__ror__"}},
      {"xor", {nullptr, "__xor__", "__rxor__"}},       {"lshift", {nullptr, "__lshift__", "__rlshift__"}},
      {"rshift", {nullptr, "__rshift__", "__rrshift__"}}, {"iadd", {"__iadd__", "__add__", "__radd__"}},
      {"isub", {"__isub__", "__sub__", "__rsub__"}},   {"imul", {"__imul__", "__mul__", "__rmul__"}},
      {"ior", {"__ior__", "__or__", "__ror__"}},       {"iand", {"__iand__", "__and__", "__rand__"}},
      {"lt", {nullptr, "__lt__", "__gt__"}},           {"le", {nullptr, "__le__", "__ge__"}},
      {"gt", {nullptr, "__gt__", "__lt__"}},           {"ge", {nullptr, "__ge__", "__le__"}},
      {"eq", {nullptr, "__eq__", "__eq__"}},           {"ne", {nullptr, "__ne__", "__ne__"}},
  };
  if (!what.starts_with("operator.")) return nullptr;
  std::string name = what.substr(9);
  for (const auto& [op, methods] : table)
    if (name == op) return &methods;
  return nullptr;
}

// An instance whose operators are its class's Python methods or object's defaults (identity).
bool is_object(const ValuePtr& value) {
  return value->kind == ValueKind::NewObject || value->kind == ValueKind::Object || value->kind == ValueKind::NNModule;
}

}  // namespace

// A list or dict subclass the trace made whose operator is its builtin base's (list.__add__,
// list.__iadd__, dict.__eq__): the operator on the contents it holds, as the base computes it
// (a new plain list; `+=` extends the object itself). Null when it is not such a method.
ValuePtr Tracer::storage_operator(const char* name, const char* forward, bool reflected, const ValuePtr& self,
                                  const ValuePtr& other, PyObject* found) {
  if (self->kind != ValueKind::NewObject || self->items.size() < 2 || !self->items[1] || !found) return nullptr;
  const ValuePtr& storage = self->items[1];
  PyTypeObject* base = storage->kind == ValueKind::List ? &PyList_Type : &PyDict_Type;
  Ref key = interned(name);
  if (_PyType_Lookup(base, key.ptr()) != found) return nullptr;
  const std::string method = name;
  if (method == "__iadd__" && storage->kind == ValueKind::List) {
    call_container_method(storage, "extend", {other}, {});
    return self;
  }
  if (method != forward && !reflected) return nullptr;  // other in-place forms
  // operator.add for __add__ and __radd__ alike (the operands swapped for the reflected one).
  const std::string op_name = std::string(forward).substr(2, std::string(forward).size() - 4);
  static Ref& operator_module = *new Ref(check(PyImport_ImportModule("operator")));  // never freed: outlives the interpreter
  Ref op = steal(PyObject_GetAttrString(operator_module.ptr(), op_name.c_str()));
  if (!op) {
    PyErr_Clear();
    return nullptr;
  }
  return call_value(Value::constant(op), reflected ? std::vector<ValuePtr>{other, storage} : std::vector<ValuePtr>{storage, other}, {});
}

ValuePtr Tracer::object_operator(const std::string& what, const ValuePtr& lhs, const ValuePtr& rhs) {
  if (!is_object(lhs) && !is_object(rhs)) return nullptr;
  const OperatorMethods* methods = operator_methods(what);
  if (!methods) return nullptr;
  auto not_implemented = [](const ValuePtr& result) {
    return result->obj && result->obj.ptr() == Py_NotImplemented;  // a constant, or the builtin read as a global
  };
  // Python's order: the in-place method, then lhs.__op__, then rhs.__rop__ (first when rhs's
  // type is a proper subclass of lhs's that overrides it). Only methods written in Python run.
  Ref lhs_type = type_of(lhs), rhs_type = type_of(rhs);
  bool rhs_first = lhs_type.ptr() != rhs_type.ptr() && PyType_Check(rhs_type.ptr()) && PyType_Check(lhs_type.ptr()) &&
                   PyType_IsSubtype(as_type(rhs_type), as_type(lhs_type));
  std::vector<std::tuple<ValuePtr, const char*, bool>> attempts;  // (self, method, whether it is rhs's)
  if (methods->inplace) attempts.emplace_back(lhs, methods->inplace, false);
  if (rhs_first) attempts.emplace_back(rhs, methods->reflected, true);
  attempts.emplace_back(lhs, methods->forward, false);
  if (!rhs_first) attempts.emplace_back(rhs, methods->reflected, true);
  bool any_python = false;
  for (const auto& [self, name, reflected] : attempts) {
    Ref method = python_special_method(self, name);
    if (!method) {
      Ref key = check(PyUnicode_FromString(name));
      Ref type = type_of(self);
      // A C method (other than object's defaults) would read state the trace does not know.
      if (is_object(self) && PyType_Check(type.ptr())) {
        PyObject* found = _PyType_Lookup(as_type(type), key.ptr());
        PyObject* object_default = _PyType_Lookup(&PyBaseObject_Type, key.ptr());
        if (ValuePtr result = storage_operator(name, methods->forward, reflected, self, reflected ? lhs : rhs, found))
          return result;
        if (found && found != object_default)
          unsupported(what + " on a " + self->describe() + (PyFunction_Check(found) ? " (its " + std::string(name) + " is library code, not traced)"
                                                                                    : " (a builtin " + std::string(name) + ")"));
      }
      continue;
    }
    any_python = true;
    ValuePtr other = self == lhs ? rhs : lhs;
    ValuePtr result = inline_call(method, {self, other}, {});
    if (!not_implemented(result)) return result;
  }
  // == and != fall back to identity, as object's own methods do (the other side being an
  // object too, or a builtin constant whose __eq__ declines a foreign object).
  if (what == "operator.eq" || what == "operator.ne") {
    auto declines = [](const ValuePtr& v) {
      if (is_object(v)) return true;
      if (!v->is_constant()) return false;
      PyObject* o = v->obj.ptr();
      return o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) ||
             PyUnicode_CheckExact(o) || PyBytes_CheckExact(o);
    };
    if (!declines(lhs) || !declines(rhs)) return nullptr;
    bool same = lhs == rhs || (lhs->obj && rhs->obj && lhs->obj.ptr() == rhs->obj.ptr());
    return Value::constant(Ref::borrow((same == (what == "operator.eq")) ? Py_True : Py_False));
  }
  if (any_python) raise(PyExc_TypeError, "unsupported operand type(s) for " + what);
  return nullptr;
}

bool Tracer::truth_value(const ValuePtr& value) {
  switch (value->kind) {
    case ValueKind::Constant: {
      int truth = PyObject_IsTrue(value->obj.ptr());
      if (truth < 0) graph::rethrow_trace_error();  // a symbolic bool the data decides
      return truth;
    }
    case ValueKind::Tuple:
    case ValueKind::List:
    case ValueKind::Dict: return !value->items.empty();
    case ValueKind::Set: return PySet_GET_SIZE(value->obj.ptr()) > 0;
    case ValueKind::Tensor:
      unsupported("branching on a tensor's value (if/while/and/or on a tensor) depends on its data; "
                  "use torch.where, or move the branch out of the compiled function");
    case ValueKind::PyModule:
    case ValueKind::NNModule:
    case ValueKind::TensorMethod:
    case ValueKind::UserMethod:
    case ValueKind::Function:
    case ValueKind::Generator: return true;
    case ValueKind::NewObject:
    case ValueKind::Object: {
      if (value->kind == ValueKind::Object && value->source && PyDict_Check(value->obj.ptr()) &&
          !python_special_method(value, "__len__") && !python_special_method(value, "__bool__")) {
        // A dict from the frame (a module's hook table): empty or not, guarded on its length.
        value->source->manager(*guards_).add_length_check(PyDict_GET_SIZE(value->obj.ptr()));
        return PyDict_GET_SIZE(value->obj.ptr()) > 0;
      }
      // bool(obj): __bool__, else __len__, else True; Python ones are traced, C ones would read
      // state the guards do not cover.
      for (const char* name : {"__bool__", "__len__"}) {
        if (Ref method = python_special_method(value, name)) {
          DepthCount level(value_recursion_);
          enter_value_recursion("truth values from __bool__");
          return truth_value(inline_call(method, {value}, {}));
        }
        Ref key = check(PyUnicode_FromString(name));
        if (value->kind == ValueKind::NewObject) {
          if (value->items.size() > 1 && value->items[1]) return !value->items[1]->items.empty();
          continue;
        }
        if (_PyType_Lookup(Py_TYPE(value->obj.ptr()), key.ptr())) unsupported("truth value of a " + value->describe());
      }
      return true;
    }
    default: unsupported("truth value of a " + value->describe());
  }
}

namespace {

ValuePtr as_sequence_of_constants(const ValuePtr& value) {
  if (!value->is_constant() || !(PyList_CheckExact(value->obj.ptr()) || PyTuple_CheckExact(value->obj.ptr()))) return value;
  Ref items = check(PySequence_Fast(value->obj.ptr(), "a sequence"));
  std::vector<ValuePtr> values;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items.ptr()); ++i)
    values.push_back(Value::constant(Ref::borrow(PySequence_Fast_GET_ITEM(items.ptr(), i))));
  return Value::sequence(PyList_CheckExact(value->obj.ptr()) ? ValueKind::List : ValueKind::Tuple, std::move(values));
}

}  // namespace

void Tracer::binary_op(Handle op, const char* /*symbol*/, ValuePtr lhs, ValuePtr rhs) {
  std::string what = operator_name(op);
  // Sequence arithmetic on traced sequences (tensors inside them included): concatenation and
  // repetition, done here rather than as graph ops on lists.
  bool is_add = what == "operator.add" || what == "operator.iadd";
  bool is_mul = what == "operator.mul" || what == "operator.imul";
  if (is_add && lhs->is_sequence() != rhs->is_sequence()) {
    // A constant list or tuple (a folded call's result: sum(lists, [])) joins a traced one as a
    // sequence of constants; the left one only where the result is new (not `+=`, which would
    // change the constant's own object).
    rhs = as_sequence_of_constants(rhs);
    if (!what.starts_with("operator.i")) lhs = as_sequence_of_constants(lhs);
  }
  if (is_add && lhs->is_sequence() && rhs->is_sequence() && lhs->kind == rhs->kind) {
    if (what == "operator.iadd" && lhs->kind == ValueKind::List) {
      if (!trace_owned(lhs)) unsupported("extending a list passed into the function (a side effect)");
      lhs->items.insert(lhs->items.end(), rhs->items.begin(), rhs->items.end());
      push(lhs);
      return;
    }
    std::vector<ValuePtr> items = lhs->items;
    items.insert(items.end(), rhs->items.begin(), rhs->items.end());
    push(Value::sequence(lhs->kind, std::move(items)));
    return;
  }
  // A symbolic count or a symbol formatted into text (`[0] * n`, `"%d" % n`): the value now.
  auto is_text = [](const ValuePtr& v) { return v->is_constant() && (PyUnicode_Check(v->obj.ptr()) || PyBytes_Check(v->obj.ptr())); };
  if ((is_mul && (lhs->is_sequence() || rhs->is_sequence())) || is_text(lhs)) {
    if (rhs->is_fully_constant() && graph::holds_symbolic(rhs->as_python_constant().ptr()))
      rhs = Value::constant(graph::specialize_all(rhs->as_python_constant()));
    if (lhs->is_constant() && graph::is_symbolic(lhs->obj.ptr())) lhs = Value::constant(graph::specialize(lhs->obj));
  }
  const bool sequence_times_int = lhs->is_sequence() && rhs->is_constant() && PyLong_CheckExact(rhs->obj.ptr());
  const bool int_times_sequence = rhs->is_sequence() && lhs->is_constant() && PyLong_CheckExact(lhs->obj.ptr());
  if (is_mul && (sequence_times_int || int_times_sequence)) {
    const ValuePtr& sequence = sequence_times_int ? lhs : rhs;
    long count = PyLong_AsLong((sequence_times_int ? rhs : lhs)->obj.ptr());
    if (count == -1 && PyErr_Occurred()) throw PythonError();
    std::vector<ValuePtr> items;
    for (long i = 0; i < count; ++i) items.insert(items.end(), sequence->items.begin(), sequence->items.end());
    if (what == "operator.imul" && sequence_times_int && lhs->kind == ValueKind::List) {
      // lst *= n changes lst itself: every reference to it sees the change.
      if (!trace_owned(lhs)) unsupported("repeating a list passed into the function in place (a side effect)");
      lhs->items = std::move(items);
      push(lhs);
      return;
    }
    push(Value::sequence(sequence->kind, std::move(items)));
    return;
  }
  if (involves_tensor(lhs) || involves_tensor(rhs)) {
    if (is_constant_array(lhs)) lhs = array_tensor(lhs);  // x * table: the array's values, as torch converts it
    if (is_constant_array(rhs)) rhs = array_tensor(rhs);
    if (ValuePtr overridden = operator_override(op, lhs, rhs, what)) {
      push(overridden);
      return;
    }
    if (!lhs->is_tensor() && what.starts_with("operator.i") && what != "operator.is_") {
      // `n += t` with n a number: n has no in-place form, so Python computes n + t (and the
      // graph must not hold an augmented assignment to a literal).
      static Ref& plain_ops = *new Ref(call_helper("cdynamo._trace_support", "inplace_to_plain", {}));  // never freed: outlives the interpreter
      if (PyObject* plain = PyDict_GetItem(plain_ops.ptr(), op.ptr())) {
        push(graph_.call("call_function", Ref::borrow(plain), {lhs, rhs}, {}, operator_name(Ref::borrow(plain))));
        return;
      }
    }
    push(graph_.call("call_function", op, {lhs, rhs}, {}, what));
    return;
  }
  if ((what == "operator.or_" || what == "operator.ior") && lhs->kind == ValueKind::Dict && rhs->kind == ValueKind::Dict &&
      !lhs->dict_type && !rhs->dict_type) {
    // d | other: a new dict with other's items last; d |= other updates d itself.
    ValuePtr target = what == "operator.ior" ? lhs : Value::dict(lhs->keys, lhs->items);
    if (what == "operator.ior" && !trace_owned(lhs)) unsupported("|= on a dict passed into the function (a side effect)");
    for (size_t i = 0; i < rhs->keys.size(); ++i) target->dict_set(rehold_key(rhs->keys[i], target->keys), rhs->items[i]);
    push(target);
    return;
  }
  if (lhs->kind == ValueKind::Set && rhs->is_fully_constant() && what.starts_with("operator.i")) {
    // s |= t changes s itself: every reference to it sees the change.
    Ref result = checked(PyObject_CallFunctionObjArgs(op.ptr(), lhs->obj.ptr(), rhs->as_python_constant().ptr(), nullptr));
    if (result.ptr() != lhs->obj.ptr()) unsupported(what + " on a set");
    push(lhs);
    return;
  }
  refresh_view(*lhs);
  refresh_view(*rhs);
  if ((lhs->kind == ValueKind::List && lhs->view_type) || (rhs->kind == ValueKind::List && rhs->view_type)) {
    // A dict view (keys() == {...}, a.keys() & b.keys()): the real view's answer, from constants.
    if (!lhs->is_fully_constant() || !rhs->is_fully_constant())
      unsupported(what + " of a dict view holding values the trace computes");
    auto as_view = [](const ValuePtr& v) {
      Ref object = v->as_python_constant();
      if (v->kind != ValueKind::List || !v->view_type) return object;
      return call_helper("cdynamo._trace_support", "as_dict_view", {object, v->view_type});
    };
    Ref result = checked(PyObject_CallFunctionObjArgs(op.ptr(), as_view(lhs).ptr(), as_view(rhs).ptr(), nullptr));
    if (PySet_CheckExact(result.ptr())) push(new_set(std::move(result)));
    else push(Value::constant(std::move(result)));
    return;
  }
  // A list on the left is folded only where the result is a new bool, not a list (a list
  // result must stay a List value: it can be changed in place).
  const bool comparison = what == "operator.eq" || what == "operator.ne" || what == "operator.lt" ||
                          what == "operator.le" || what == "operator.gt" || what == "operator.ge";
  if (lhs->is_fully_constant() && rhs->is_fully_constant() && (lhs->kind != ValueKind::List || comparison)) {
    Ref result = checked(PyObject_CallFunctionObjArgs(op.ptr(), lhs->as_python_constant().ptr(),
                                                      rhs->as_python_constant().ptr(), nullptr));
    if (PySet_CheckExact(result.ptr())) push(new_set(std::move(result)));
    else push(Value::constant(std::move(result)));
    return;
  }
  if (ValuePtr result = object_operator(what, lhs, rhs)) {
    push(result);
    return;
  }
  if (comparison && what != "operator.eq" && what != "operator.ne")
    if (ValuePtr ordered = sequence_order(op, lhs, rhs)) {
      push(ordered);
      return;
    }
  unsupported(what + " between a " + lhs->describe() + " and a " + rhs->describe());
}

// Python's order of two tuples (or lists) the trace holds: the first pair of items that are
// neither the same object nor equal constants decides, else the lengths (sorted(layers.items()):
// the names decide, the modules are never compared). Null where that pair is not two constants.
ValuePtr Tracer::sequence_order(Handle op, const ValuePtr& lhs, const ValuePtr& rhs) {
  if (lhs->kind != rhs->kind || (lhs->kind != ValueKind::Tuple && lhs->kind != ValueKind::List)) return nullptr;
  const size_t common = std::min(lhs->items.size(), rhs->items.size());
  for (size_t i = 0; i < common; ++i) {
    const ValuePtr& a = lhs->items[i];
    const ValuePtr& b = rhs->items[i];
    if (a == b || (a->kind == b->kind && a->obj && a->obj.ptr() == b->obj.ptr() && !a->is_tensor())) continue;
    if (!a->is_fully_constant() || !b->is_fully_constant()) return nullptr;
    Ref left = a->as_python_constant(), right = b->as_python_constant();
    int equal = PyObject_RichCompareBool(left.ptr(), right.ptr(), Py_EQ);
    check_status(equal);
    if (equal) continue;
    return Value::constant(checked(PyObject_CallFunctionObjArgs(op.ptr(), left.ptr(), right.ptr(), nullptr)));
  }
  Ref left_length = check(PyLong_FromSize_t(lhs->items.size())), right_length = check(PyLong_FromSize_t(rhs->items.size()));
  return Value::constant(checked(PyObject_CallFunctionObjArgs(op.ptr(), left_length.ptr(), right_length.ptr(), nullptr)));
}

void Tracer::unary_op(const char* name, ValuePtr operand) {
  static Ref& ops = *new Ref(call_helper("cdynamo._trace_support", "unary_operators", {}));  // never freed: outlives the interpreter
  PyObject* op = PyDict_GetItemString(ops.ptr(), name);
  if (!op) throw InternalError(std::string("unknown unary operator ") + name);
  if (operand->is_tensor()) {
    if (ValuePtr overridden = operator_override(op, operand, nullptr, std::string("operator.") + name)) {
      push(overridden);
      return;
    }
    push(graph_.call("call_function", op, {operand}, {}, std::string("operator.") + name));
    return;
  }
  if (operand->kind == ValueKind::NewObject || operand->kind == ValueKind::Object) {
    // -v, +v, ~v of an object whose class writes __neg__, __pos__, __invert__ in Python.
    const std::string method = std::string("__") + name + "__";
    if (Ref special = python_special_method(operand, method.c_str())) {
      push(inline_call(special, {operand}, {}));
      return;
    }
  }
  if (!operand->is_fully_constant()) unsupported(std::string("unary ") + name + " of a " + operand->describe());
  push(Value::constant(check(PyObject_CallOneArg(op, operand->as_python_constant().ptr()))));
}

void Tracer::compare_op(int op, ValuePtr lhs, ValuePtr rhs) {
  static Ref& ops = *new Ref(call_helper("cdynamo._trace_support", "compare_operators", {}));  // never freed: outlives the interpreter
  if (op < 0 || op >= PyTuple_GET_SIZE(ops.ptr())) unsupported("unknown comparison");
  binary_op(PyTuple_GET_ITEM(ops.ptr(), op), "comparison", std::move(lhs), std::move(rhs));
}

void Tracer::subscript(ValuePtr container, ValuePtr key) {
  static Ref& getitem = *new Ref(import_attr("operator", "getitem"));  // never freed: outlives the interpreter
  if (is_frame_globals(container)) {
    push(globals_item(key));
    return;
  }
  if (container->is_tensor()) {
    if (subclass_dispatch_ && holds_subclass_tensor(container, {key}, {})) {
      static Ref& method = *new Ref(check(PyObject_GetAttrString(import_attr("torch", "Tensor").ptr(), "__getitem__")));  // never freed: outlives the interpreter
      if (ValuePtr overridden = torch_function_override(method, {container, key}, {})) {
        push(overridden);
        return;
      }
    }
    if (ValuePtr indexed = index_by_unbacked_ints(container, key)) {
      push(indexed);
      return;
    }
    std::vector<ValuePtr> operands{container, key};
    graph::KwArgs none;
    arrays_as_tensors(operands, none);  // t[:, indices] with a NumPy array of indices: its tensor
    push(graph_.call("call_function", getitem, std::move(operands), {}, "tensor indexing"));
    return;
  }
  // A size used as an index into Python data: specialised to its value (guarded).
  if (key->is_constant() && graph::is_symbolic(key->obj.ptr())) key = Value::constant(graph::specialize(key->obj));
  if (container->is_sequence() && key->is_constant()) {
    Py_ssize_t size = static_cast<Py_ssize_t>(container->items.size());
    if (PyLong_Check(key->obj.ptr())) {
      Py_ssize_t index = PyLong_AsSsize_t(key->obj.ptr());
      if (index < 0) index += size;
      if (index < 0 || index >= size)
        raise(PyExc_IndexError, std::string(container->kind == ValueKind::List ? "list" : "tuple") + " index out of range");
      push(container->items[index]);
      return;
    }
    if (PySlice_Check(key->obj.ptr())) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(key->obj.ptr(), &start, &stop, &step) < 0) throw PythonError();
      Py_ssize_t length = PySlice_AdjustIndices(size, &start, &stop, step);
      std::vector<ValuePtr> items;
      for (Py_ssize_t i = 0, at = start; i < length; ++i, at += step) items.push_back(container->items[at]);
      push(Value::sequence(container->kind, std::move(items)));
      return;
    }
  }
  if (container->kind == ValueKind::Dict) {
    int at = dict_find(container, key);
    if (at < 0 && container->default_factory &&
        !(container->default_factory->is_constant() && container->default_factory->obj.ptr() == Py_None)) {
      // A defaultdict the trace made: the factory's value is stored under the key, as __missing__ does.
      ValuePtr made = call_value(container->default_factory, {}, {});
      container->dict_set(container_key(key, container->keys, "a dict key"), made);
      push(made);
      return;
    }
    if (at < 0) raise(PyExc_KeyError, key->is_constant() ? key->obj : Ref::borrow(Py_None));  // the key set is guarded: it raises at run time too
    push(container->items[at]);
    return;
  }
  if (Ref method = own_module_method(container, "__getitem__")) {  // a layer stack's own: traced
    push(inline_call(method, {container, key}, {}));
    return;
  }
  if (container->kind == ValueKind::NNModule && key->is_constant() && PySlice_Check(key->obj.ptr())) {
    // A slice of a ModuleList/Sequential makes a new container of the same children: the trace
    // keeps the children (with their sources) in a list, which iterates and indexes the same.
    std::vector<ValuePtr> children = iterate(container);
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(key->obj.ptr(), &start, &stop, &step) < 0) throw PythonError();
    Py_ssize_t length = PySlice_AdjustIndices(static_cast<Py_ssize_t>(children.size()), &start, &stop, step);
    std::vector<ValuePtr> picked;
    for (Py_ssize_t i = 0, at = start; i < length; ++i, at += step) picked.push_back(children[at]);
    ValuePtr sliced = Value::sequence(ValueKind::List, std::move(picked));
    // The slice is an instance of the container's class (obj: what type() and isinstance see).
    // A Sequential's is callable (see call_value): Sequential's own forward, child by child; a
    // subclass with a forward of its own would run that, which the list cannot.
    static Ref& sequential = *new Ref(import_attr("torch.nn", "Sequential"));  // never freed: outlives the interpreter
    static Ref& sequential_forward = *new Ref(check(PyObject_GetAttrString(sequential.ptr(), "forward")));  // likewise
    int is_sequential = PyObject_IsInstance(container->obj.ptr(), sequential.ptr());
    check_status(is_sequential);
    PyTypeObject* type = Py_TYPE(container->obj.ptr());
    if (is_sequential) {
      Ref forward = check(PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "forward"));
      if (forward.ptr() != sequential_forward.ptr())
        unsupported(std::string("a slice of ") + type->tp_name + ", a Sequential with a forward of its own");
    }
    sliced->obj = Ref::borrow(reinterpret_cast<PyObject*>(type));
    push(sliced);
    return;
  }
  if (container->kind == ValueKind::NNModule && key->is_constant()) {
    // nn.Sequential / nn.ModuleList indexing: find the child's name to keep a source.
    Ref child = check(PyObject_GetItem(container->obj.ptr(), key->obj.ptr()));
    Ref modules = check(PyObject_GetAttrString(container->obj.ptr(), "_modules"));
    PyObject *name, *module;
    Py_ssize_t pos = 0;
    while (PyDict_Next(modules.ptr(), &pos, &name, &module))
      if (module == child.ptr()) {
        push(load_attr(container, to_std_string(name)));
        return;
      }
    // nn.ParameterDict / nn.ParameterList: a parameter, read as the attribute it is stored as.
    Ref parameters = check(PyObject_GetAttrString(container->obj.ptr(), "_parameters"));
    pos = 0;
    while (PyDict_Check(parameters.ptr()) && PyDict_Next(parameters.ptr(), &pos, &name, &module))
      if (module == child.ptr()) {
        push(load_attr(container, to_std_string(name)));
        return;
      }
    unsupported("indexing an nn.Module container produced a new module");
  }
  if (container->kind == ValueKind::Constant && is_identity_constant(container->obj) && key->is_fully_constant()) {
    // typing.List[int], Optional[Tensor]: type expressions, immutable, made now.
    push(Value::constant(checked(PyObject_GetItem(container->obj.ptr(), key->as_python_constant().ptr()))));
    return;
  }
  if (Ref method = python_special_method(container, "__getitem__")) {
    push(inline_call(method, {container, key}, {}));
    return;
  }
  if (container->kind == ValueKind::Object && key->is_constant())
    if (ValuePtr contents = dict_contents(container)) container = contents;  // a dict subclass: dict's own lookup
  if (container->kind == ValueKind::Dict) {
    int at = dict_find(container, key);
    if (at < 0) raise(PyExc_KeyError, key->is_constant() ? key->obj : Ref::borrow(Py_None));
    push(container->items[at]);
    return;
  }
  if (container->kind == ValueKind::NewObject && container->items.size() > 1 && container->items[1] &&
      container->items[1]->kind == ValueKind::List) {
    subscript(container->items[1], std::move(key));  // a list subclass: its list (a slice is a plain list)
    return;
  }
  if (container->kind == ValueKind::NewObject && container->items.size() > 1 && container->items[1]) {
    Ref getitem = check(PyObject_GetAttrString(reinterpret_cast<PyObject*>(&PyDict_Type), "__getitem__"));
    push(call_native_method(getitem, container, {key}, {}));
    return;
  }
  if (container->is_fully_constant() && key->is_fully_constant()) {
    push(Value::constant(checked(PyObject_GetItem(container->as_python_constant().ptr(), key->as_python_constant().ptr()))));
    return;
  }
  unsupported("indexing a " + container->describe() + " with a " + key->describe());
}

// list[slice] = items, as list_ass_subscript does: a plain slice is replaced by any number of
// items; an extended one (step != 1) takes exactly as many as it selects.
void Tracer::store_list_slice(const ValuePtr& list, Handle slice, std::vector<ValuePtr> items) {
  Py_ssize_t start, stop, step;
  if (PySlice_Unpack(slice.ptr(), &start, &stop, &step) < 0) raise_python_error();
  const Py_ssize_t length = PySlice_AdjustIndices(static_cast<Py_ssize_t>(list->items.size()), &start, &stop, step);
  std::vector<ValuePtr>& old_items = list->items;
  if (step == 1) {
    old_items.erase(old_items.begin() + start, old_items.begin() + start + length);
    old_items.insert(old_items.begin() + start, items.begin(), items.end());
    return;
  }
  if (static_cast<Py_ssize_t>(items.size()) != length)
    raise(PyExc_ValueError, "attempt to assign sequence of size " + std::to_string(items.size()) +
                                " to extended slice of size " + std::to_string(length));
  for (Py_ssize_t k = 0; k < length; ++k) old_items[static_cast<size_t>(start + k * step)] = items[static_cast<size_t>(k)];
}

void Tracer::store_subscript(ValuePtr container, ValuePtr key, ValuePtr value) {
  if (is_frame_globals(container) && key->is_constant() && PyUnicode_CheckExact(key->obj.ptr())) {
    store_global(to_std_string(key->obj), std::move(value));  // globals()[name] = value: a global store
    return;
  }
  static Ref& setitem = *new Ref(import_attr("operator", "setitem"));  // never freed: outlives the interpreter
  if (container->is_tensor()) {
    if (subclass_dispatch_ && holds_subclass_tensor(container, {key, value}, {})) {
      static Ref& method = *new Ref(check(PyObject_GetAttrString(import_attr("torch", "Tensor").ptr(), "__setitem__")));  // never freed: outlives the interpreter
      if (torch_function_override(method, {container, key, value}, {})) return;
    }
    if (index_by_unbacked_ints(container, key, value)) return;  // out[i, j + 1] = 5 with j from tolist()
    graph_.call("call_function", setitem, {container, key, value}, {}, "tensor item assignment", true);
    return;
  }
  if (container->kind == ValueKind::NewObject) {
    if (Ref method = python_special_method(container, "__setitem__")) {
      inline_call(method, {container, key, value}, {});
      return;
    }
    if (container->items.size() > 1 && container->items[1] && container->items[1]->kind == ValueKind::List) {
      store_subscript(container->items[1], std::move(key), std::move(value));
      return;
    }
    if (container->items.size() > 1 && container->items[1]) {
      Ref setitem = check(PyObject_GetAttrString(reinterpret_cast<PyObject*>(&PyDict_Type), "__setitem__"));
      call_native_method(setitem, container, {key, value}, {});
      return;
    }
  }
  if (container->kind == ValueKind::List && trace_owned(container) && key->is_constant() &&
      PyLong_Check(key->obj.ptr())) {
    Py_ssize_t size = static_cast<Py_ssize_t>(container->items.size());
    Py_ssize_t index = PyLong_AsSsize_t(key->obj.ptr());
    if (index < 0) index += size;
    if (index < 0 || index >= size) unsupported("list assignment index out of range");
    container->items[index] = value;
    return;
  }
  if (container->kind == ValueKind::List && trace_owned(container) && key->is_constant() &&
      PySlice_Check(key->obj.ptr())) {
    store_list_slice(container, key->obj, iterate(value));
    return;
  }
  if (container->kind == ValueKind::Dict && trace_owned(container)) {
    container->dict_set(container_key(key, container->keys, "a dict key"), value);
    return;
  }
  if (is_constant_array(container) && !container->source && key->is_fully_constant() && value->is_fully_constant()) {
    // An array numpy made in the trace (only the trace holds it): written now (RepVGG's identity kernel).
    check_status(PyObject_SetItem(container->obj.ptr(), key->as_python_constant().ptr(), value->as_python_constant().ptr()));
    return;
  }
  unsupported("item assignment on a " + container->describe() + " (a side effect on an object)");
}

void Tracer::delete_subscript(ValuePtr container, ValuePtr key) {
  if (container->kind == ValueKind::NewObject) {
    if (Ref method = python_special_method(container, "__delitem__")) {
      inline_call(method, {container, key}, {});
      return;
    }
    if (container->items.size() > 1 && container->items[1] && container->items[1]->kind == ValueKind::List)
      container = container->items[1];  // a list subclass: its list
  }
  if (container->kind == ValueKind::List && trace_owned(container) && key->is_constant() && PyLong_Check(key->obj.ptr())) {
    Py_ssize_t size = static_cast<Py_ssize_t>(container->items.size());
    Py_ssize_t index = PyLong_AsSsize_t(key->obj.ptr());
    if (index < 0) index += size;
    if (index < 0 || index >= size) raise(PyExc_IndexError, "list assignment index out of range");
    container->items.erase(container->items.begin() + index);
    return;
  }
  if (container->kind == ValueKind::List && trace_owned(container) && key->is_constant() && PySlice_Check(key->obj.ptr())) {
    Ref step = check(PyObject_GetAttrString(key->obj.ptr(), "step"));
    if (step.ptr() == Py_None || (PyLong_Check(step.ptr()) && PyLong_AsLong(step.ptr()) == 1)) {
      store_list_slice(container, key->obj, {});  // del a[i:j] is a[i:j] = []
      return;
    }
    // del a[::k]: the items the extended slice selects.
    Py_ssize_t start, stop, slice_step;
    if (PySlice_Unpack(key->obj.ptr(), &start, &stop, &slice_step) < 0) raise_python_error();
    Py_ssize_t length = PySlice_AdjustIndices(static_cast<Py_ssize_t>(container->items.size()), &start, &stop, slice_step);
    std::vector<bool> selected(container->items.size(), false);
    for (Py_ssize_t i = 0, at = start; i < length; ++i, at += slice_step) selected[static_cast<size_t>(at)] = true;
    std::vector<ValuePtr> kept;
    for (size_t i = 0; i < container->items.size(); ++i)
      if (!selected[i]) kept.push_back(container->items[i]);
    container->items = std::move(kept);
    return;
  }
  if (container->kind == ValueKind::Dict && trace_owned(container)) {
    int at = dict_find(container, key);
    if (at < 0) raise(PyExc_KeyError, key->is_constant() ? key->obj : Ref::borrow(Py_None));
    container->keys.erase(container->keys.begin() + at);
    container->items.erase(container->items.begin() + at);
    return;
  }
  unsupported("deleting an item of a " + container->describe() + " (a side effect on an object)");
}

}  // namespace cdynamo::interp
