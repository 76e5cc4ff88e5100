// Numbers only the data gives (item(), tolist() where they stay in the graph) passed to torch's
// Python entry points that read them as Python numbers: tensor indexing and torch.tensor/new_tensor,
// traced through stand-ins (_polyfills.torch_calls) that take them. Assumes capture_scalar_outputs.
#include <algorithm>
#include <functional>

#include "common/error.h"
#include "common/py_import.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {

namespace {

bool fake_answers(const char* question, const ValuePtr& part) {
  return part->is_tensor() && !part->cls &&
         PyObject_IsTrue(call_helper("cdynamo._polyfills", question, {part->fake}).ptr()) == 1;
}

// A 0-d integer tensor as an index: eager reads its item(). The rank is asked first, in C++, so
// that the usual index tensors cost no Python call.
bool is_zero_dim_index(const ValuePtr& part) {
  if (!part->is_tensor() || part->cls) return false;
  Ref rank = check(PyObject_GetAttrString(part->fake.ptr(), "ndim"));
  return PyLong_AsLong(rank.ptr()) == 0 && fake_answers("is_integer_index_tensor", part);
}

bool holds_symbolic_constant(const ValuePtr& part) {
  return part->is_fully_constant() && graph::holds_symbolic(part->as_python_constant().ptr());
}

// Nested lists or tuples of numbers and 0-d tensors, at least one tensor among them.
bool holds_zero_dim_tensors(const ValuePtr& data) {
  bool found = false;
  std::function<bool(const ValuePtr&)> leaves_ok = [&](const ValuePtr& item) {
    if (item->kind == ValueKind::List || item->kind == ValueKind::Tuple) {
      for (const ValuePtr& inner : item->items)
        if (!leaves_ok(inner)) return false;
      return true;
    }
    if (item->is_tensor() && !item->cls) {
      Ref rank = check(PyObject_GetAttrString(item->fake.ptr(), "ndim"));
      found = found || PyLong_AsLong(rank.ptr()) == 0;
      return PyLong_AsLong(rank.ptr()) == 0;
    }
    return item->is_constant() && (PyLong_Check(item->obj.ptr()) || PyFloat_Check(item->obj.ptr()));
  };
  return leaves_ok(data) && found;
}

std::vector<ValuePtr> parts_of(const ValuePtr& key) {
  return key->kind == ValueKind::Tuple ? key->items : std::vector<ValuePtr>{key};
}

}  // namespace

// A key of ints, slices, None, ... and index tensors or masks, holding an int only the data gives
// (or, under capture_scalar_outputs, a 0-d integer tensor, which eager reads as its item(): a
// view, or a select before the advanced indexing of the other index tensors and masks): indexed
// by the stand-in, through select() and slices, which take such an int (torch's indexing does not).
// With `stored`, the assignment container[key] = stored, into those views.
ValuePtr Tracer::index_by_unbacked_ints(const ValuePtr& container, const ValuePtr& key, const ValuePtr& stored) {
  std::vector<ValuePtr> parts = parts_of(key);
  const bool reads_items = capture_scalar_outputs && std::any_of(parts.begin(), parts.end(), is_zero_dim_index);
  if (!reads_items && std::none_of(parts.begin(), parts.end(), holds_symbolic_constant)) return nullptr;
  auto indexable = [](const ValuePtr& part) { return part->is_fully_constant() || fake_answers("is_index_tensor", part); };
  if (!std::all_of(parts.begin(), parts.end(), indexable)) return nullptr;
  Ref shape = check(PyTuple_New(static_cast<Py_ssize_t>(parts.size())));  // index tensors as slices
  for (size_t i = 0; i < parts.size(); ++i) {
    if (reads_items && is_zero_dim_index(parts[i])) parts[i] = call_value(load_attr(parts[i], "item"), {}, {});
    Ref part = parts[i]->is_fully_constant() ? parts[i]->as_python_constant() : check(PySlice_New(nullptr, nullptr, nullptr));
    PyTuple_SET_ITEM(shape.ptr(), static_cast<Py_ssize_t>(i), part.release());
  }
  Ref needs_views = call_helper("cdynamo._polyfills", "needs_index_by_views", {shape});
  if (PyObject_IsTrue(needs_views.ptr()) != 1) return nullptr;
  static Ref& index_by_views = *new Ref(import_attr("cdynamo._polyfills", "index_by_views_"));  // never freed:
  static Ref& store_by_views = *new Ref(import_attr("cdynamo._polyfills", "store_by_views_"));  // outlive the interpreter
  ValuePtr read_key = key->kind == ValueKind::Tuple ? Value::sequence(ValueKind::Tuple, std::move(parts)) : parts[0];
  if (stored) return inline_call(store_by_views, {container, read_key, stored}, {});
  return inline_call(index_by_views, {container, read_key}, {});
}

// torch.tensor(data), torch.as_tensor(data), t.new_tensor(data), t.new(data) with data nested lists
// of numbers some of which only the data gives: each number a 0-d tensor, stacked (torch.tensor
// would need their values). `self` is the tensor of the methods, null for the functions.
// Data of 0-d tensors (REINFORCE's torch.tensor([[R]]) for R in returns) is read the same way:
// each element a copy of its tensor, in the dtype torch.tensor infers from them.
ValuePtr Tracer::tensor_of_unbacked_numbers(const ValuePtr& self, const std::vector<ValuePtr>& args,
                                            const graph::KwArgs& kwargs) {
  if (args.empty() || !args[0]->is_sequence()) return nullptr;
  if (holds_zero_dim_tensors(args[0])) {
    std::vector<ValuePtr> stand_in_args(args.begin(), args.end());
    if (self) stand_in_args.insert(stand_in_args.begin(), self);
    Ref stand_in = import_attr("cdynamo._polyfills", self ? "new_tensor_of_scalar_tensors_" : "tensor_of_scalar_tensors_");
    return inline_call(stand_in, std::move(stand_in_args), kwargs);
  }
  if (!holds_symbolic_constant(args[0])) return nullptr;
  Ref holds = call_helper("cdynamo._polyfills", "holds_unbacked_numbers", {args[0]->as_python_constant()});
  if (PyObject_IsTrue(holds.ptr()) != 1) return nullptr;
  std::vector<ValuePtr> stand_in_args(args.begin(), args.end());
  if (self) stand_in_args.insert(stand_in_args.begin(), self);
  Ref stand_in = import_attr("cdynamo._polyfills", self ? "new_tensor_of_numbers_" : "tensor_of_numbers_");
  return inline_call(stand_in, std::move(stand_in_args), kwargs);
}

// t.tolist() under capture_scalar_outputs: nested lists of each element's item(), unbacked
// numbers in the graph. The sizes must be known to the trace (a list's length is Python's).
ValuePtr Tracer::tensor_tolist(const ValuePtr& tensor) {
  Ref shape = check(PyObject_GetAttrString(tensor->fake.ptr(), "shape"));
  const Py_ssize_t rank = PyTuple_GET_SIZE(shape.ptr());
  if (rank == 0) return call_value(load_attr(tensor, "item"), {}, {});
  for (Py_ssize_t d = 0; d < rank; ++d)
    if (!PyLong_CheckExact(PyTuple_GET_ITEM(shape.ptr(), d)))
      unsupported("Tensor.tolist() of a tensor whose size the data or a symbol decides");
  Ref numel = check(PyObject_CallMethod(tensor->fake.ptr(), "numel", nullptr));
  if (PyLong_AsLongLong(numel.ptr()) > 4096) unsupported("Tensor.tolist() of more than 4096 elements (each one a number of the graph)");
  const long length = PyLong_AsLong(PyTuple_GET_ITEM(shape.ptr(), 0));
  std::vector<ValuePtr> rows;
  for (long k = 0; k < length; ++k) {
    subscript(tensor, Value::constant(check(PyLong_FromLong(k))));
    rows.push_back(tensor_tolist(pop()));
  }
  return Value::sequence(ValueKind::List, std::move(rows));
}

}  // namespace cdynamo::interp
