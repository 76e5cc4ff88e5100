// Construction and description of interpreter values and their sources.
// Assumes the GIL is held (values own Python references).
#include "frontend/interp/value.h"
#include "common/error.h"
#include "common/py_import.h"
#include "common/py_types.h"
#include "frontend/interp/traced_keys.h"

namespace cdynamo::interp {

SourcePtr Source::local(int slot, std::string name) {
  return std::make_shared<Source>(Source{Kind::Local, slot, std::move(name), nullptr});
}
SourcePtr Source::global(std::string name) {
  return std::make_shared<Source>(Source{Kind::Global, -1, std::move(name), nullptr});
}
SourcePtr Source::closure(int index, std::string name) {
  return std::make_shared<Source>(Source{Kind::Closure, index, std::move(name), nullptr});
}
SourcePtr Source::attr(SourcePtr base, std::string name) {
  int depth = base->depth + 1;
  auto source = std::make_shared<Source>(Source{Kind::Attr, -1, std::move(name), std::move(base)});
  source->depth = depth;
  return source;
}
SourcePtr Source::item(SourcePtr base, int index) {
  int depth = base->depth + 1;
  auto source = std::make_shared<Source>(Source{Kind::Item, index, "", std::move(base)});
  source->depth = depth;
  return source;
}

SourcePtr Source::fixed(Ref object, std::string display_name) {
  auto source = std::make_shared<Source>(Source{Kind::Fixed, -1, std::move(display_name), nullptr});
  source->key = std::move(object);
  return source;
}

SourcePtr Source::converted(SourcePtr base, Ref function, std::string function_name) {
  int depth = base->depth + 1;
  auto source = std::make_shared<Source>(Source{Kind::Converted, -1, std::move(function_name), std::move(base)});
  source->key = std::move(function);
  source->depth = depth;
  return source;
}

SourcePtr Source::dict_item(SourcePtr base, Ref key) {
  int depth = base->depth + 1;
  auto source = std::make_shared<Source>(Source{Kind::DictItem, -1, "", std::move(base)});
  source->key = std::move(key);
  source->depth = depth;
  return source;
}

bool Source::reads_frame_data() const {
  const Source* s = this;
  while (s->kind == Kind::Item || s->kind == Kind::DictItem) s = s->base.get();
  return s->kind == Kind::Local;
}

std::string Source::str() const {
  switch (kind) {
    case Kind::Local: return "L['" + name + "']";
    case Kind::Global: return "G['" + name + "']";
    case Kind::Closure: return "L['" + name + "']";
    case Kind::Attr: return base->str() + "." + name;
    case Kind::Item: return base->str() + "[" + std::to_string(index) + "]";
    case Kind::Fixed: return name;
    case Kind::Converted: return name + "(" + base->str() + ")";
    case Kind::DictItem: {
      Ref repr = steal(PyObject_Repr(key.ptr()));
      if (!repr) PyErr_Clear();
      return base->str() + "[" + (repr ? to_std_string(repr) : std::string("?")) + "]";
    }
  }
  return "?";
}

guards::GuardManager& Source::manager(guards::RootGuardManager& root) const {
  switch (kind) {
    case Kind::Local: return root.local(index, name);
    case Kind::Global: return root.global(name);
    case Kind::Closure: return root.closure_cell(index, name);
    case Kind::Attr: return base->manager(root).attr(name);
    case Kind::Item: return base->manager(root).item(index);
    case Kind::DictItem: return base->manager(root).dict_item(key);
    case Kind::Fixed: return root.fixed(key, name);
    case Kind::Converted: return base->manager(root).converted(key, name);
  }
  throw InternalError("unknown source kind");
}

PyObject* Source::fetch(const guards::FrameView& frame) const {
  switch (kind) {
    case Kind::Local: return Py_XNewRef(frame.localsplus[index]);
    case Kind::Global: {
      PyObject* value = PyDict_GetItemString(frame.globals, name.c_str());
      if (!value && frame.builtins) value = PyDict_GetItemString(frame.builtins, name.c_str());
      return Py_XNewRef(value);
    }
    case Kind::Closure: {
      if (!frame.closure || index >= PyTuple_GET_SIZE(frame.closure)) return nullptr;
      return Py_XNewRef(PyCell_GET(PyTuple_GET_ITEM(frame.closure, index)));
    }
    case Kind::Fixed: return Py_NewRef(key.ptr());
    case Kind::Converted: {
      PyObject* base_value = base->fetch(frame);
      if (!base_value) return nullptr;
      PyObject* result = PyObject_CallOneArg(key.ptr(), base_value);
      Py_DECREF(base_value);
      return result;
    }
    case Kind::Attr:
    case Kind::Item:
    case Kind::DictItem: {
      PyObject* container = base->fetch(frame);
      if (!container) return nullptr;
      PyObject* result = nullptr;
      if (kind == Kind::Attr) result = PyObject_GetAttrString(container, name.c_str());
      else if (kind == Kind::DictItem) result = PyDict_Check(container) ? Py_XNewRef(PyDict_GetItem(container, key.ptr())) : nullptr;
      else if (PyTuple_Check(container) || PyList_Check(container))
        result = index < PySequence_Fast_GET_SIZE(container) ? Py_NewRef(PySequence_Fast_GET_ITEM(container, index)) : nullptr;
      Py_DECREF(container);
      return result;
    }
  }
  return nullptr;
}

const char* value_kind_name(ValueKind kind) {
  switch (kind) {
#define CDYNAMO_KIND_NAME(name) \
  case ValueKind::name: return #name;
    CDYNAMO_VALUE_KINDS(CDYNAMO_KIND_NAME)
#undef CDYNAMO_KIND_NAME
  }
  return "?";
}

ValuePtr Value::constant(Ref obj, SourcePtr source) {
  auto value = std::make_shared<Value>();
  value->kind = ValueKind::Constant;
  value->obj = std::move(obj);
  value->source = std::move(source);
  return value;
}

ValuePtr Value::tensor(Ref node, Ref fake, SourcePtr source) {
  auto value = std::make_shared<Value>();
  value->kind = ValueKind::Tensor;
  value->node = std::move(node);
  value->fake = std::move(fake);
  value->source = std::move(source);
  return value;
}

ValuePtr Value::sequence(ValueKind kind, std::vector<ValuePtr> items, SourcePtr source) {
  auto value = std::make_shared<Value>();
  value->kind = kind;
  value->items = std::move(items);
  value->source = std::move(source);
  return value;
}

void refresh_view(Value& view) {
  if (!view.view_of) return;
  const Value& dict = *view.view_of;
  std::vector<ValuePtr> items;
  for (size_t i = 0; i < dict.items.size(); ++i) {
    if (view.name == "values") {
      items.push_back(dict.items[i]);
      continue;
    }
    ValuePtr key = key_value(dict.keys[i]);
    items.push_back(view.name == "keys" ? key : Value::sequence(ValueKind::Tuple, {key, dict.items[i]}));
  }
  view.items = std::move(items);
}

namespace {
// The k-th item of a live list iterator: the list's item, or (start + k, item) for enumerate.
ValuePtr live_item(const Value& iterator, size_t k) {
  const ValuePtr& item = iterator.live_list->items[k];
  if (iterator.enumerate_start < 0) return item;
  Ref index = check(PyLong_FromLong(iterator.enumerate_start + static_cast<long>(k)));
  return Value::sequence(ValueKind::Tuple, {Value::constant(std::move(index)), item});
}
}  // namespace

ValuePtr iterator_next(Value& iterator) {
  if (iterator.live_list && iterator.cursor < iterator.live_list->items.size()) {
    ValuePtr item = live_item(iterator, iterator.cursor);
    ++iterator.cursor;
    return item;
  }
  if (!iterator.live_list && iterator.cursor < iterator.items.size()) return iterator.items[iterator.cursor++];
  iterator.live_list.reset();  // exhausted: a list that grows later is not read again
  iterator.enumerate_start = -1;
  iterator.items.clear();
  iterator.cursor = 0;
  return nullptr;
}

std::vector<ValuePtr> iterator_pending(const Value& iterator) {
  if (iterator.live_list) {
    std::vector<ValuePtr> pending;
    for (size_t k = iterator.cursor; k < iterator.live_list->items.size(); ++k) pending.push_back(live_item(iterator, k));
    return pending;
  }
  const std::vector<ValuePtr>& items = iterator.items;
  if (iterator.cursor >= items.size()) return {};
  return std::vector<ValuePtr>(items.begin() + static_cast<std::ptrdiff_t>(iterator.cursor), items.end());
}

void freeze_iterator(Value& iterator) {
  if (!iterator.live_list) return;
  iterator.items = iterator_pending(iterator);
  iterator.cursor = 0;
  iterator.live_list.reset();
  iterator.enumerate_start = -1;
}

ValuePtr Value::null() {
  auto value = std::make_shared<Value>();
  value->kind = ValueKind::Null;
  return value;
}

ValuePtr Value::dict(std::vector<Ref> keys, std::vector<ValuePtr> items, SourcePtr source) {
  auto value = std::make_shared<Value>();
  value->kind = ValueKind::Dict;
  value->keys = std::move(keys);
  value->items = std::move(items);
  value->source = std::move(source);
  return value;
}

ValuePtr Value::boolean(bool value) { return constant(Ref::borrow(value ? Py_True : Py_False)); }

int Value::dict_index(Handle key) const {
  for (size_t i = 0; i < keys.size(); ++i) {
    int equal = PyObject_RichCompareBool(keys[i].ptr(), key.ptr(), Py_EQ);
    check_status(equal);
    if (equal) return static_cast<int>(i);
  }
  return -1;
}

void Value::dict_set(Ref key, ValuePtr item) {
  int at = dict_index(key);
  if (at >= 0) {
    items[at] = std::move(item);
    return;
  }
  keys.push_back(std::move(key));
  items.push_back(std::move(item));
}

bool Value::is_fully_constant() const {
  WalkPath path;
  return is_fully_constant(path);
}

// A container that contains itself is not a constant: there is no finite object to fold.
bool Value::is_fully_constant(WalkPath& path) const {
  if (kind == ValueKind::Constant) return true;
  // Traced keys (tensors, objects) are values of the trace, not constants.
  if (kind == ValueKind::Set || kind == ValueKind::Dict)
    for (const Ref& key : held_keys(*this))
      if (traced_key_value(key.ptr())) return false;
  if (kind == ValueKind::Set) return true;
  if (!is_sequence() && kind != ValueKind::Dict) return false;
  PathStep step(path, this, "data");
  if (step.cycle()) return false;
  for (const auto& item : items)
    if (!item->is_fully_constant(path)) return false;
  return true;
}

Ref Value::as_python_constant() const {
  WalkPath path;
  return as_python_constant(path);
}

Ref Value::as_python_constant(WalkPath& path) const {
  if (kind == ValueKind::Constant) return obj;
  if ((kind == ValueKind::Set || kind == ValueKind::Dict) && !traced_keys_of(*this).empty())
    throw Unsupported("a " + describe() + " holding traced values, used as a constant");
  if (kind == ValueKind::Set) return check(PySet_New(obj.ptr()));  // a copy: the trace's set may change later
  PathStep step(path, this, "data");
  if (step.cycle()) throw Unsupported("a " + describe() + " that contains itself, used as a constant");
  if (kind == ValueKind::Dict) {
    Ref dict = check(PyDict_New());
    for (size_t i = 0; i < items.size(); ++i)
      check_status(PyDict_SetItem(dict.ptr(), keys[i].ptr(), items[i]->as_python_constant(path).ptr()));
    // An OrderedDict stays one (its == compares order); a defaultdict's factory may be traced.
    if (dict_type && !default_factory) return check(PyObject_CallOneArg(dict_type.ptr(), dict.ptr()));
    return dict;
  }
  if (is_sequence()) {
    Ref list = check(PyList_New(static_cast<Py_ssize_t>(items.size())));
    for (size_t i = 0; i < items.size(); ++i)
      PyList_SET_ITEM(list.ptr(), i, items[i]->as_python_constant(path).release());
    if (kind == ValueKind::List) return list;
    return check(PyList_AsTuple(list.ptr()));
  }
  throw InternalError(std::string("not a constant: ") + value_kind_name(kind));
}

std::string Value::describe() const {
  switch (kind) {
    case ValueKind::Constant: {
      // Containers by size: printing a deep or self-containing one walks all of it (a message, not data).
      std::string type = Py_TYPE(obj.ptr())->tp_name;
      if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr()) || PyDict_Check(obj.ptr()) || PyAnySet_Check(obj.ptr()))
        return type + " of " + std::to_string(PyObject_Length(obj.ptr()));
      std::string text = to_std_string(obj);
      if (text.size() > 80) text = text.substr(0, 77) + "...";
      return type + " " + text;
    }
    case ValueKind::Tensor: return "tensor";
    case ValueKind::Tuple: return "tuple of " + std::to_string(items.size());
    case ValueKind::List: return "list of " + std::to_string(items.size());
    case ValueKind::Dict: return "dict of " + std::to_string(items.size());
    case ValueKind::NewObject: return std::string(as_type(cls)->tp_name) + " object";
    case ValueKind::Set: return "set of " + std::to_string(PySet_GET_SIZE(obj.ptr()));
    case ValueKind::TensorMethod: return "tensor method " + name;
    case ValueKind::NNModule:
    case ValueKind::PyModule:
    case ValueKind::Object: return std::string(Py_TYPE(obj.ptr())->tp_name) + " object";
    default: return value_kind_name(kind);
  }
}

}  // namespace cdynamo::interp
