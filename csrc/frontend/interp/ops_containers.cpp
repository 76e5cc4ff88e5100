// Opcode handlers that build, index and unpack tuples, lists, dicts, sets and slices.
// Assumes CPython 3.11/3.12 bytecode; the containers' methods are in containers.cpp.
#include <opcode.h>
#include "common/error.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {
namespace {

// slice(start, stop) of constant bounds (BINARY_SLICE, STORE_SLICE).
Ref constant_slice(const ValuePtr& start, const ValuePtr& stop) {
  return check(PySlice_New(start->obj.ptr(), stop->obj.ptr(), nullptr));
}

}  // namespace

bool Tracer::op_binary_subscr(const bytecode::Instruction&) {
  ValuePtr key = pop();
  subscript(pop(), key);
  return true;
}

bool Tracer::op_store_subscr(const bytecode::Instruction&) {
  ValuePtr key = pop();
  ValuePtr container = pop();
  ValuePtr value = pop();
  store_subscript(container, key, value);
  return true;
}

bool Tracer::op_delete_subscr(const bytecode::Instruction&) {
  ValuePtr key = pop();
  delete_subscript(pop(), std::move(key));
  return true;
}

bool Tracer::op_binary_slice(const bytecode::Instruction&) {
  ValuePtr stop = slice_bound(pop());
  ValuePtr start = slice_bound(pop());
  ValuePtr container = pop();
  subscript(container, Value::constant(constant_slice(start, stop)));
  return true;
}

// A slice bound: a constant, or a one-element integer tensor read as a number (what its __index__
// gives) where config.capture_scalar_outputs (or fullgraph=True) keeps it in the graph.
ValuePtr Tracer::slice_bound(const ValuePtr& part) {
  if (part->is_constant()) return part;
  if (part->is_tensor() && capture_scalar_outputs) {
    Ref numel = check(PyObject_CallMethod(part->fake.ptr(), "numel", nullptr));
    Ref floating = check(PyObject_CallMethod(part->fake.ptr(), "is_floating_point", nullptr));
    if (PyLong_Check(numel.ptr()) && PyLong_AsLong(numel.ptr()) == 1 && floating.ptr() == Py_False) {
      ValuePtr number = call_value(load_attr(part, "item"), {}, {});
      if (number->is_constant()) return number;
    }
  }
  unsupported("a slice with bounds the trace computes (a tensor's value: set config.capture_scalar_outputs, "
              "or compile with fullgraph=True, to keep it in the graph)");
}

bool Tracer::op_store_slice(const bytecode::Instruction&) {
  ValuePtr stop = slice_bound(pop());
  ValuePtr start = slice_bound(pop());
  ValuePtr container = pop();
  ValuePtr value = pop();
  store_subscript(container, Value::constant(constant_slice(start, stop)), value);
  return true;
}

bool Tracer::op_build_slice(const bytecode::Instruction& inst) {
  std::vector<ValuePtr> parts = pop_n(inst.arg);
  for (auto& part : parts) part = slice_bound(part);
  PyObject* step = inst.arg == 3 ? parts[2]->obj.ptr() : nullptr;
  push(Value::constant(check(PySlice_New(parts[0]->obj.ptr(), parts[1]->obj.ptr(), step))));
  return true;
}

bool Tracer::op_build_tuple(const bytecode::Instruction& inst) {
  push(Value::sequence(ValueKind::Tuple, pop_n(inst.arg)));
  return true;
}

bool Tracer::op_build_list(const bytecode::Instruction& inst) {
  push(Value::sequence(ValueKind::List, pop_n(inst.arg)));
  return true;
}

bool Tracer::op_list_to_tuple(const bytecode::Instruction&) {
  ValuePtr list = pop();
  if (!list->is_sequence()) unsupported("tuple() of a " + list->describe());
  push(Value::sequence(ValueKind::Tuple, list->items));
  return true;
}

Ref Tracer::hashable_constant(const ValuePtr& value, const char* what) {
  if (!value->is_fully_constant()) unsupported(std::string(what) + " that is a " + value->describe());
  // A size or number held as a symbol hashes by its value: specialised (guarded) to it.
  return graph::specialize_all(value->as_python_constant());
}

bool Tracer::op_build_set(const bytecode::Instruction& inst) {
  ValuePtr set = new_set(check(PySet_New(nullptr)));
  for (const auto& item : pop_n(inst.arg))
    if (PySet_Add(set->obj.ptr(), set_member(set, item).ptr()) < 0) raise_python_error();
  push(std::move(set));
  return true;
}

bool Tracer::op_set_add(const bytecode::Instruction& inst) {  // SET_ADD and SET_UPDATE
  ValuePtr item = pop();
  ValuePtr set = top(inst.arg);  // a copy: hashing an item may run other frames
  if (set->kind != ValueKind::Set) throw InternalError("SET_ADD without a set");
  std::vector<ValuePtr> items = inst.opcode == SET_ADD ? std::vector<ValuePtr>{item} : iterate(item);
  for (const auto& element : items)
    if (PySet_Add(set->obj.ptr(), set_member(set, element).ptr()) < 0) raise_python_error();
  return true;
}

bool Tracer::op_list_append(const bytecode::Instruction& inst) {
  ValuePtr item = pop();
  ValuePtr& list = top(inst.arg);
  if (list->kind != ValueKind::List || !trace_owned(list)) unsupported("appending to a list from outside the function");
  list->items.push_back(item);
  return true;
}

bool Tracer::op_list_extend(const bytecode::Instruction& inst) {
  ValuePtr iterable = pop();
  ValuePtr list = top(inst.arg);  // a copy: iterating a generator below runs other frames
  if (list->kind != ValueKind::List || !trace_owned(list)) unsupported("extending a list from outside the function");
  if (iterable->is_sequence()) {
    list->items.insert(list->items.end(), iterable->items.begin(), iterable->items.end());
  } else if (iterable->is_constant()) {
    Ref items = check(PySequence_Fast(iterable->obj.ptr(), "not iterable"));
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items.ptr()); ++i)
      list->items.push_back(Value::constant(Ref::borrow(PySequence_Fast_GET_ITEM(items.ptr(), i))));
  } else {
    // [*generator], [*iterator], [*obj]: whatever iterating it gives (a generator runs now).
    for (ValuePtr& item : iterate(iterable)) list->items.push_back(std::move(item));
  }
  return true;
}

bool Tracer::op_unpack_sequence(const bytecode::Instruction& inst) {
  unpack_sequence(pop(), inst.arg);
  return true;
}

bool Tracer::op_unpack_ex(const bytecode::Instruction& inst) {
  std::vector<ValuePtr> items = iterate(pop());
  size_t before = inst.arg & 0xFF, after = inst.arg >> 8;
  if (items.size() < before + after)
    raise(PyExc_ValueError, "not enough values to unpack (expected at least " + std::to_string(before + after) + ", got " +
                                std::to_string(items.size()) + ")");
  std::vector<ValuePtr> ordered(items.begin(), items.begin() + before);
  ordered.push_back(Value::sequence(ValueKind::List, std::vector<ValuePtr>(items.begin() + before, items.end() - after)));
  ordered.insert(ordered.end(), items.end() - after, items.end());
  for (auto it = ordered.rbegin(); it != ordered.rend(); ++it) push(*it);
  return true;
}

bool Tracer::op_build_map(const bytecode::Instruction& inst) {
  std::vector<ValuePtr> flat = pop_n(2 * inst.arg);
  ValuePtr dict = Value::dict({}, {});
  for (int i = 0; i < inst.arg; ++i) dict->dict_set(container_key(flat[2 * i], dict->keys, "a dict key"), flat[2 * i + 1]);
  push(std::move(dict));
  return true;
}

bool Tracer::op_build_const_key_map(const bytecode::Instruction& inst) {
  ValuePtr names = pop();
  std::vector<ValuePtr> values = pop_n(inst.arg);
  std::vector<Ref> keys;
  for (int i = 0; i < inst.arg; ++i) keys.push_back(Ref::borrow(PyTuple_GET_ITEM(names->obj.ptr(), i)));
  push(Value::dict(std::move(keys), std::move(values)));
  return true;
}

bool Tracer::op_dict_update(const bytecode::Instruction& inst) {  // DICT_UPDATE and DICT_MERGE (f(**a, **b))
  ValuePtr update = pop();
  ValuePtr target = top(inst.arg);  // a copy: comparing keys may run other frames
  if (target->kind != ValueKind::Dict || !trace_owned(target)) unsupported("updating a dict from outside the function");
  if (update->kind == ValueKind::Constant && PyDict_Check(update->obj.ptr())) {
    PyObject *key, *item;
    Py_ssize_t pos = 0;
    std::vector<Ref> keys;
    std::vector<ValuePtr> items;
    while (PyDict_Next(update->obj.ptr(), &pos, &key, &item)) {
      keys.push_back(Ref::borrow(key));
      items.push_back(Value::constant(Ref::borrow(item)));
    }
    update = Value::dict(std::move(keys), std::move(items));
  }
  if (update->kind != ValueKind::Dict) update = mapping_as_dict(update);
  for (size_t i = 0; i < update->keys.size(); ++i) {
    Ref key = rehold_key(update->keys[i], target->keys);
    int at = target->dict_index(key);
    if (at >= 0) {
      if (inst.opcode == DICT_MERGE) unsupported("a keyword argument given twice");
      target->items[at] = update->items[i];
    } else {
      target->keys.push_back(key);
      target->items.push_back(update->items[i]);
    }
  }
  return true;
}

bool Tracer::op_map_add(const bytecode::Instruction& inst) {
  ValuePtr value = pop();
  ValuePtr key = pop();
  ValuePtr target = top(inst.arg);  // a copy: hashing the key may run other frames
  if (target->kind != ValueKind::Dict) throw InternalError("MAP_ADD without a dict");
  target->dict_set(container_key(key, target->keys, "a dict key"), value);
  return true;
}

void Tracer::unpack_sequence(ValuePtr sequence, int count) {
  std::vector<ValuePtr> items = iterate(sequence);
  // CPython's errors, raised in the trace (a handler may take them).
  if (static_cast<int>(items.size()) < count)
    raise(PyExc_ValueError, "not enough values to unpack (expected " + std::to_string(count) + ", got " + std::to_string(items.size()) + ")");
  if (static_cast<int>(items.size()) > count) raise(PyExc_ValueError, "too many values to unpack (expected " + std::to_string(count) + ")");
  for (auto it = items.rbegin(); it != items.rend(); ++it) push(*it);
}

}  // namespace cdynamo::interp
