// Iteration over traced values: the items a for loop, list() or unpacking takes from each kind
// of value, Python __iter__/__next__ traced. Assumes loops the trace unrolls (bounded in size).
#include "common/error.h"
#include "common/py_import.h"
#include "common/py_types.h"
#include "frontend/interp/tracer.h"
#include "frontend/interp/traced_keys.h"

namespace cdynamo::interp {

void Tracer::enter_value_recursion(const std::string& what) const {
  if (value_recursion_ > kMaxNestingDepth)
    unsupported(what + " nested deeper than " + std::to_string(kMaxNestingDepth) + " levels");
}

// iter(obj) through a Python __iter__. An object that is its own iterator (__iter__ returns
// self, items from __next__) would be asked for its iterator again and again.
ValuePtr Tracer::iterator_of(const ValuePtr& iterable, Handle method) {
  ValuePtr iterator = inline_call(method, {iterable}, {});
  bool same = iterator == iterable || (iterator->obj && iterator->obj.ptr() == iterable->obj.ptr());
  if (same && !is_python_iterator(iterator))
    unsupported("iterating over a " + iterable->describe() + " whose __iter__ returns itself without a __next__");
  return iterator;
}

bool Tracer::is_python_iterator(const ValuePtr& value) {
  if (value->kind != ValueKind::NewObject && value->kind != ValueKind::Object) return false;
  Ref next = python_special_method(value, "__next__");
  return next && PyFunction_Check(next.ptr());
}

ValuePtr Tracer::python_next(const ValuePtr& iterator) {
  Ref next = python_special_method(iterator, "__next__");
  try {
    return inline_call(next, {iterator}, {});
  } catch (const TracedException& raised) {
    if (!is_instance_of(raised, PyExc_StopIteration)) throw;
    return nullptr;
  }
}

// Every item of an iterator object (list(it), a for loop's items taken at once).
static constexpr long kMaxPythonIteratorItems = 100000;

std::vector<ValuePtr> Tracer::iterate_python_iterator(const ValuePtr& iterator) {
  if (!is_python_iterator(iterator)) return iterate(iterator);
  std::vector<ValuePtr> items;
  while (ValuePtr item = python_next(iterator)) {
    items.push_back(std::move(item));
    if (static_cast<long>(items.size()) > kMaxPythonIteratorItems) unsupported("an iterator of more than 100000 items");
  }
  return items;
}

std::vector<ValuePtr> Tracer::iterate(const ValuePtr& iterable) {
  switch (iterable->kind) {
    case ValueKind::Tuple: return iterable->items;
    case ValueKind::List:
      refresh_view(*iterable);
      return iterable->items;
    case ValueKind::Iterator: {
      // Consumes the iterator, as iterating a real one does.
      std::vector<ValuePtr> rest = iterator_pending(*iterable);
      while (iterator_next(*iterable)) {
      }
      return rest;
    }
    case ValueKind::Generator: {
      std::vector<ValuePtr> items;
      while (ValuePtr item = resume_generator(iterable)) {
        items.push_back(std::move(item));
        if (items.size() > 100000) unsupported("a generator of more than 100000 items");
      }
      return items;
    }
    case ValueKind::Dict: {
      std::vector<ValuePtr> keys;
      for (const Ref& key : iterable->keys) keys.push_back(key_value(key));
      return keys;
    }
    case ValueKind::Object:
      if (Ref method = python_special_method(iterable, "__iter__")) {
        DepthCount level(value_recursion_);
        enter_value_recursion("iterators from __iter__");
        return iterate_python_iterator(iterator_of(iterable, method));
      }
      if (ValuePtr contents = dict_contents(iterable)) return iterate(contents);
      unsupported("iterating over a " + iterable->describe());
    case ValueKind::NewObject: {
      if (Ref method = python_special_method(iterable, "__iter__")) {
        DepthCount level(value_recursion_);
        enter_value_recursion("iterators from __iter__");
        return iterate_python_iterator(iterator_of(iterable, method));
      }
      if (iterable->items.size() > 1 && iterable->items[1]) return iterate(iterable->items[1]);
      if (Ref getitem = python_special_method(iterable, "__getitem__")) {
        // The sequence protocol: obj[0], obj[1], ... until IndexError (or StopIteration).
        std::vector<ValuePtr> items;
        for (long i = 0;; ++i) {
          if (i > 100000) unsupported("a __getitem__ iteration of more than 100000 items");
          try {
            items.push_back(inline_call(getitem, {iterable, Value::constant(check(PyLong_FromLong(i)))}, {}));
          } catch (const TracedException& raised) {
            if (!is_instance_of(raised, PyExc_IndexError) && !is_instance_of(raised, PyExc_StopIteration)) throw;
            return items;
          }
        }
      }
      unsupported("iterating over a " + iterable->describe());
    }
    case ValueKind::Set: {
      Ref items = check(PySequence_List(iterable->obj.ptr()));
      std::vector<ValuePtr> values;
      for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items.ptr()); ++i)
        values.push_back(key_value(PyList_GET_ITEM(items.ptr(), i)));
      return values;
    }
    case ValueKind::Constant: {
      // A dict's order is not part of its equality guard. A set's order is no program's to rely on
      // (string hashes change per process): its current order is unrolled.
      if (PyDict_Check(iterable->obj.ptr())) unsupported("iterating over a dict");
      Ref items = steal(PySequence_List(iterable->obj.ptr()));
      if (!items) {
        PyErr_Clear();
        unsupported("iterating over a " + iterable->describe());
      }
      if (PyList_GET_SIZE(items.ptr()) > 100000) unsupported("a loop of more than 100000 iterations");
      std::vector<ValuePtr> values;
      for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items.ptr()); ++i)
        values.push_back(Value::constant(Ref::borrow(PyList_GET_ITEM(items.ptr(), i))));
      return values;
    }
    case ValueKind::NNModule: {
      Ref modules = check(PyObject_GetAttrString(iterable->obj.ptr(), "_modules"));
      static Ref& container_types = *new Ref(check(Py_BuildValue("(OO)", import_attr("torch.nn", "Sequential").ptr(),
                                                       import_attr("torch.nn", "ModuleList").ptr())));  // never freed: outlives the interpreter
      static Ref& parameter_list = *new Ref(import_attr("torch.nn", "ParameterList"));  // never freed: outlives the interpreter
      static Ref& keyed_types = *new Ref(check(Py_BuildValue("(OO)", import_attr("torch.nn", "ModuleDict").ptr(),
                                                   import_attr("torch.nn", "ParameterDict").ptr())));  // never freed: outlives the interpreter
      auto is_a = [&](const Ref& types) {
        int found = PyObject_IsInstance(iterable->obj.ptr(), types.ptr());
        check_status(found);
        return found == 1;
      };
      std::vector<ValuePtr> values;
      PyObject *name, *member;
      Py_ssize_t pos = 0;
      if (is_a(keyed_types)) {  // a ModuleDict or ParameterDict iterates its keys
        Ref keys = check(PySequence_List(iterable->obj.ptr()));
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(keys.ptr()); ++i)
          values.push_back(Value::constant(Ref::borrow(PyList_GET_ITEM(keys.ptr(), i))));
        return values;
      }
      // A ParameterList: its parameters, read as the attributes they are stored as.
      Ref members = is_a(parameter_list) ? check(PyObject_GetAttrString(iterable->obj.ptr(), "_parameters")) : modules;
      if (!is_a(parameter_list) && !is_a(container_types)) {
        if (Ref method = own_module_method(iterable, "__iter__")) {  // a layer stack's own: traced
          DepthCount level(value_recursion_);
          enter_value_recursion("iterators from __iter__");
          return iterate_python_iterator(iterator_of(iterable, method));
        }
        unsupported("iterating over a " + iterable->describe());
      }
      while (PyDict_Next(members.ptr(), &pos, &name, &member)) values.push_back(load_attr(iterable, to_std_string(name)));
      return values;
    }
    case ValueKind::Tensor: {
      Ref shape = check(PyObject_GetAttrString(iterable->fake.ptr(), "shape"));
      if (PyTuple_GET_SIZE(shape.ptr()) == 0) unsupported("iterating over a 0-d tensor");
      // A symbolic length is specialised (guarded); one only the data gives breaks the graph.
      Ref length = graph::specialize(Handle(PyTuple_GET_ITEM(shape.ptr(), 0)));
      long rows = PyLong_AsLong(length.ptr());
      if (rows == -1 && PyErr_Occurred()) throw PythonError();
      static Ref& getitem = *new Ref(import_attr("operator", "getitem"));  // never freed: outlives the interpreter
      std::vector<ValuePtr> values;
      for (long i = 0; i < rows; ++i)
        values.push_back(graph_.call("call_function", getitem,
                                     {iterable, Value::constant(check(PyLong_FromLong(i)))}, {}, "tensor iteration"));
      return values;
    }
    default: unsupported("iterating over a " + iterable->describe());
  }
}

}  // namespace cdynamo::interp
