// Python builtins the trace models on Values (len, isinstance, zip, getattr, super, ...): a
// table keyed by the builtin object, one handler each; and weak references made and followed.
// Assumes CPython's builtins module.
#include <algorithm>
#include <unordered_map>
#include "common/error.h"
#include "common/py_import.h"
#include "common/py_types.h"
#include "frontend/interp/traced_keys.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {
namespace {

ValuePtr constant(PyObject* obj) { return Value::constant(Ref::borrow(obj)); }

struct BuiltinRow {
  const char* name;  // in the builtins module
  Tracer::BuiltinHandler handler;
  bool keywords = false;  // the handler reads keyword arguments; others refuse them
};

}  // namespace

const Tracer::BuiltinTable& Tracer::builtin_table() {
  static const BuiltinRow rows[] = {
      {"dict", &Tracer::builtin_dict, true},         {"super", &Tracer::builtin_super},
      {"len", &Tracer::builtin_len},                 {"isinstance", &Tracer::builtin_isinstance},
      {"issubclass", &Tracer::builtin_fold},         {"range", &Tracer::builtin_fold},
      {"type", &Tracer::builtin_type},               {"set", &Tracer::builtin_set},
      {"frozenset", &Tracer::builtin_set},           {"setattr", &Tracer::builtin_setattr},
      {"iter", &Tracer::builtin_iter},               {"next", &Tracer::builtin_next},
      {"all", &Tracer::builtin_all_any},             {"any", &Tracer::builtin_all_any},
      {"callable", &Tracer::builtin_callable},       {"tuple", &Tracer::builtin_tuple_list},
      {"list", &Tracer::builtin_tuple_list},         {"enumerate", &Tracer::builtin_enumerate, true},
      {"zip", &Tracer::builtin_zip, true},           {"getattr", &Tracer::builtin_getattr_hasattr},
      {"hasattr", &Tracer::builtin_getattr_hasattr},      {"sum", &Tracer::builtin_sum, true},
      {"vars", &Tracer::builtin_vars},               {"delattr", &Tracer::builtin_delattr},
      {"__build_class__", &Tracer::builtin_build_class, true},
      {"globals", &Tracer::builtin_globals},
  };
  static const BuiltinTable table = [] {
    BuiltinTable built;
    PyObject* builtins = PyEval_GetBuiltins();  // borrowed
    for (const BuiltinRow& row : rows) {
      PyObject* object = PyDict_GetItemString(builtins, row.name);  // borrowed; builtins live forever
      if (!object) throw InternalError(std::string("builtin table: no builtin ") + row.name);
      built.emplace(object, BuiltinEntry{row.handler, row.keywords});
    }
    return built;
  }();
  return table;
}

ValuePtr Tracer::call_builtin(Handle fn, std::vector<ValuePtr>& args, graph::KwArgs& kwargs) {
  auto found = builtin_table().find(fn.ptr());
  if (found == builtin_table().end()) return nullptr;
  if (!kwargs.empty() && !found->second.keywords) unsupported(callable_name(fn) + "() with keyword arguments");
  if (ValuePtr result = (this->*found->second.handler)(fn, args, kwargs)) return result;
  unsupported(callable_name(fn) + "() with these arguments");
}

ValuePtr Tracer::builtin_fold(Handle fn, std::vector<ValuePtr>& args, graph::KwArgs& kwargs) {
  return all_constant(args, kwargs) ? fold(fn, args, kwargs) : nullptr;  // issubclass, range
}

ValuePtr Tracer::builtin_dict(Handle, std::vector<ValuePtr>& args, graph::KwArgs& kwargs) {
  if (args.size() > 1) return nullptr;
  auto result = Value::dict({}, {});
  if (!args.empty()) {
    // A dict subclass the trace made (Counter, OrderedDict, a user's) that does not override
    // __iter__: CPython copies its storage directly, ignoring keys()/__getitem__ overrides.
    const ValuePtr& arg = args[0];
    const bool subclass_storage = arg->kind == ValueKind::NewObject && arg->items.size() > 1 && arg->items[1] &&
                                  arg->items[1]->kind == ValueKind::Dict &&
                                  !special_method_of_class(as_type(arg->cls), "__iter__");
    if (arg->kind == ValueKind::Dict || subclass_storage) {
      const ValuePtr& mapping = subclass_storage ? arg->items[1] : arg;
      result->keys = mapping->keys;
      result->items = mapping->items;
    } else if ((arg->kind == ValueKind::NewObject || arg->kind == ValueKind::Object) && python_special_method(arg, "keys")) {
      // The mapping protocol (a UserDict, a Mapping subclass): obj[k] for each k of obj.keys().
      for (const ValuePtr& key : iterate(call_value(load_attr(arg, "keys"), {}, {}))) {
        subscript(arg, key);
        result->dict_set(container_key(key, result->keys, "a dict key"), pop());
      }
    } else {
      for (auto& pair : iterate(args[0])) {
        std::vector<ValuePtr> parts = iterate(pair);
        if (parts.size() != 2) unsupported("dict() of a sequence that is not of pairs");
        result->dict_set(container_key(parts[0], result->keys, "a dict key"), parts[1]);  // a repeated key: the last value
      }
    }
  }
  for (auto& [key, value] : kwargs) result->dict_set(check(PyUnicode_FromString(key.c_str())), value);  // dict(m, k=v): v wins
  return result;
}

ValuePtr Tracer::builtin_super(Handle, std::vector<ValuePtr>& args, graph::KwArgs&) {
  if (args.size() > 2) return nullptr;
  ValuePtr self;
  Ref cls;
  if (args.size() == 2 && args[0]->is_constant()) {
    cls = args[0]->obj;
    self = args[1];
  } else if (args.empty()) {
    // Zero-argument super(): the __class__ cell and the first argument of the running function.
    PyCodeObject* code = frame().code;
    for (int slot = frame().first_free_slot; slot < code->co_nlocalsplus; ++slot)
      if (local_name(slot) == "__class__" && frame().closure)
        cls = Ref::borrow(PyCell_GET(PyTuple_GET_ITEM(frame().closure, slot - frame().first_free_slot)));
    if (code->co_argcount > 0) self = load_local(0);
    if (self && self->kind == ValueKind::Cell) self = self->items[0];  // self captured by a closure
  }
  auto value = std::make_shared<Value>();
  value->kind = ValueKind::Super;
  if (cls && self && self->kind == ValueKind::NewObject) {
    value->cls = cls;  // attributes are looked up after it in type(self).__mro__ (objects.cpp)
    value->items = {self};
    return value;
  }
  if (!cls || !self || !self->obj || self->is_tensor()) unsupported("this use of super()");
  value->obj = check(PyObject_CallFunctionObjArgs(reinterpret_cast<PyObject*>(&PySuper_Type), cls.ptr(), self->obj.ptr(), nullptr));
  value->items = {self};
  return value;
}

ValuePtr Tracer::builtin_len(Handle, std::vector<ValuePtr>& args, graph::KwArgs&) {
  if (args.size() != 1) return nullptr;
  const ValuePtr& x = args[0];
  refresh_view(*x);
  if (x->is_sequence() || x->kind == ValueKind::Dict) return Value::constant(check(PyLong_FromSize_t(x->items.size())));
  if (x->kind == ValueKind::NewObject && !python_special_method(x, "__len__")) {
    if (x->items.size() < 2 || !x->items[1]) raise(PyExc_TypeError, "object has no len()");
    return Value::constant(check(PyLong_FromSize_t(x->items[1]->items.size())));
  }
  if (x->kind == ValueKind::Object)
    if (ValuePtr contents = dict_contents(x)) return Value::constant(check(PyLong_FromSize_t(contents->items.size())));
  if (x->kind == ValueKind::Set) return Value::constant(check(PyLong_FromSsize_t(PySet_GET_SIZE(x->obj.ptr()))));
  if (Ref method = python_special_method(x, "__len__")) {
    // A Python __len__ reads the object's state, which only inlining guards.
    ValuePtr n = inline_call(method, {x}, {});
    if (!n->is_constant() || !PyLong_Check(n->obj.ptr())) unsupported("__len__ returned a " + n->describe());
    return n;
  }
  if (x->is_tensor() || x->obj) {
    Py_ssize_t n = PyObject_Length(x->is_tensor() ? x->fake.ptr() : x->obj.ptr());
    if (n < 0) raise_python_error();
    return Value::constant(check(PyLong_FromSsize_t(n)));
  }
  return nullptr;
}

ValuePtr Tracer::type_predicate(Handle fn, const std::string& name, const std::vector<ValuePtr>& args) {
  // inspect's predicates that are one isinstance() check, and the type each checks for.
  static const std::pair<const char*, PyTypeObject*> kPredicates[] = {
      {"isclass", &PyType_Type}, {"isfunction", &PyFunction_Type}, {"ismethod", &PyMethod_Type}};
  const auto* row = std::find_if(std::begin(kPredicates), std::end(kPredicates), [&](const auto& r) { return name == r.first; });
  if (row == std::end(kPredicates) || args.size() != 1 || fn.ptr() != import_attr("inspect", row->first).ptr()) return nullptr;
  std::vector<ValuePtr> isinstance_args{args[0], Value::constant(Ref::borrow(reinterpret_cast<PyObject*>(row->second)))};
  graph::KwArgs no_kwargs;
  return builtin_isinstance(fn, isinstance_args, no_kwargs);
}

namespace {

bool holds_legacy_tensor_type(Handle classes) {
  // The metaclass of torch.FloatTensor, torch.cuda.HalfTensor, ... (torch names it nowhere).
  static PyTypeObject* const legacy_type = Py_TYPE(import_attr("torch", "FloatTensor").ptr());
  if (PyTuple_Check(classes.ptr())) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(classes.ptr()); ++i)
      if (holds_legacy_tensor_type(PyTuple_GET_ITEM(classes.ptr(), i))) return true;
    return false;
  }
  return Py_TYPE(classes.ptr()) == legacy_type;
}

}  // namespace

// A stand-in (an array made from a traced tensor, a deque) is of the class it stands for to
// the program, and of its own class to the stand-ins' code.
ValuePtr Tracer::builtin_isinstance(Handle, std::vector<ValuePtr>& args, graph::KwArgs&) {
  if (args.size() != 2 || !args[1]->is_fully_constant()) return nullptr;
  Ref classes = args[1]->as_python_constant();
  if (args[0]->kind == ValueKind::Iterator) {
    // The trace does not keep which builtin iterator type an iterator is; an answer every such
    // type gives (collections.abc.Iterator, Iterable, object) is the answer.
    auto iterator_type = [](Ref iterable) {
      Ref iterator = check(PyObject_GetIter(iterable.ptr()));
      return Ref::borrow(reinterpret_cast<PyObject*>(Py_TYPE(iterator.ptr())));
    };
    static const std::vector<Ref>& kinds = *new std::vector<Ref>{  // never freed: outlives the interpreter
        iterator_type(check(PyList_New(0))), iterator_type(check(PyTuple_New(0))), import_attr("builtins", "zip"),
        import_attr("builtins", "map"), import_attr("builtins", "enumerate")};
    int answer = -1;
    for (const Ref& kind : kinds) {
      int result = PyObject_IsSubclass(kind.ptr(), classes.ptr());
      check_status(result);
      if (answer >= 0 && result != answer) unsupported("isinstance() of an iterator against a class only some iterator types are");
      answer = result;
    }
    return Value::boolean(answer == 1);
  }
  Ref type = type_of(args[0]);
  int result = PyObject_IsSubclass(type.ptr(), classes.ptr());
  if (result == 0) {
    Ref apparent = apparent_type(args[0]);
    if (apparent.ptr() != type.ptr()) result = PyObject_IsSubclass(apparent.ptr(), classes.ptr());
  }
  // torch.FloatTensor and the other legacy tensor types are no tensor's class: their instance
  // check reads the dtype and device, which the fake (and the guards) hold.
  if (result == 0 && args[0]->is_tensor() && holds_legacy_tensor_type(classes))
    result = PyObject_IsInstance(args[0]->fake.ptr(), classes.ptr());
  check_status(result);
  return Value::boolean(result);
}

ValuePtr Tracer::builtin_type(Handle, std::vector<ValuePtr>& args, graph::KwArgs&) {
  if (args.size() != 1) return nullptr;
  Ref type = apparent_type(args[0]);
  // type(self) of an object the trace made: read where its class was (class attributes guarded there).
  if (args[0]->kind == ValueKind::NewObject && type.ptr() == args[0]->cls.ptr()) return Value::constant(type, args[0]->cls_source);
  // type(self) of a module or object from the frame: read at obj.__class__ (`type(self).calls += 1`
  // writes the class there; its attributes are guarded there).
  if ((args[0]->kind == ValueKind::NNModule || args[0]->kind == ValueKind::Object) && args[0]->source &&
      type.ptr() == reinterpret_cast<PyObject*>(Py_TYPE(args[0]->obj.ptr())))
    return Value::constant(type, Source::attr(args[0]->source, "__class__"));
  return Value::constant(type);
}

ValuePtr Tracer::builtin_set(Handle fn, std::vector<ValuePtr>& args, graph::KwArgs&) {  // set, frozenset
  if (args.size() > 1) return nullptr;
  const bool frozen = fn.ptr() == reinterpret_cast<PyObject*>(&PyFrozenSet_Type);
  ValuePtr set = new_set(check(PySet_New(nullptr)));
  if (!args.empty())
    for (const auto& item : iterate(args[0])) {
      // A frozenset is a constant of the trace: it holds constants only.
      if (frozen && !item->is_constant()) unsupported(callable_name(fn) + "() of a " + item->describe());
      Ref member = frozen ? item->obj : set_member(set, item);
      if (PySet_Add(set->obj.ptr(), member.ptr()) < 0) raise_python_error();
    }
  if (frozen) return Value::constant(check(PyFrozenSet_New(set->obj.ptr())));
  return set;
}

// globals(): the running frame's globals dict, as an object; reading or writing a name through it
// is a global load or store (globals_item), guarded per name as LOAD_GLOBAL is.
ValuePtr Tracer::builtin_globals(Handle, std::vector<ValuePtr>& args, graph::KwArgs&) {
  if (!args.empty()) return nullptr;
  auto value = Value::constant(Ref::borrow(frame().globals), Source::fixed(Ref::borrow(frame().globals), "<globals()>"));
  value->kind = ValueKind::Object;
  return value;
}

bool Tracer::is_frame_globals(const ValuePtr& value) {
  return value->kind == ValueKind::Object && value->obj.ptr() == frame().globals;
}

ValuePtr Tracer::globals_item(const ValuePtr& key) {
  if (!key->is_constant() || !PyUnicode_CheckExact(key->obj.ptr())) unsupported("globals()[key] with a key that is a " + key->describe());
  const std::string name = to_std_string(key->obj);
  auto written = written_globals_.find({frame().globals, name});
  if (written != written_globals_.end()) return written->second;  // assigned earlier in this trace
  PyObject* value = PyDict_GetItemWithError(frame().globals, key->obj.ptr());
  if (!value && PyErr_Occurred()) throw PythonError();
  if (!value) unsupported("globals()['" + name + "'] of a name the module does not define");
  return wrap(value, global_source(name, false));
}

ValuePtr Tracer::builtin_setattr(Handle, std::vector<ValuePtr>& args, graph::KwArgs&) {
  if (args.size() != 3 || !args[1]->is_constant() || !PyUnicode_Check(args[1]->obj.ptr())) return nullptr;
  store_attr(args[0], to_std_string(args[1]->obj), args[2]);
  return constant(Py_None);
}

// vars(obj): the object's own __dict__, the live one (writes through it are the object's).
ValuePtr Tracer::builtin_vars(Handle, std::vector<ValuePtr>& args, graph::KwArgs&) {
  if (args.size() != 1) return nullptr;
  if (args[0]->kind == ValueKind::NewObject) {
    if (!(as_type(args[0]->cls)->tp_dictoffset)) raise(PyExc_TypeError, "vars() argument must have __dict__ attribute");
    return args[0]->items[0];
  }
  if ((args[0]->kind == ValueKind::Object || args[0]->kind == ValueKind::NNModule) && args[0]->source) return load_attr(args[0], "__dict__");
  return nullptr;
}

ValuePtr Tracer::builtin_delattr(Handle, std::vector<ValuePtr>& args, graph::KwArgs&) {
  if (args.size() != 2 || !args[1]->is_constant() || !PyUnicode_Check(args[1]->obj.ptr())) return nullptr;
  delete_attr(args[0], to_std_string(args[1]->obj));
  return constant(Py_None);
}

ValuePtr Tracer::builtin_iter(Handle, std::vector<ValuePtr>& args, graph::KwArgs&) {
  if (args.size() == 2) {  // iter(function, sentinel): a generator calling it until the sentinel
    static Ref& calls = *new Ref(import_attr("cdynamo._polyfills", "call_iterator_"));  // never freed: outlives the interpreter
    return inline_call(calls, args, {});
  }
  if (args.size() != 1) return nullptr;
  if (args[0]->kind == ValueKind::Iterator || args[0]->kind == ValueKind::Generator) return args[0];
  if (args[0]->kind == ValueKind::NewObject || args[0]->kind == ValueKind::Object) {
    get_iter(args[0]);  // __iter__ called now; an iterator object or a generator stays lazy
    return pop();
  }
  return iterator_over(args[0]);
}

ValuePtr Tracer::builtin_next(Handle, std::vector<ValuePtr>& args, graph::KwArgs&) {
  if (args.size() != 1 && args.size() != 2) return nullptr;
  if (args[0]->kind != ValueKind::Generator && args[0]->kind != ValueKind::Iterator && !is_python_iterator(args[0]))
    unsupported("next() of a " + args[0]->describe());
  if (ValuePtr item = next_item(args[0])) return item;
  if (args.size() == 2) return args[1];
  // A generator's return value rides on its StopIteration (e.value): an object the trace knows.
  const ValuePtr returned = args[0]->kind == ValueKind::Generator && args[0]->frame ? args[0]->frame->return_value : nullptr;
  if (returned && !(returned->is_constant() && returned->obj.ptr() == Py_None)) {
    // A value only the trace has (a tensor) rides as a traced key, which e.value reads back.
    raise(PyExc_StopIteration, returned->is_fully_constant() ? returned->as_python_constant() : new_traced_key(returned, std::nullopt));
  }
  raise(check(PyObject_CallNoArgs(PyExc_StopIteration)));
}

ValuePtr Tracer::builtin_all_any(Handle fn, std::vector<ValuePtr>& args, graph::KwArgs&) {
  if (args.size() != 1) return nullptr;
  // Short-circuits like the builtin: items after the deciding one are not produced.
  static PyObject* any = PyDict_GetItemString(PyEval_GetBuiltins(), "any");  // borrowed; lives forever
  const bool want = fn.ptr() == any;
  ValuePtr iterator = args[0];
  if (iterator->kind != ValueKind::Generator && iterator->kind != ValueKind::Iterator)
    iterator = Value::sequence(ValueKind::Iterator, iterate(iterator));
  while (true) {
    ValuePtr item = next_item(iterator);
    if (!item) return Value::boolean(!want);
    if (truth_value(item) == want) return Value::boolean(want);
  }
}

ValuePtr Tracer::builtin_callable(Handle fn, std::vector<ValuePtr>& args, graph::KwArgs& kwargs) {
  if (args.size() != 1) return nullptr;
  if (args[0]->is_fully_constant()) return fold(fn, args, kwargs);
  // Decided by the value's type, which the trace knows for every kind.
  const ValuePtr& x = args[0];
  switch (x->kind) {
    case ValueKind::Function:
    case ValueKind::UserMethod:
    case ValueKind::TensorMethod:
    case ValueKind::NNModule: return Value::boolean(true);
    case ValueKind::NewObject: return Value::boolean(as_type(x->cls)->tp_call != nullptr);
    case ValueKind::Object: return Value::boolean(PyCallable_Check(x->obj.ptr()));
    default: return Value::boolean(false);
  }
}

ValuePtr Tracer::builtin_tuple_list(Handle fn, std::vector<ValuePtr>& args, graph::KwArgs&) {
  if (args.size() > 1) return nullptr;
  std::vector<ValuePtr> items = args.empty() ? std::vector<ValuePtr>{} : iterate(args[0]);
  const bool tuple = fn.ptr() == reinterpret_cast<PyObject*>(&PyTuple_Type);
  return Value::sequence(tuple ? ValueKind::Tuple : ValueKind::List, std::move(items));
}

ValuePtr Tracer::builtin_enumerate(Handle, std::vector<ValuePtr>& args, graph::KwArgs& kwargs) {
  if (args.size() == 1 && kwargs.size() == 1 && kwargs[0].first == "start") {
    args.push_back(kwargs[0].second);  // enumerate(items, start=1)
    kwargs.clear();
  }
  if (!kwargs.empty()) unsupported("enumerate() with keyword arguments");
  if (args.empty()) return nullptr;
  if (args.size() > 1 && (!args[1]->is_constant() || !PyLong_Check(args[1]->obj.ptr())))
    unsupported("enumerate() with a start that is not a constant int");
  const bool stateful = args[0]->kind == ValueKind::Iterator || args[0]->kind == ValueKind::Generator;
  if (stateful && args[0].use_count() > 1) {
    // An iterator the program also holds: taken one item at a time, as enumerate does (a loop
    // that breaks leaves the rest in it). A temporary one is taken whole: no one sees the difference.
    static Ref& lazy = *new Ref(import_attr("cdynamo._polyfills", "enumerate_"));  // never freed: outlives the interpreter
    return inline_call(lazy, std::move(args), {});
  }
  long index = args.size() > 1 ? PyLong_AsLong(args[1]->obj.ptr()) : 0;
  if (args[0]->kind == ValueKind::List && !args[0]->view_type) {
    // Read as the list is at each step (a loop that appends to the list it enumerates sees the
    // new items); a graph break inside the loop carries what is left, as for any loop iterator.
    ValuePtr iterator = iterator_over(args[0]);
    iterator->enumerate_start = index;
    return iterator;
  }
  std::vector<ValuePtr> items;
  for (auto& item : iterate(args[0]))
    items.push_back(Value::sequence(ValueKind::Tuple, {Value::constant(check(PyLong_FromLong(index++))), item}));
  return Value::sequence(ValueKind::Iterator, std::move(items));
}

ValuePtr Tracer::next_item(const ValuePtr& iterator) {
  if (iterator->kind == ValueKind::Generator) return resume_generator(iterator);
  if (is_python_iterator(iterator)) return python_next(iterator);
  if (iterator->kind != ValueKind::Iterator) throw InternalError("next_item() of a " + iterator->describe());
  return iterator_next(*iterator);
}

namespace {

// zip(strict=True)'s error when argument `column` (from 0) has a length the ones before it do
// not: CPython's wording.
std::string zip_length_error(size_t column, bool longer) {
  std::string plural = column == 1 ? " " : "s 1-";
  return "zip() argument " + std::to_string(column + 1) + (longer ? " is longer" : " is shorter") + " than argument" +
         plural + std::to_string(column);
}

}  // namespace

ValuePtr Tracer::builtin_zip(Handle, std::vector<ValuePtr>& args, graph::KwArgs& kwargs) {
  bool strict = false;
  if (kwargs.size() == 1 && kwargs[0].first == "strict" && kwargs[0].second->is_constant()) {
    strict = PyObject_IsTrue(kwargs[0].second->obj.ptr()) == 1;  // zip(a, b, strict=True)
    kwargs.clear();
  }
  if (!kwargs.empty()) unsupported("zip() with keyword arguments");
  // Sequences and other fresh iterables are taken whole (iterating them changes nothing anyone
  // sees); iterators and generators give one item per round, as zip pulls them: the first that
  // ends stops it, and the items earlier arguments gave in that round are gone.
  std::vector<ValuePtr> iterators;
  for (auto& arg : args)
    iterators.push_back(arg->kind == ValueKind::Iterator || arg->kind == ValueKind::Generator
                            ? arg
                            : Value::sequence(ValueKind::Iterator, iterate(arg)));
  std::vector<ValuePtr> rows;
  while (!iterators.empty()) {
    std::vector<ValuePtr> row;
    for (size_t column = 0; column < iterators.size(); ++column) {
      ValuePtr item = next_item(iterators[column]);
      if (item) {
        row.push_back(std::move(item));
        continue;
      }
      if (strict && column > 0) raise(PyExc_ValueError, zip_length_error(column, false));
      if (strict)
        for (size_t later = 1; later < iterators.size(); ++later)
          if (next_item(iterators[later])) raise(PyExc_ValueError, zip_length_error(later, true));
      return Value::sequence(ValueKind::Iterator, std::move(rows));
    }
    rows.push_back(Value::sequence(ValueKind::Tuple, std::move(row)));
    if (rows.size() > 100000) unsupported("zip() of more than 100000 items");
  }
  return Value::sequence(ValueKind::Iterator, std::move(rows));
}

// sum(iterable, start=0) item by item, as the builtin adds them (lists of tensors become a chain
// of additions in the graph); an iterable known now folds at once.
ValuePtr Tracer::builtin_sum(Handle fn, std::vector<ValuePtr>& args, graph::KwArgs& kwargs) {
  if (kwargs.size() == 1 && kwargs[0].first == "start" && args.size() == 1) {
    args.push_back(kwargs[0].second);
    kwargs.clear();
  }
  if (!kwargs.empty() || args.empty() || args.size() > 2) return nullptr;
  if (all_constant(args, kwargs)) return fold(fn, args, kwargs);
  static Ref& add = *new Ref(import_attr("operator", "add"));  // never freed: outlives the interpreter
  ValuePtr total = args.size() == 2 ? args[1] : Value::constant(check(PyLong_FromLong(0)));
  for (ValuePtr& item : iterate(args[0])) {
    binary_op(add, "+", total, item);
    total = pop();
  }
  return total;
}

ValuePtr Tracer::builtin_getattr_hasattr(Handle fn, std::vector<ValuePtr>& args, graph::KwArgs&) {
  if (args.size() < 2 || !args[1]->is_constant() || !PyUnicode_Check(args[1]->obj.ptr())) return nullptr;
  static PyObject* getattr = PyDict_GetItemString(PyEval_GetBuiltins(), "getattr");  // borrowed; lives forever
  const bool is_getattr = fn.ptr() == getattr;
  std::string attr = to_std_string(args[1]->obj);
  if (is_getattr && args.size() == 2) return load_attr(args[0], attr);
  if (args.size() != (is_getattr ? 3u : 2u)) unsupported(callable_name(fn) + "() with " + std::to_string(args.size()) + " arguments");
  // An absent attribute raises AttributeError in the trace (guarded to stay absent): getattr's
  // default and hasattr's False are taken from that, as CPython does.
  try {
    ValuePtr found = load_attr(args[0], attr);
    return is_getattr ? found : Value::boolean(true);
  } catch (const TracedException& raised) {
    if (!is_instance_of(raised, PyExc_AttributeError)) throw;
    return is_getattr ? args[2] : Value::boolean(false);
  } catch (const Unsupported&) {
    // Found, but not traceable (a property of a module): hasattr only needs to know it exists,
    // which the class (fixed by the guards) decides.
    if (is_getattr || args[0]->is_tensor() || !args[0]->obj) throw;
    int has = PyObject_HasAttrString(reinterpret_cast<PyObject*>(Py_TYPE(args[0]->obj.ptr())), attr.c_str());
    if (!has) throw;
    return Value::boolean(true);
  }
}

// weakref.ref(obj) of an object from the frame, and calling a weak reference: the object it
// refers to (the one the trace holds for a reference it made; for one read from the frame, read
// through it, `ref()`, at a Converted source, guarded there). Null for other calls.
ValuePtr Tracer::weak_reference_call(const ValuePtr& callable, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs) {
  if (!callable->obj || (callable->kind != ValueKind::Constant && callable->kind != ValueKind::Object) || !kwargs.empty())
    return nullptr;
  PyObject* fn = callable->obj.ptr();
  if (fn == reinterpret_cast<PyObject*>(&_PyWeakref_RefType) && args.size() == 1 && args[0]->obj && args[0]->source) {
    Ref reference = checked(PyWeakref_NewRef(args[0]->obj.ptr(), nullptr));
    weak_targets_[reference.ptr()] = args[0];
    keep_alive_.push_back(reference);
    return Value::constant(std::move(reference));
  }
  if (!PyWeakref_CheckRefExact(fn) || !args.empty()) return nullptr;
  if (auto made = weak_targets_.find(fn); made != weak_targets_.end()) return made->second;
  if (!callable->source) unsupported("calling a weak reference the trace cannot read again");
  static Ref& call = *new Ref(import_attr("operator", "call"));  // never freed: outlives the interpreter
  Ref referent = check(PyObject_CallNoArgs(fn));
  return wrap(referent, Source::converted(callable->source, call, "operator.call"));
}

}  // namespace cdynamo::interp
