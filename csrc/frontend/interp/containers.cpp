// Methods of the containers a trace holds: dicts, lists, tuples and sets. They change in place
// (one Value per object); lists and dicts from the frame get their new contents after the graph.
#include <algorithm>
#include "common/error.h"
#include "common/py_import.h"
#include "frontend/interp/tracer.h"
#include "frontend/interp/traced_keys.h"

namespace cdynamo::interp {
namespace {

ValuePtr none() { return Value::constant(Ref::borrow(Py_None)); }

bool is_plain_key(const ValuePtr& value) { return value->is_constant(); }

// The exception argument of a missing key: the constant, else None (the run raises the real one).
Ref missing_key(const ValuePtr& key) { return key->is_constant() ? key->obj : Ref::borrow(Py_None); }

bool holds_user_eq_keys(const Value& container) {
  for (const Ref& key : held_keys(container))
    if (traced_key_has_user_eq(key.ptr())) return true;
  return false;
}

}  // namespace

bool Tracer::trace_owned(const ValuePtr& container) {
  if (!container->source) return true;
  const InterpFrame& root = *frames_.front();
  const Source& source = *container->source;
  if (container->kind == ValueKind::Dict && (root.code->co_flags & CO_VARKEYWORDS) && source.kind == Source::Kind::Local) {
    int varkw = root.code->co_argcount + root.code->co_kwonlyargcount + ((root.code->co_flags & CO_VARARGS) ? 1 : 0);
    if (source.index == varkw) {
      container->source = nullptr;  // its items keep their sources: they are unchanged objects
      return true;
    }
  }
  if (container->kind == ValueKind::List || (container->kind == ValueKind::Dict && !container->read_only)) {
    // A list or dict the program can see: changed here, and given its new contents after the
    // graph (it keeps its source, so every reference still reaches the one object).
    for (const auto& seen : mutated_containers_)
      if (seen == container) return true;
    mutated_containers_.push_back(container);
    return true;
  }
  return false;
}

ValuePtr Tracer::dict_contents(const ValuePtr& object) {
  if (object->kind != ValueKind::Object || !object->source || !PyDict_Check(object->obj.ptr())) return nullptr;
  PyObject* dict = object->obj.ptr();
  auto seen = container_inputs_.find(dict);  // guarded once per trace
  if (seen != container_inputs_.end() && seen->second->source && seen->second->source->str() == object->source->str())
    return seen->second;
  guards::GuardManager& manager = object->source->manager(*guards_);
  manager.add_length_check(PyDict_GET_SIZE(dict));
  std::vector<Ref> keys;
  std::vector<ValuePtr> items;
  PyObject *key, *item;
  Py_ssize_t pos = 0;
  while (PyDict_Next(dict, &pos, &key, &item)) {
    if (!is_plain_dict_key(key)) unsupported("a dict with keys of type " + std::string(Py_TYPE(key)->tp_name));
    keys.push_back(Ref::borrow(key));
    items.push_back(wrap(item, Source::dict_item(object->source, Ref::borrow(key))));
  }
  // Its source stays set: the trace may read it but never change it in place.
  ValuePtr contents = Value::dict(std::move(keys), std::move(items), object->source);
  contents->read_only = true;  // a view: trace_owned refuses to change it
  container_inputs_[dict] = contents;
  keep_alive_.push_back(Ref::borrow(dict));
  return contents;
}

// {**mapping} and f(**mapping) of a mapping that is not a plain dict, as CPython merges it: a
// dict subclass that keeps dict's keys() and __getitem__ by its items; any other mapping (a
// ModelOutput, whose __getitem__ is its own) through keys() and a subscript per key.
ValuePtr Tracer::mapping_as_dict(const ValuePtr& mapping) {
  if (!python_special_method(mapping, "keys") && !python_special_method(mapping, "__getitem__")) {
    if (mapping->kind == ValueKind::NewObject && mapping->items.size() > 1 && mapping->items[1]) return mapping->items[1];
    if (ValuePtr contents = dict_contents(mapping)) return contents;
    unsupported("merging a " + mapping->describe() + " into a dict");
  }
  ValuePtr merged = Value::dict({}, {});
  for (const ValuePtr& key : iterate(call_value(load_attr(mapping, "keys"), {}, {}))) {
    if (!key->is_constant()) unsupported("merging a mapping with a traced key into a dict");
    subscript(mapping, key);
    merged->dict_set(key->obj, pop());
  }
  return merged;
}

ValuePtr Tracer::dict_method_of(const ValuePtr& object, Handle attr, const std::string& name) {
  if (!PyCFunction_Check(attr.ptr()) || PyCFunction_GET_SELF(attr.ptr()) != object->obj.ptr()) return nullptr;
  static const char* const readers[] = {"get", "keys", "values", "items", "copy", "__getitem__", "__contains__", "__len__"};
  bool reader = false;
  for (const char* r : readers) reader |= name == r;
  if (!reader) return nullptr;
  ValuePtr contents = dict_contents(object);
  if (!contents) return nullptr;
  auto method = std::make_shared<Value>();
  method->kind = ValueKind::TensorMethod;  // a method of a traced value (containers.cpp)
  method->items = {contents};
  method->name = name;
  return method;
}

ValuePtr Tracer::new_set(Ref set) {
  auto value = std::make_shared<Value>();
  value->kind = ValueKind::Set;
  value->obj = std::move(set);
  return value;
}

// The container methods that take keywords: dict.update(mapping, **items), popitem(last=), list.sort(key=,
// reverse=), OrderedDict.move_to_end(key, last=), a namedtuple's _replace(**fields); and its
// _asdict(). Null for other calls.
ValuePtr Tracer::call_container_method_with_keywords(const ValuePtr& self, const std::string& name,
                                                     std::vector<ValuePtr>& args, graph::KwArgs& kwargs) {
  if (self->kind == ValueKind::Dict && name == "update" && args.size() <= 1 && !kwargs.empty()) {
    if (!args.empty()) call_container_method(self, "update", {args[0]}, {});
    std::vector<Ref> keys;
    std::vector<ValuePtr> items;
    for (auto& [key, value] : kwargs) {
      keys.push_back(check(PyUnicode_FromString(key.c_str())));
      items.push_back(value);
    }
    return call_container_method(self, "update", {Value::dict(std::move(keys), std::move(items))}, {});
  }
  if (self->kind == ValueKind::Dict && name == "popitem" && args.size() + kwargs.size() <= 1) {
    // dict.popitem(): the last pair; OrderedDict.popitem(last=True): the last or the first.
    ValuePtr last = !args.empty() ? args[0] : !kwargs.empty() ? kwargs[0].second : Value::boolean(true);
    const bool ordered = self->dict_type && PyObject_IsSubclass(self->dict_type.ptr(), import_attr("collections", "OrderedDict").ptr()) == 1;
    if ((!ordered && !(args.empty() && kwargs.empty())) || (!kwargs.empty() && kwargs[0].first != "last") || !last->is_constant())
      return nullptr;
    if (!trace_owned(self)) unsupported("dict.popitem() on a dict passed into the function (a side effect)");
    if (self->items.empty())
      raise(PyExc_KeyError, ordered ? "dictionary is empty" : "popitem(): dictionary is empty");
    const size_t at = PyObject_IsTrue(last->obj.ptr()) == 1 ? self->items.size() - 1 : 0;
    ValuePtr pair = Value::sequence(ValueKind::Tuple, {key_value(self->keys[at]), self->items[at]});
    self->keys.erase(self->keys.begin() + static_cast<std::ptrdiff_t>(at));
    self->items.erase(self->items.begin() + static_cast<std::ptrdiff_t>(at));
    return pair;
  }
  if (self->kind == ValueKind::Dict && self->dict_type && name == "move_to_end" && !args.empty() && args.size() <= 2 &&
      is_plain_key(args[0])) {  // OrderedDict.move_to_end(key, last=True)
    ValuePtr last = args.size() == 2 ? args[1] : Value::constant(Ref::borrow(Py_True));
    for (auto& [key, value] : kwargs)
      if (key == "last") last = value;
      else return nullptr;
    if (!last->is_constant()) return nullptr;
    if (!trace_owned(self)) unsupported("OrderedDict.move_to_end() on a dict passed into the function (a side effect)");
    int at = self->dict_index(args[0]->obj);
    if (at < 0) raise(PyExc_KeyError, args[0]->obj);
    Ref key = self->keys[at];
    ValuePtr item = self->items[at];
    self->keys.erase(self->keys.begin() + at);
    self->items.erase(self->items.begin() + at);
    const bool to_end = PyObject_IsTrue(last->obj.ptr()) == 1;
    self->keys.insert(to_end ? self->keys.end() : self->keys.begin(), key);
    self->items.insert(to_end ? self->items.end() : self->items.begin(), item);
    return none();
  }
  if (self->kind == ValueKind::List && name == "sort" && args.empty()) {
    if (!trace_owned(self)) unsupported("list.sort() on a list passed into the function (a side effect)");
    static Ref& sorted_builtin = *new Ref(import_attr("builtins", "sorted"));  // never freed: outlives the interpreter
    ValuePtr sorted = sorted_with_key(sorted_builtin, {self}, kwargs);
    if (!sorted) {
      if (!self->is_fully_constant()) unsupported("list.sort() of a list holding a " + self->describe() + " (give a key)");
      sorted = Value::sequence(ValueKind::List, iterate(fold(sorted_builtin, {self}, kwargs)));
    }
    self->items = sorted->items;  // in place: every reference to the list sees the order
    return none();
  }
  if (self->kind == ValueKind::Tuple && self->obj && (name == "_replace" || name == "_asdict") && args.empty()) {
    Ref fields = check(PyObject_GetAttrString(self->obj.ptr(), "_fields"));
    std::vector<Ref> names;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields.ptr()); ++i) names.push_back(Ref::borrow(PyTuple_GET_ITEM(fields.ptr(), i)));
    if (names.size() != self->items.size()) return nullptr;
    if (name == "_asdict" && kwargs.empty()) return Value::dict(std::move(names), self->items);
    std::vector<ValuePtr> items = self->items;
    for (auto& [key, value] : kwargs) {
      auto at = std::find_if(names.begin(), names.end(), [&](const Ref& n) { return to_std_string(n) == key; });
      if (at == names.end()) raise(PyExc_ValueError, "Got unexpected field names: ['" + key + "']");
      items[at - names.begin()] = value;
    }
    ValuePtr replaced = Value::sequence(ValueKind::Tuple, std::move(items));
    replaced->obj = self->obj;
    return replaced;
  }
  return nullptr;
}

ValuePtr Tracer::call_container_method(ValuePtr self, const std::string& name, std::vector<ValuePtr> args,
                                       graph::KwArgs kwargs) {
  if (ValuePtr result = call_container_method_with_keywords(self, name, args, kwargs)) return result;
  if (!kwargs.empty()) unsupported(std::string(value_kind_name(self->kind)) + "." + name + "() with keyword arguments");
  const size_t argc = args.size();
  // x.__len__(), x.__getitem__(k), x.__contains__(v), x.__setitem__(k, v), x.__delitem__(k) called
  // by name: what len(x), x[k], v in x, x[k] = v and del x[k] do.
  static PyObject* const len = PyDict_GetItemString(PyEval_GetBuiltins(), "len");  // borrowed; lives forever
  if (name == "__len__" && argc == 0) return call_value(Value::constant(Ref::borrow(len)), {self}, {});
  if (name == "__getitem__" && argc == 1 && self->kind != ValueKind::Dict) {
    subscript(self, args[0]);
    return pop();
  }
  if (name == "__setitem__" && argc == 2) {
    store_subscript(self, args[0], args[1]);
    return none();
  }
  if (name == "__delitem__" && argc == 1) {
    delete_subscript(self, args[0]);
    return none();
  }
  if (name == "__contains__" && argc == 1 && self->kind != ValueKind::Dict) return Value::boolean(contains(self, args[0]));
  if (self->kind == ValueKind::Dict) {
    if ((name == "get" || name == "pop" || name == "setdefault") && argc >= 1 && argc <= 2) {
      int at = dict_find(self, args[0]);
      if (name == "get") return at >= 0 ? self->items[at] : (argc > 1 ? args[1] : none());
      if (!trace_owned(self)) unsupported("dict." + name + "() on a dict passed into the function (a side effect)");
      if (name == "setdefault") {
        if (at >= 0) return self->items[at];
        self->keys.push_back(container_key(args[0], self->keys, "a dict key"));
        self->items.push_back(argc > 1 ? args[1] : none());
        return self->items.back();
      }
      if (at < 0) {
        if (argc > 1) return args[1];
        raise(PyExc_KeyError, missing_key(args[0]));
      }
      ValuePtr found = self->items[at];
      self->keys.erase(self->keys.begin() + at);
      self->items.erase(self->items.begin() + at);
      return found;
    }
    if ((name == "keys" || name == "values" || name == "items") && argc == 0) {
      // A list that knows it stands for a view of this dict (type(), comparisons and set
      // operations answer as the view's; iteration, len and `in` are a list's anyway), its
      // items read from the dict again at each use (refresh_view): a view sees later writes.
      static Ref& view_types = *new Ref(check(PyObject_CallNoArgs(import_attr("cdynamo._trace_support", "dict_view_types").ptr())));  // never freed
      ValuePtr view = Value::sequence(ValueKind::List, {});
      view->view_type = Ref::borrow(PyDict_GetItemString(view_types.ptr(), name.c_str()));
      view->view_of = self;
      view->name = name;
      refresh_view(*view);
      return view;
    }
    if (name == "copy" && argc == 0) return Value::dict(self->keys, self->items);
    if (name == "__getitem__" && argc == 1) {
      int at = dict_find(self, args[0]);
      if (at < 0) raise(PyExc_KeyError, missing_key(args[0]));
      return self->items[at];
    }
    if (name == "__contains__" && argc == 1) return Value::boolean(dict_find(self, args[0]) >= 0);
    if (name == "__len__" && argc == 0) return Value::constant(check(PyLong_FromSize_t(self->items.size())));
    if ((name == "update" && argc == 1 && args[0]->kind == ValueKind::Dict) || (name == "clear" && argc == 0)) {
      if (!trace_owned(self)) unsupported("dict." + name + "() on a dict passed into the function (a side effect)");
      if (name == "clear") {
        self->keys.clear();
        self->items.clear();
        return none();
      }
      for (size_t i = 0; i < args[0]->keys.size(); ++i) {
        Ref key = rehold_key(args[0]->keys[i], self->keys);
        int at = self->dict_index(key);
        if (at >= 0) self->items[at] = args[0]->items[i];
        else {
          self->keys.push_back(key);
          self->items.push_back(args[0]->items[i]);
        }
      }
      return none();
    }
    unsupported("dict." + name + "()" + (self->source ? " on a dict passed into the function" : ""));
  }
  if (self->kind == ValueKind::Set) {
    // The real set of constants and traced keys answers, then stays the trace's own. Items
    // added or looked up are held as container_key makes them (traced values, a user __eq__).
    if ((name == "add" || name == "discard" || name == "remove") && argc == 1) {
      Ref member = set_member(self, args[0]);
      if (name == "add") {
        if (PySet_Add(self->obj.ptr(), member.ptr()) < 0) raise_python_error();
        return none();
      }
      int found = PySet_Discard(self->obj.ptr(), member.ptr());
      if (found < 0) raise_python_error();
      if (!found && name == "remove") raise(PyExc_KeyError, missing_key(args[0]));
      return none();
    }
    if (name == "update" && argc >= 1 && !args[0]->is_fully_constant()) {
      for (const auto& arg : args)
        for (const ValuePtr& item : iterate(arg))
          if (PySet_Add(self->obj.ptr(), set_member(self, item).ptr()) < 0) raise_python_error();
      return none();
    }
    std::vector<Ref> python_args;
    for (const auto& arg : args) {
      if (!arg->is_fully_constant() && arg->kind != ValueKind::Set) unsupported("set." + name + "() of a " + arg->describe());
      // Sets of traced keys take part as they are held; a user __eq__ would not be traced there.
      if (holds_user_eq_keys(*self) || holds_user_eq_keys(*arg))
        unsupported("set." + name + "() on sets of objects with their own __eq__");
      python_args.push_back(arg->kind == ValueKind::Set ? check(PySet_New(arg->obj.ptr())) : arg->as_python_constant());
    }
    Ref bound = check(PyObject_GetAttrString(self->obj.ptr(), name.c_str()));
    Ref tuple = check(PyTuple_New(static_cast<Py_ssize_t>(argc)));
    for (size_t i = 0; i < argc; ++i) PyTuple_SET_ITEM(tuple.ptr(), i, python_args[i].release());
    Ref result = checked(PyObject_Call(bound.ptr(), tuple.ptr(), nullptr));
    if (PySet_CheckExact(result.ptr())) return new_set(std::move(result));
    if (ValuePtr traced = traced_key_value(result.ptr())) return traced;  // set.pop() of a traced key
    return Value::constant(std::move(result));
  }
  if (self->kind == ValueKind::List && trace_owned(self)) {
    if (name == "append" && argc == 1) {
      self->items.push_back(args[0]);
      return none();
    }
    if (name == "extend" && argc == 1) {
      for (auto& item : iterate(args[0])) self->items.push_back(item);
      return none();
    }
    if (name == "insert" && argc == 2 && args[0]->is_constant() && PyLong_Check(args[0]->obj.ptr())) {
      Py_ssize_t size = static_cast<Py_ssize_t>(self->items.size());
      Py_ssize_t at = PyLong_AsSsize_t(args[0]->obj.ptr());
      if (at < 0) at = std::max<Py_ssize_t>(0, at + size);
      at = std::min(at, size);
      self->items.insert(self->items.begin() + at, args[1]);
      return none();
    }
    if (name == "pop" && argc <= 1) {
      Py_ssize_t size = static_cast<Py_ssize_t>(self->items.size());
      Py_ssize_t at = size - 1;
      if (argc == 1) {
        if (!args[0]->is_constant() || !PyLong_Check(args[0]->obj.ptr())) unsupported("list.pop() of a " + args[0]->describe());
        at = PyLong_AsSsize_t(args[0]->obj.ptr());
        if (at < 0) at += size;
      }
      if (size == 0 || at < 0 || at >= size) raise(PyExc_IndexError, size == 0 ? "pop from empty list" : "pop index out of range");
      ValuePtr found = self->items[at];
      self->items.erase(self->items.begin() + at);
      return found;
    }
    if (name == "clear" && argc == 0) {
      self->items.clear();
      return none();
    }
    if (name == "reverse" && argc == 0) {
      std::reverse(self->items.begin(), self->items.end());
      return none();
    }
    if (name == "remove" && argc == 1) {
      // Items compare as list.remove compares them: the same object first (a tensor removed
      // from a list of tensors), then ==, which the trace can decide only between constants.
      const ValuePtr& wanted = args[0];
      for (size_t i = 0; i < self->items.size(); ++i) {
        const ValuePtr& item = self->items[i];
        bool equal = item == wanted || (item->is_tensor() && wanted->is_tensor() && item->node.ptr() == wanted->node.ptr());
        if (!equal) {
          if (!item->is_fully_constant() || !wanted->is_fully_constant())
            unsupported("list.remove() comparing a " + wanted->describe() + " with a " + item->describe());
          int compared = PyObject_RichCompareBool(item->as_python_constant().ptr(), wanted->as_python_constant().ptr(), Py_EQ);
          check_status(compared);
          equal = compared == 1;
        }
        if (equal) {
          self->items.erase(self->items.begin() + static_cast<std::ptrdiff_t>(i));
          return none();
        }
      }
      raise(PyExc_ValueError, "list.remove(x): x not in list");
    }
  }
  if (self->kind == ValueKind::List && name == "copy" && argc == 0) return Value::sequence(ValueKind::List, self->items);
  if ((name == "index" || name == "count") && self->is_fully_constant()) {
    for (const auto& arg : args)
      if (!arg->is_fully_constant()) unsupported(name + "() of a " + arg->describe());
    Ref bound = check(PyObject_GetAttrString(self->as_python_constant().ptr(), name.c_str()));
    return fold(bound, args, kwargs);
  }
  unsupported(std::string(self->kind == ValueKind::List ? "list" : "tuple") + "." + name + "()" +
              (self->source ? " on a list passed into the function (a side effect)" : ""));
}

}  // namespace cdynamo::interp
