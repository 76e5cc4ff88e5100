// Numbers only the data gives (item(), tolist() where they stay in the graph) passed to torch's
// Python entry points that read them as Python numbers: tensor indexing and torch.tensor/new_tensor,
// traced through stand-ins (_polyfills.torch_calls) that take them. Assumes capture_scalar_outputs.
#include <algorithm>

#include "common/error.h"
#include "common/py_import.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {

namespace {

bool fake_answers(const char* question, const ValuePtr& part) {
  return part->is_tensor() && !part->cls &&
         PyObject_IsTrue(call_helper("cdynamo._polyfills", question, {part->fake}).ptr()) == 1;
}

}  // namespace

// t[i] with i a 0-d integer tensor, alone or in a tuple: eager indexes by i.item(), as by an int
// (a view, or a select before the advanced indexing of other index tensors); here that item is
// an unbacked int in the graph (capture_scalar_outputs).
ValuePtr Tracer::integer_tensor_indices_as_items(const ValuePtr& key) {
  auto is_index_tensor = [](const ValuePtr& part) { return fake_answers("is_integer_index_tensor", part); };
  auto as_item = [&](const ValuePtr& part) { return is_index_tensor(part) ? call_value(load_attr(part, "item"), {}, {}) : part; };
  if (key->kind != ValueKind::Tuple) return as_item(key);
  if (std::none_of(key->items.begin(), key->items.end(), is_index_tensor)) return key;
  std::vector<ValuePtr> parts;
  for (const ValuePtr& part : key->items) parts.push_back(as_item(part));
  return Value::sequence(ValueKind::Tuple, std::move(parts));
}

// A key of ints, slices, None, ... and integer index tensors, holding an int only the data gives:
// indexed by the stand-in, through select() and slices, which take it (torch's indexing does not).
ValuePtr Tracer::index_by_unbacked_ints(const ValuePtr& container, ValuePtr key) {
  auto parts_of = [](const ValuePtr& k) { return k->kind == ValueKind::Tuple ? k->items : std::vector<ValuePtr>{k}; };
  auto indexable = [](const ValuePtr& part) { return part->is_fully_constant() || fake_answers("is_integer_indices", part); };
  std::vector<ValuePtr> parts = parts_of(key);
  if (!std::all_of(parts.begin(), parts.end(), indexable)) return nullptr;  // a mask: torch's own indexing
  if (capture_scalar_outputs) parts = parts_of(key = integer_tensor_indices_as_items(key));
  Ref shape = check(PyTuple_New(static_cast<Py_ssize_t>(parts.size())));  // index tensors as slices
  for (size_t i = 0; i < parts.size(); ++i) {
    Ref part;
    if (parts[i]->is_fully_constant()) part = parts[i]->as_python_constant();
    else part = check(PySlice_New(nullptr, nullptr, nullptr));
    PyTuple_SET_ITEM(shape.ptr(), static_cast<Py_ssize_t>(i), part.release());
  }
  Ref needs_views = call_helper("cdynamo._polyfills", "needs_index_by_views", {shape});
  if (PyObject_IsTrue(needs_views.ptr()) != 1) return nullptr;
  static Ref& index_by_views = *new Ref(import_attr("cdynamo._polyfills", "index_by_views_"));  // never freed: outlives the interpreter
  return inline_call(index_by_views, {container, key}, {});
}

// torch.tensor(data), torch.as_tensor(data), t.new_tensor(data), t.new(data) with data nested lists
// of numbers some of which only the data gives: each number a 0-d tensor, stacked (torch.tensor
// would need their values). `self` is the tensor of the methods, null for the functions.
ValuePtr Tracer::tensor_of_unbacked_numbers(const ValuePtr& self, const std::vector<ValuePtr>& args,
                                            const graph::KwArgs& kwargs) {
  if (args.empty() || !args[0]->is_sequence() || !args[0]->is_fully_constant()) return nullptr;
  Ref holds = call_helper("cdynamo._polyfills", "holds_unbacked_numbers", {args[0]->as_python_constant()});
  if (PyObject_IsTrue(holds.ptr()) != 1) return nullptr;
  std::vector<ValuePtr> stand_in_args(args.begin(), args.end());
  if (self) stand_in_args.insert(stand_in_args.begin(), self);
  Ref stand_in = import_attr("cdynamo._polyfills", self ? "new_tensor_of_numbers_" : "tensor_of_numbers_");
  return inline_call(stand_in, std::move(stand_in_args), kwargs);
}

}  // namespace cdynamo::interp
