// Objects and attributes: instances of Python classes made by the trace (state held as Values,
// methods inlined, rebuilt after the graph), and attribute writes on objects from the frame.
#include "common/error.h"
#include "common/py_import.h"
#include "common/py_types.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {
namespace {

ValuePtr none() { return Value::constant(Ref::borrow(Py_None)); }

// The builtin base whose instance layout the class extends: object, dict or OrderedDict; null
// for any other (list, tuple, int, C extension types), which the trace does not model.
PyTypeObject* builtin_base(PyTypeObject* type) {
  static Ref& ordered_dict = *new Ref(import_attr("collections", "OrderedDict"));  // never freed: outlives the interpreter
  PyObject* mro = type->tp_mro;
  PyTypeObject* base = nullptr;
  for (Py_ssize_t i = 0; mro && i < PyTuple_GET_SIZE(mro); ++i) {
    auto* entry = as_type(PyTuple_GET_ITEM(mro, i));
    if (entry->tp_flags & Py_TPFLAGS_HEAPTYPE) continue;
    if (entry == &PyBaseObject_Type) return base ? base : entry;
    if (entry == &PyDict_Type || entry == as_type(ordered_dict) || entry == &PyList_Type) {
      if (!base) base = entry;
      continue;
    }
    return nullptr;
  }
  return base;
}

bool is_function(PyObject* found) { return found && PyFunction_Check(found); }

// A class's own namespace (new reference). 3.12 keeps static builtin types' dicts outside the
// type object (tp_dict is NULL there), behind PyType_GetDict.
Ref own_dict(PyTypeObject* type) {
#if PY_VERSION_HEX >= 0x030C0000
  return check(PyType_GetDict(type));
#else
  return Ref::borrow(type->tp_dict);
#endif
}

}  // namespace

Ref Tracer::special_method_of_class(PyTypeObject* type, const char* name) {
  PyObject* found = _PyType_Lookup(type, interned(name).ptr());
  return is_function(found) ? Ref::borrow(found) : Ref();
}

Ref Tracer::python_special_method(const ValuePtr& value, const char* name) {
  if (value->kind == ValueKind::NewObject) return special_method_of_class(as_type(value->cls), name);
  if (value->kind != ValueKind::Object && value->kind != ValueKind::Constant) return Ref();
  if (!value->obj || PyType_Check(value->obj.ptr())) return Ref();
  Ref key = check(PyUnicode_FromString(name));
  // The type is fixed by the value's guard (type match for objects, identity or equality for constants).
  PyObject* found = _PyType_Lookup(Py_TYPE(value->obj.ptr()), key.ptr());
  if (!found || !PyFunction_Check(found)) return Ref();
  return Ref::borrow(found);
}

// A module class's own Python method `name` (a layer stack's __getitem__, __iter__, __contains__),
// not torch.nn's (its containers'), or null. The module's guard fixes its class.
Ref Tracer::own_module_method(const ValuePtr& module, const char* name) {
  if (module->kind != ValueKind::NNModule || !module->obj) return Ref();
  Ref key = check(PyUnicode_FromString(name));
  PyObject* method = _PyType_Lookup(Py_TYPE(module->obj.ptr()), key.ptr());  // borrowed
  if (!method || !PyFunction_Check(method)) return Ref();
  Ref defined_in = check(PyObject_GetAttrString(method, "__module__"));
  if (PyUnicode_Check(defined_in.ptr()) && to_std_string(defined_in).starts_with("torch.nn")) return Ref();
  return Ref::borrow(method);
}

namespace {

bool is_frozen_dataclass(PyObject* cls) {
  if (Py_TYPE(cls) != &PyType_Type) return false;  // a metaclass may make instances otherwise
  Ref params = steal(PyObject_GetAttrString(cls, "__dataclass_params__"));
  if (!params) {
    PyErr_Clear();
    return false;
  }
  Ref frozen = steal(PyObject_GetAttrString(params.ptr(), "frozen"));
  if (!frozen) PyErr_Clear();
  return frozen && frozen.ptr() == Py_True;
}

// Every argument known now and hashable (immutable as far as a dict key can tell): a list would
// be shared with the program in eager, and copied by a fold.
bool all_hashable_constants(const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs) {
  auto hashable = [](const ValuePtr& value) {
    if (!value->is_fully_constant()) return false;
    if (PyObject_Hash(value->as_python_constant().ptr()) != -1) return true;
    PyErr_Clear();
    return false;
  };
  for (const auto& arg : args)
    if (!hashable(arg)) return false;
  for (const auto& [name, value] : kwargs)
    if (!hashable(value)) return false;
  return true;
}

}  // namespace

// Builtins that call a special method of their argument (abs(v) calls type(v).__abs__): for an
// object whose class writes it in Python, the method runs in the trace. Null otherwise.
ValuePtr Tracer::call_special_method_builtin(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs) {
  struct Row {
    const char* builtin;
    const char* method;
    const char* fallback;  // what the builtin calls when the class lacks `method`
  };
  static const Row rows[] = {
      {"abs", "__abs__", nullptr},     {"str", "__str__", "__repr__"}, {"repr", "__repr__", nullptr},
      {"hash", "__hash__", nullptr},   {"int", "__int__", "__index__"}, {"float", "__float__", nullptr},
      {"round", "__round__", nullptr}, {"bool", nullptr, nullptr},
  };
  static PyObject* const builtins = PyEval_GetBuiltins();  // borrowed; lives forever
  if (args.size() == 1 && kwargs.empty() && args[0]->is_constant() && graph::is_symbolic(args[0]->obj.ptr())) {
    // int(n) of a symbolic int, float(x) of a symbolic float: the number itself (an unbacked one
    // from tolist() has no value to specialise to).
    static PyObject* const sym_int = import_attr("torch", "SymInt").release();      // never freed: outlive
    static PyObject* const sym_float = import_attr("torch", "SymFloat").release();  // the interpreter
    PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(args[0]->obj.ptr()));
    if ((fn.ptr() == PyDict_GetItemString(builtins, "int") && type == sym_int) ||
        (fn.ptr() == PyDict_GetItemString(builtins, "float") && type == sym_float))
      return args[0];
  }
  if (args.size() == 1 && kwargs.empty() && args[0]->is_tensor() && capture_scalar_outputs &&
      fn.ptr() == PyDict_GetItemString(builtins, "bool"))
    return tensor_truth(args[0]);
  if (args.size() == 1 && kwargs.empty() && args[0]->is_tensor() && capture_scalar_outputs &&
      (fn.ptr() == PyDict_GetItemString(builtins, "int") || fn.ptr() == PyDict_GetItemString(builtins, "float"))) {
    // int(t), float(t): Tensor.__int__/__float__ read t.item(), an unbacked number in the graph.
    const bool to_float = fn.ptr() == PyDict_GetItemString(builtins, "float");
    ValuePtr number = call_value(load_attr(args[0], "item"), {}, {});
    static PyObject* const sym_int = import_attr("torch", "SymInt").release();      // never freed: outlive
    static PyObject* const sym_float = import_attr("torch", "SymFloat").release();  // the interpreter
    static PyObject* const to_sym_float = import_attr("torch", "sym_float").release();
    PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(number->obj.ptr()));
    if (type == (to_float ? sym_float : sym_int)) return number;  // the item is of that kind already
    if (to_float && type == sym_int) return call_value(Value::constant(Ref::borrow(to_sym_float)), {number}, {});
    // int() of a float item: its truncation, a symbolic int (int() of the float would need its value).
    static PyObject* const to_sym_int = import_attr("torch", "sym_int").release();  // never freed: outlives the interpreter
    if (!to_float && type == sym_float) return call_value(Value::constant(Ref::borrow(to_sym_int)), {number}, {});
    return call_value(Value::constant(Ref::borrow(fn.ptr())), {number}, {});
  }
  if (args.empty() || !kwargs.empty() || (args[0]->kind != ValueKind::NewObject && args[0]->kind != ValueKind::Object))
    return nullptr;
  for (const Row& row : rows) {
    if (PyDict_GetItemString(builtins, row.builtin) != fn.ptr()) continue;
    if (!row.method) return args.size() == 1 ? Value::boolean(truth_value(args[0])) : nullptr;  // __bool__, else __len__
    Ref method = python_special_method(args[0], row.method);
    if (!method && row.fallback) method = python_special_method(args[0], row.fallback);
    if (!method) return nullptr;
    return inline_call(method, args, {});
  }
  return nullptr;
}

void Tracer::run_python_init(Handle init, const ValuePtr& object, const std::vector<ValuePtr>& args, graph::KwArgs kwargs) {
  std::vector<ValuePtr> init_args{object};
  init_args.insert(init_args.end(), args.begin(), args.end());
  ValuePtr result = inline_call(init, std::move(init_args), std::move(kwargs));
  if (!result->is_constant() || result->obj.ptr() != Py_None) raise(PyExc_TypeError, "__init__() should return None");
}

ValuePtr Tracer::construct_object(const ValuePtr& cls, std::vector<ValuePtr>& args, graph::KwArgs& kwargs) {
  PyObject* obj = cls->obj.ptr();
  if (!PyType_Check(obj)) return nullptr;
  static Ref& stand_ins = *new Ref(import_attr("cdynamo._polyfills", "STAND_IN_CLASSES"));  // never freed: outlives the interpreter
  if (PyObject* stand_in = PyDict_GetItemWithError(stand_ins.ptr(), obj)) {
    // A class written in C (collections.deque): its Python stand-in is made and traced instead.
    ValuePtr stand_in_class = Value::constant(Ref::borrow(stand_in));
    return construct_object(stand_in_class, args, kwargs);
  }
  check_status(PyErr_Occurred() ? -1 : 0);
  static Ref& autocast_type = *new Ref(import_attr("torch.amp.autocast_mode", "autocast"));  // never freed: outlives the interpreter
  if (PyType_IsSubtype(as_type(obj), as_type(autocast_type.ptr()))) {
    // torch.autocast(...) (torch.cuda.amp.autocast too): made now, as its __init__ only reads its
    // arguments; a with-block enters it in the graph (Tracer::enter_autocast).
    if (!all_constant(args, kwargs)) unsupported("torch.autocast() with arguments the trace computes");
    return fold(cls->obj, args, kwargs);
  }
  if (is_frozen_dataclass(obj) && all_hashable_constants(args, kwargs)) {
    // A frozen dataclass of immutable constants is a constant itself (compared by value, a dict
    // key, pytree's specs): made now, as the same call at run time makes an equal one.
    return fold(cls->obj, args, kwargs);
  }
  static Ref& set_grad_enabled_type = *new Ref(import_attr("torch", "set_grad_enabled"));  // never freed: outlives the interpreter
  if (obj == set_grad_enabled_type.ptr() && args.size() == 1 && kwargs.empty() && args[0]->is_constant() &&
      PyBool_Check(args[0]->obj.ptr())) {
    // torch.set_grad_enabled(mode) sets the mode when made (a with-block restores it after):
    // made now, which sets the trace's mode, and a node sets the graph's.
    ValuePtr made = fold(cls->obj, args, kwargs);
    set_grad_mode_in_graph(args[0]->obj.ptr() == Py_True);
    return made;
  }
  static Ref& defaultdict_type = *new Ref(import_attr("collections", "defaultdict"));  // never freed: outlives the interpreter
  static Ref& ordered_dict_type = *new Ref(import_attr("collections", "OrderedDict"));  // never freed: outlives the interpreter
  if (obj == defaultdict_type.ptr() || obj == ordered_dict_type.ptr()) {
    // defaultdict(factory[, items], **items), OrderedDict([items], **items): Dicts that know their
    // class; a defaultdict's missing keys call its factory.
    const bool with_factory = obj == defaultdict_type.ptr();
    const size_t first_items = with_factory ? 1 : 0;
    if (args.size() > first_items + 1) raise(PyExc_TypeError, std::string(as_type(obj)->tp_name) + " expected at most " +
                                                                  std::to_string(first_items + 1) + " arguments");
    ValuePtr made = Value::dict({}, {});
    made->dict_type = cls->obj;
    if (with_factory) made->default_factory = args.empty() ? Value::constant(Ref::borrow(Py_None)) : args[0];
    if (args.size() == first_items + 1) {
      const ValuePtr& given = args[first_items];
      if (given->kind == ValueKind::Dict) {
        for (size_t k = 0; k < given->items.size(); ++k) made->dict_set(given->keys[k], given->items[k]);
      } else {
        for (ValuePtr pair : iterate(given)) {
          if (pair->is_constant() && PyTuple_Check(pair->obj.ptr()) && PyTuple_GET_SIZE(pair->obj.ptr()) == 2)
            pair = Value::sequence(ValueKind::Tuple, {Value::constant(Ref::borrow(PyTuple_GET_ITEM(pair->obj.ptr(), 0))),
                                                      Value::constant(Ref::borrow(PyTuple_GET_ITEM(pair->obj.ptr(), 1)))});
          if (!pair->is_sequence() || pair->items.size() != 2 || !pair->items[0]->is_constant())
            unsupported(std::string(as_type(obj)->tp_name) + "() from items that are not (constant key, value) pairs");
          made->dict_set(pair->items[0]->obj, pair->items[1]);
        }
      }
    }
    for (auto& [key, value] : kwargs) made->dict_set(check(PyUnicode_FromString(key.c_str())), value);
    return made;
  }
  if (obj == reinterpret_cast<PyObject*>(&PyMethod_Type) && args.size() == 2 && kwargs.empty() && args[0]->is_constant() &&
      PyFunction_Check(args[0]->obj.ptr())) {
    // types.MethodType(function, obj) (contextlib.ExitStack binds each __exit__ so): a bound method.
    auto method = std::make_shared<Value>();
    method->kind = ValueKind::UserMethod;
    method->obj = args[0]->obj;
    method->items = {args[1]};
    return method;
  }
  if (obj == reinterpret_cast<PyObject*>(&PyBaseObject_Type)) {
    // object(): a sentinel (heapq's, dataclasses' MISSING), unique per call and without a
    // __dict__ (attribute writes raise, as in eager).
    if (!args.empty() || !kwargs.empty()) raise(PyExc_TypeError, "object() takes no arguments");
    auto made = std::make_shared<Value>();
    made->kind = ValueKind::NewObject;
    made->cls = cls->obj;
    made->cls_source = cls->source;
    made->items = {Value::dict({}, {}), nullptr};
    return made;
  }
  PyTypeObject* type = as_type(obj);
  if (PyType_IsSubtype(type, &PyTuple_Type) && (type->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
    // A namedtuple: its generated __new__ binds the fields; the value is a tuple that knows its
    // class (fields by name, isinstance, rebuilt through cls._make).
    Ref fields = steal(PyObject_GetAttrString(obj, "_fields"));
    Ref make = steal(PyObject_GetAttrString(obj, "_make"));
    PyErr_Clear();
    PyObject* new_entry = _PyType_Lookup(type, interned("__new__").ptr());  // a staticmethod in the class
    Ref new_function = new_entry && PyObject_TypeCheck(new_entry, &PyStaticMethod_Type)
                           ? check(PyObject_GetAttrString(new_entry, "__func__"))
                           : Ref::borrow(new_entry);
    PyObject* new_method = new_function.ptr();
    if (!fields || !make || !PyTuple_Check(fields.ptr()) || !is_function(new_method) ||
        special_method_of_class(type, "__init__"))
      return nullptr;
    auto* code = reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(new_method));
    std::vector<ValuePtr> bound_args{cls};
    bound_args.insert(bound_args.end(), args.begin(), args.end());
    std::vector<ValuePtr> slots = bind_arguments(code, Ref::borrow(new_method), std::move(bound_args), std::move(kwargs));
    Py_ssize_t count = PyTuple_GET_SIZE(fields.ptr());
    if (code->co_argcount != count + 1) unsupported("a namedtuple whose __new__ is not the generated one");
    std::vector<ValuePtr> items(slots.begin() + 1, slots.begin() + 1 + count);
    ValuePtr tuple = Value::sequence(ValueKind::Tuple, std::move(items));
    tuple->obj = cls->obj;
    return tuple;
  }
  // type(cls).__call__ must be type's own: a metaclass __call__ could return anything.
  if (Py_TYPE(obj)->tp_call != PyType_Type.tp_call) return nullptr;
  ValuePtr object = new_object(cls);
  if (!object) {
    // A __new__ written in Python (that calls super().__new__(cls)): it runs in the trace, then
    // __init__ when it returned an instance of cls, as type.__call__ does.
    PyObject* new_entry = _PyType_Lookup(type, interned("__new__").ptr());  // borrowed
    if (!new_entry || !PyObject_TypeCheck(new_entry, &PyStaticMethod_Type)) return nullptr;
    Ref new_function = check(PyObject_GetAttrString(new_entry, "__func__"));
    if (!PyFunction_Check(new_function.ptr()) || !(type->tp_flags & Py_TPFLAGS_HEAPTYPE)) return nullptr;
    PyObject* file = reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(new_function.ptr()))->co_filename;
    if (call_helper("cdynamo.utils", "inline_refusal", {Ref::borrow(file)}).ptr() != Py_None) return nullptr;  // library classes (torch.no_grad): their own paths
    std::vector<ValuePtr> new_args{cls};
    new_args.insert(new_args.end(), args.begin(), args.end());
    object = inline_call(new_function, std::move(new_args), kwargs);
    if (object->kind != ValueKind::NewObject || !PyType_IsSubtype(as_type(object->cls), type)) return object;
    if (Ref init = special_method_of_class(type, "__init__")) run_python_init(init, object, args, std::move(kwargs));
    return object;
  }
  if (Ref init = special_method_of_class(type, "__init__")) {
    run_python_init(init, object, args, std::move(kwargs));
    return object;
  }
  PyObject* init = _PyType_Lookup(type, interned("__init__").ptr());
  if (!init || (Py_TYPE(init) != &PyWrapperDescr_Type && Py_TYPE(init) != &PyMethodDescr_Type)) return nullptr;
  call_native_method(Ref::borrow(init), object, std::move(args), std::move(kwargs));
  return object;
}

ValuePtr Tracer::new_object(const ValuePtr& cls, bool by_base_new) {
  PyObject* obj = cls->obj.ptr();
  if (!PyType_Check(obj)) return nullptr;
  PyTypeObject* type = as_type(obj);
  // Instances keep attributes in a __dict__, or in __slots__ (member descriptors of the class).
  if (!(type->tp_flags & Py_TPFLAGS_HEAPTYPE)) return nullptr;
  PyTypeObject* base = builtin_base(type);
  if (!base) return nullptr;
  // (TorchFunctionMode: made for real, a constant that a with-block enters in the graph.)
  for (const char* module_class : {"torch.nn:Module", "torch:Tensor", "torch.overrides:TorchFunctionMode"}) {
    std::string spec = module_class;
    Ref excluded = import_attr(spec.substr(0, spec.find(':')).c_str(), spec.substr(spec.find(':') + 1).c_str());
    if (PyType_IsSubtype(type, as_type(excluded))) return nullptr;
  }
  if (PyType_IsSubtype(type, as_type(PyExc_BaseException))) return nullptr;
  // __new__ must be the builtin base's: a Python __new__ may return another object.
  // (Unless this is that base __new__ called by name: object.__new__(cls) in a class's own __new__.)
  PyObject* new_method = _PyType_Lookup(type, interned("__new__").ptr());
  PyObject* base_new = _PyType_Lookup(base, interned("__new__").ptr());
  if (new_method != base_new && !by_base_new) return nullptr;

  auto object = std::make_shared<Value>();
  object->kind = ValueKind::NewObject;
  object->cls = cls->obj;
  object->cls_source = cls->source;
  // The builtin base's own contents: a dict subclass's items, a list subclass's list.
  ValuePtr contents = base == &PyBaseObject_Type ? nullptr
                      : base == &PyList_Type     ? Value::sequence(ValueKind::List, {})
                                                 : Value::dict({}, {});
  object->items = {Value::dict({}, {}), contents};
  return object;
}

ValuePtr Tracer::bind_class_attribute(const ValuePtr& self, Handle found, const std::string& name,
                                      const SourcePtr& cls_source) {
  PyObject* attr = found.ptr();
  auto method = [&](Handle function, ValuePtr receiver) {
    auto value = std::make_shared<Value>();
    value->kind = ValueKind::UserMethod;
    value->obj = Ref::borrow(function);
    value->name = name;
    value->items = {std::move(receiver)};
    return value;
  };
  // Methods are guarded where the class is read (Cls.method replaced between calls).
  if (PyFunction_Check(attr)) {
    if (cls_source) Source::attr(cls_source, name)->manager(*guards_).add_id_match(found);
    return method(found, self);
  }
  if (PyObject_TypeCheck(attr, &PyClassMethod_Type)) {
    Ref function = check(PyObject_GetAttrString(attr, "__func__"));
    if (cls_source)
      Source::attr(Source::attr(cls_source, name), "__func__")->manager(*guards_).add_id_match(function);
    return method(function, Value::constant(self->cls, cls_source));
  }
  if (PyObject_TypeCheck(attr, &PyStaticMethod_Type)) {
    Ref function = check(PyObject_GetAttrString(attr, "__func__"));
    if (cls_source) Source::attr(cls_source, name)->manager(*guards_).add_id_match(function);
    return Value::constant(std::move(function));
  }
  if (Py_TYPE(attr) == &PyMethodDescr_Type || Py_TYPE(attr) == &PyWrapperDescr_Type)
    return method(found, self);  // a builtin base's method: call_native_method runs it
  if (Ref get = special_method_of_class(Py_TYPE(attr), "__get__")) {
    // A descriptor written in Python (functools.cached_property, a user's): its __get__ runs in
    // the trace, on the descriptor the class holds (guarded where the class is read).
    if (cls_source) Source::attr(cls_source, name)->manager(*guards_).add_id_match(found);
    return inline_call(get, {Value::constant(Ref::borrow(attr)), self, Value::constant(self->cls, cls_source)}, {});
  }
  if (Py_TYPE(attr)->tp_descr_get) unsupported("the class attribute " + name + " (a " + Py_TYPE(attr)->tp_name + ")");
  // Class-level data: read through the class's source, so it is guarded; a class reached
  // otherwise (type(x) of an object the trace made) is held by the guard itself.
  if (cls_source) return wrap(found, Source::attr(cls_source, name));
  if (PyType_Check(self->cls.ptr())) {
    std::string class_name = as_type(self->cls)->tp_name;
    return wrap(found, Source::attr(Source::fixed(self->cls, "<class " + class_name + ">"), name));
  }
  return Value::constant(Ref::borrow(found));
}

ValuePtr Tracer::new_object_attr(const ValuePtr& object, const std::string& name) {
  PyTypeObject* type = as_type(object->cls);
  if (Ref hook = special_method_of_class(type, "__getattribute__")) {
    // A class's own __getattribute__ answers every attribute read; object.__getattribute__
    // inside it is the generic lookup below. (With a __getattr__ too, an AttributeError it
    // raises would go on to __getattr__: not followed here.)
    if (special_method_of_class(type, "__getattr__")) unsupported("a class with both __getattribute__ and __getattr__");
    return inline_call(hook, {object, Value::constant(interned(name))}, {});
  }
  return new_object_generic_attr(object, name);
}

ValuePtr Tracer::new_object_generic_attr(const ValuePtr& object, const std::string& name) {
  PyTypeObject* type = as_type(object->cls);
  if (name == "__dict__" && type->tp_dictoffset != 0) return object->items[0];
  if (name == "__class__") return Value::constant(apparent_type(object), object->cls_source);
  PyObject* found = _PyType_Lookup(type, interned(name).ptr());
  Ref keep = Ref::borrow(found);
  if (found && Py_TYPE(found) == &PyMemberDescr_Type) {
    // A __slots__ entry: the trace keeps its value with the other attributes.
    int at = object->items[0]->dict_index(interned(name));
    if (at < 0) raise(PyExc_AttributeError, "'" + std::string(type->tp_name) + "' object has no attribute '" + name + "'");
    return object->items[0]->items[at];
  }
  // Data descriptors win over the instance dict (properties).
  if (found && Py_TYPE(found)->tp_descr_set) {
    if (PyObject_TypeCheck(found, &PyProperty_Type)) {
      Ref getter = check(PyObject_GetAttrString(found, "fget"));
      if (getter.ptr() == Py_None) raise(PyExc_AttributeError, "property '" + name + "' has no getter");
      if (!PyFunction_Check(getter.ptr())) unsupported("the property " + name + " with a builtin getter");
      return inline_call(getter, {object}, {});
    }
    if (Ref get = special_method_of_class(Py_TYPE(found), "__get__"))  // a data descriptor written in Python
      return inline_call(get, {Value::constant(keep), object, Value::constant(object->cls, object->cls_source)}, {});
    unsupported("the attribute " + name + " (a " + std::string(Py_TYPE(found)->tp_name) + " of the class)");
  }
  const ValuePtr& dict = object->items[0];
  int at = dict->dict_index(interned(name));
  if (at >= 0) return dict->items[at];
  if (ValuePtr written = pending_class_attribute(type, name)) return written;  // Cls.count = ... earlier
  if (found) return bind_class_attribute(object, found, name, object->cls_source);
  if (Ref getattr_hook = special_method_of_class(type, "__getattr__"))
    return inline_call(getattr_hook, {object, Value::constant(interned(name))}, {});
  raise(PyExc_AttributeError, "'" + std::string(type->tp_name) + "' object has no attribute '" + name + "'");
}

void Tracer::new_object_store_attr(const ValuePtr& object, const std::string& name, ValuePtr value, bool raw) {
  PyTypeObject* type = as_type(object->cls);
  if (!raw) {
    if (Ref hook = special_method_of_class(type, "__setattr__")) {
      inline_call(hook, {object, Value::constant(interned(name)), std::move(value)}, {});
      return;
    }
    PyObject* found = _PyType_Lookup(type, interned(name).ptr());
    const bool slot = found && Py_TYPE(found) == &PyMemberDescr_Type;
    const bool descriptor = found && !slot && Py_TYPE(found)->tp_descr_set;
    if (!slot && !descriptor && type->tp_dictoffset == 0)  // neither a slot, a setter nor a __dict__
      raise(PyExc_AttributeError, "'" + std::string(type->tp_name) + "' object has no attribute '" + name + "'");
    if (descriptor) {
      if (Ref set = special_method_of_class(Py_TYPE(found), "__set__")) {  // a data descriptor written in Python
        inline_call(set, {Value::constant(Ref::borrow(found)), object, std::move(value)}, {});
        return;
      }
      if (!PyObject_TypeCheck(found, &PyProperty_Type)) unsupported("assigning the attribute " + name + " (a descriptor)");
      Ref setter = check(PyObject_GetAttrString(found, "fset"));
      if (setter.ptr() == Py_None) raise(PyExc_AttributeError, "property '" + name + "' has no setter");
      if (!PyFunction_Check(setter.ptr())) unsupported("the property " + name + " with a builtin setter");
      inline_call(setter, {object, std::move(value)}, {});
      return;
    }
  }
  if (name == "__dict__" || name == "__class__") unsupported("assigning " + name + " of an object");
  const ValuePtr& dict = object->items[0];
  Ref key = interned(name);
  dict->dict_set(std::move(key), std::move(value));
}

// `del obj.name` on an object the trace made (contextlib's __enter__ drops its arguments so):
// its attribute table loses the name (objects from the frame: delete_frame_attribute).
void Tracer::delete_attr(const ValuePtr& object, const std::string& name) {
  if (object->kind != ValueKind::NewObject) {
    delete_frame_attribute(object, name);
    return;
  }
  PyTypeObject* type = as_type(object->cls);
  if (special_method_of_class(type, "__delattr__")) unsupported("deleting an attribute of an object with __delattr__");
  PyObject* found = _PyType_Lookup(type, interned(name).ptr());
  if (found && PyObject_TypeCheck(found, &PyProperty_Type)) {
    // A property's deleter runs in the trace; without one, the property's own error.
    Ref deleter = check(PyObject_GetAttrString(found, "fdel"));
    if (deleter.ptr() == Py_None) raise(PyExc_AttributeError, "property '" + name + "' of '" + std::string(type->tp_name) + "' object has no deleter");
    if (!PyFunction_Check(deleter.ptr())) unsupported("deleting the attribute " + name + " (a property whose deleter is not Python code)");
    inline_call(deleter, {object}, {});
    return;
  }
  if (found && Py_TYPE(found)->tp_descr_set) unsupported("deleting the attribute " + name + " (a descriptor)");
  ValuePtr& dict = object->items[0];
  int at = dict->dict_index(interned(name));
  if (at < 0) raise(PyExc_AttributeError, "'" + std::string(type->tp_name) + "' object has no attribute '" + name + "'");
  dict->keys.erase(dict->keys.begin() + at);
  dict->items.erase(dict->items.begin() + at);
}

ValuePtr Tracer::super_attr(const ValuePtr& super, const std::string& name) {
  const ValuePtr& self = super->items.at(0);
  PyObject* mro = as_type(self->cls)->tp_mro;
  Py_ssize_t start = 0;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); ++i)
    if (PyTuple_GET_ITEM(mro, i) == super->cls.ptr()) start = i + 1;
  if (start == 0) unsupported("super() with a class that is not a base of the object");
  Ref key = interned(name);
  for (Py_ssize_t i = start; i < PyTuple_GET_SIZE(mro); ++i) {
    Ref dict = own_dict(as_type(PyTuple_GET_ITEM(mro, i)));
    if (PyObject* found = PyDict_GetItemWithError(dict.ptr(), key.ptr())) {
      ValuePtr bound = bind_class_attribute(self, Ref::borrow(found), name, nullptr);
      // No name: rebuilding it as self.<name> would find the subclass's method, not super's.
      if (bound->kind == ValueKind::UserMethod) bound->name.clear();
      return bound;
    }
    if (PyErr_Occurred()) throw PythonError();
  }
  raise(PyExc_AttributeError, "'super' object has no attribute '" + name + "'");
}

ValuePtr Tracer::call_native_method(Handle descriptor, const ValuePtr& self, std::vector<ValuePtr> args,
                                    graph::KwArgs kwargs) {
  if (Py_TYPE(descriptor.ptr()) != &PyMethodDescr_Type && Py_TYPE(descriptor.ptr()) != &PyWrapperDescr_Type)
    unsupported("calling a " + std::string(Py_TYPE(descriptor.ptr())->tp_name) + " on a " +
                std::string(as_type(self->cls)->tp_name) + " object");
  std::string name = to_std_string(Ref(check(PyObject_GetAttrString(descriptor.ptr(), "__name__"))));
  auto* owner = reinterpret_cast<PyDescrObject*>(descriptor.ptr())->d_type;
  const size_t argc = args.size();
  if (owner == &PyBaseObject_Type) {
    if (name == "__init__") {
      if (argc || !kwargs.empty()) raise(PyExc_TypeError, std::string(as_type(self->cls)->tp_name) + "() takes no arguments");
      return none();
    }
    if (name == "__setattr__" && argc == 2 && args[0]->is_constant() && PyUnicode_Check(args[0]->obj.ptr())) {
      new_object_store_attr(self, to_std_string(args[0]->obj), args[1], true);
      return none();
    }
    if (name == "__getattribute__" && argc == 1 && args[0]->is_constant() && PyUnicode_Check(args[0]->obj.ptr()))
      return new_object_generic_attr(self, to_std_string(args[0]->obj));
    unsupported("object." + name + "() on a " + std::string(as_type(self->cls)->tp_name) + " object");
  }
  const ValuePtr& mapping = self->items.size() > 1 ? self->items[1] : nullptr;
  if (!mapping) unsupported(name + "() of a " + std::string(as_type(self->cls)->tp_name) + " object");
  if (owner == &PyList_Type && mapping->kind == ValueKind::List) {
    // A list subclass's builtin methods act on its list (list.__init__ replaces the contents).
    if (name == "__init__") {
      if (argc > 1 || !kwargs.empty()) raise(PyExc_TypeError, "list expected at most 1 argument, got " + std::to_string(argc));
      mapping->items = argc == 1 ? iterate(args[0]) : std::vector<ValuePtr>{};
      return none();
    }
    return call_container_method(mapping, name, std::move(args), std::move(kwargs));
  }
  if (mapping->kind != ValueKind::Dict) unsupported(std::string(owner->tp_name) + "." + name + "() on a " + as_type(self->cls)->tp_name + " object");
  if (!kwargs.empty() && name != "__init__" && name != "update") unsupported("dict." + name + "() with keyword arguments");
  auto key_of = [&](const ValuePtr& key) { return container_key(key, mapping->keys, "a dict key"); };
  if (name == "__init__" || name == "update") {
    if (argc > 1) raise(PyExc_TypeError, name + " expected at most 1 argument");
    if (argc == 1) {
      ValuePtr source = args[0];
      if (source->kind != ValueKind::Dict) {
        graph::KwArgs none_kwargs;
        std::vector<ValuePtr> one{source};
        static Ref& dict_type = *new Ref(Ref::borrow(reinterpret_cast<PyObject*>(&PyDict_Type)));  // never freed
        source = call_builtin(dict_type, one, none_kwargs);
      }
      call_container_method(mapping, "update", {source}, {});
    }
    if (!kwargs.empty()) {
      std::vector<Ref> keys;
      std::vector<ValuePtr> items;
      for (auto& [k, v] : kwargs) {
        keys.push_back(interned(k));
        items.push_back(v);
      }
      call_container_method(mapping, "update", {Value::dict(std::move(keys), std::move(items))}, {});
    }
    return none();
  }
  if (name == "__setitem__" && argc == 2) {
    Ref key = key_of(args[0]);
    int at = mapping->dict_index(key);
    if (at >= 0) mapping->items[at] = args[1];
    else {
      mapping->keys.push_back(key);
      mapping->items.push_back(args[1]);
    }
    return none();
  }
  if ((name == "__getitem__" || name == "__delitem__") && argc == 1) {
    int at = mapping->dict_index(key_of(args[0]));
    if (at < 0 && name == "__getitem__")  // dict's lookup asks a subclass's __missing__ (Counter's 0)
      if (Ref missing = python_special_method(self, "__missing__")) return inline_call(missing, {self, args[0]}, {});
    if (at < 0) raise(PyExc_KeyError, args[0]->is_constant() ? args[0]->obj : Ref::borrow(Py_None));
    ValuePtr found = mapping->items[at];
    if (name == "__delitem__") {
      mapping->keys.erase(mapping->keys.begin() + at);
      mapping->items.erase(mapping->items.begin() + at);
      return none();
    }
    return found;
  }
  if (name == "__contains__" && argc == 1)
    return Value::constant(Ref::borrow(mapping->dict_index(key_of(args[0])) >= 0 ? Py_True : Py_False));
  if (name == "__len__" && argc == 0) return Value::constant(check(PyLong_FromSize_t(mapping->items.size())));
  if (name == "__iter__" && argc == 0) return Value::sequence(ValueKind::Iterator, iterate(mapping));
  if (name == "keys" || name == "values" || name == "items" || name == "get" || name == "copy" || name == "pop" ||
      name == "setdefault")
    return call_container_method(mapping, name, std::move(args), std::move(kwargs));
  unsupported(std::string(owner->tp_name) + "." + name + "() on a " + as_type(self->cls)->tp_name + " object");
}

// `weight.data = F.normalize(weight.data)`: the tensor takes the new values without autograd
// seeing it. Where the new tensor is one the graph made, with the same sizes, strides, dtype and
// device, writing them through weight.data is what eager's storage swap leaves observable.
void Tracer::assign_tensor_data(const ValuePtr& tensor, const ValuePtr& value) {
  Ref refusal = call_helper("cdynamo._trace_support", "data_assignment_refusal", {tensor->fake, value->fake});
  if (refusal.ptr() != Py_None) unsupported("assigning Tensor.data " + to_std_string(refusal));
  if (value->source) unsupported("assigning Tensor.data a tensor read from outside the graph (the two would share memory)");
  ValuePtr data = load_attr(tensor, "data");
  Ref copy_name = check(PyUnicode_FromString("copy_"));
  graph_.call("call_method", copy_name, {data, value}, {}, "Tensor.data = ...", true);
}

void Tracer::store_attr(ValuePtr object, const std::string& name, ValuePtr value) {
  if (object->is_tensor() && name == "data" && value->is_tensor()) {
    assign_tensor_data(object, value);
    return;
  }
  if (object->kind == ValueKind::NewObject) {
    new_object_store_attr(object, name, std::move(value), false);
    return;
  }
  if (object->kind == ValueKind::Function) {  // see function_attr
    // Calls bind the function's own code, closure and defaults, not what the table holds.
    if (name == "__dict__" || name == "__code__" || name == "__closure__" || name == "__globals__" ||
        name == "__defaults__" || name == "__kwdefaults__")
      unsupported("assigning " + name + " of a function");
    if (!object->attributes) object->attributes = Value::dict({}, {});
    object->attributes->dict_set(check(PyUnicode_FromString(name.c_str())), std::move(value));
    return;
  }
  // A frozen dataclass (one the trace made is a constant; one from the frame an object): its
  // generated __setattr__ runs in the trace and raises FrozenInstanceError there, where a
  // try block sees it as in eager. Other constants with a __setattr__ written in Python run it
  // too (a write it lets through reaches object.__setattr__ of a constant, which stops the trace).
  if ((object->is_constant() || (object->kind == ValueKind::Object && is_frozen_dataclass(
                                     reinterpret_cast<PyObject*>(Py_TYPE(object->obj.ptr())))))) {
    if (Ref setter = python_special_method(object, "__setattr__")) {
      inline_call(setter, {object, Value::constant(check(PyUnicode_FromString(name.c_str()))), std::move(value)}, {});
      return;
    }
  }
  if (object->is_constant() && !object->source && PyExceptionInstance_Check(object->obj.ptr()) && value->is_fully_constant()) {
    // An exception the trace made (raised and caught inside it): contextlib's __exit__ sets its
    // __traceback__, handlers their own notes. It never leaves the trace as it is.
    check_status(PyObject_SetAttrString(object->obj.ptr(), name.c_str(), value->as_python_constant().ptr()));
    return;
  }
  // Only objects the transformed code can reach again, holding values it can rebuild: a class
  // attribute too (a counter on the class), on a class defined in Python.
  const bool python_class = object->kind == ValueKind::Constant && PyType_Check(object->obj.ptr()) &&
                            (as_type(object->obj.ptr())->tp_flags & Py_TPFLAGS_HEAPTYPE);
  // A tensor's own Python attribute (t.tag = ...; not one of torch.Tensor's descriptors): set on
  // the tensor the graph returns, or on the input, after the graph.
  const bool tensor_attribute = object->is_tensor() && object->fake && !tensor_descriptor(name);
  // A gradient the frame's tensor is given (zero_grad's `p.grad = None`): set after the graph.
  const bool gradient = object->is_tensor() && object->source && name == "grad" && gradient_fits(object, value);
  bool reachable = ((object->kind == ValueKind::Object || object->kind == ValueKind::NNModule ||
                     object->kind == ValueKind::PyModule || python_class) && object->source) || tensor_attribute || gradient;
  if (!reachable) unsupported("assigning an attribute of a " + object->describe() + " (a side effect on an object)");
  // A list or dict made by the trace would be rebuilt once per place it is stored: two objects
  // where eager has one. Values reachable by their source keep their identity.
  switch (value->kind) {
    case ValueKind::Tensor:
    case ValueKind::Constant:
    case ValueKind::Tuple:
      break;
    case ValueKind::NewObject:  // rebuilt once, wherever it is referenced (the object table)
    case ValueKind::List:
    case ValueKind::Dict:
    case ValueKind::Set:
      break;
    case ValueKind::NNModule:
    case ValueKind::Object:
      if (value->source) break;
      if (made_with_state_.contains(value->obj.ptr())) break;  // the very module this call made (a lazily built head)
      [[fallthrough]];
    default: unsupported("assigning a " + value->describe() + " to an attribute");
  }
  if (object->kind == ValueKind::NNModule && value->is_tensor()) {
    // Replayed through nn.Module.__setattr__ after the graph: a buffer takes the new tensor, any
    // other name becomes a plain attribute, as in eager. A parameter's name would raise there
    // (a Parameter is wanted), after the graph's other effects: eager raises it here, so break.
    // A Parameter the frame holds (the module's own, or another's) is registered as eager does.
    Ref parameters = check(PyObject_GetAttrString(object->obj.ptr(), "_parameters"));
    Ref key = check(PyUnicode_FromString(name.c_str()));
    int is_parameter = PySequence_Contains(parameters.ptr(), key.ptr());
    check_status(is_parameter);
    static Ref& parameter_type = *new Ref(import_attr("torch.nn", "Parameter"));  // never freed: outlives the interpreter
    bool holds_parameter = false;
    for (const auto* table : {&tensor_inputs_, &attributes_})
      for (const auto& [held, traced] : *table)
        if (traced == value) holds_parameter = PyObject_TypeCheck(held, as_type(parameter_type.ptr()));
    if (is_parameter && !holds_parameter) unsupported("assigning a tensor to the parameter " + name + " of an nn.Module");
  }
  side_effects_.push_back({std::move(object), name, std::move(value)});
}

// bool(t) where item() stays in the graph (config.capture_scalar_outputs, fullgraph): an unbacked
// bool, item != 0; a branch on it still needs its value (and breaks). Eager's error for more
// than one element.
ValuePtr Tracer::tensor_truth(const ValuePtr& tensor) {
  static PyObject* const sym_bool = import_attr("torch", "SymBool").release();  // never freed: outlives the interpreter
  static PyObject* const not_equal = import_attr("operator", "ne").release();   // likewise
  Ref numel = check(PyObject_CallMethod(tensor->fake.ptr(), "numel", nullptr));
  if (!graph::is_symbolic(numel.ptr()) && PyLong_AsLong(numel.ptr()) != 1)
    raise(PyExc_RuntimeError, PyLong_AsLong(numel.ptr()) == 0 ? "Boolean value of Tensor with no values is ambiguous"
                                                               : "Boolean value of Tensor with more than one value is ambiguous");
  ValuePtr number = call_value(load_attr(tensor, "item"), {}, {});
  if (reinterpret_cast<PyObject*>(Py_TYPE(number->obj.ptr())) == sym_bool || PyBool_Check(number->obj.ptr())) return number;
  return call_value(Value::constant(Ref::borrow(not_equal)), {number, Value::constant(steal(PyLong_FromLong(0)))}, {});
}

// Whether t.grad = value is what eager accepts without an error: None, or a tensor of t's
// shape, dtype and device (anything else raises there, before the graph's later work).
bool Tracer::gradient_fits(const ValuePtr& tensor, const ValuePtr& value) {
  if (value->is_constant() && value->obj.ptr() == Py_None) return true;
  if (!value->is_tensor() || !value->fake || !tensor->fake) return false;
  for (const char* property : {"shape", "dtype", "device"}) {
    Ref mine = check(PyObject_GetAttrString(tensor->fake.ptr(), property));
    Ref theirs = check(PyObject_GetAttrString(value->fake.ptr(), property));
    int same = PyObject_RichCompareBool(mine.ptr(), theirs.ptr(), Py_EQ);
    check_status(same);
    if (!same) return false;
  }
  return true;
}

// Whether torch.Tensor's class (or a tensor subclass's) defines the name: a property or method
// whose write the tensor itself handles (requires_grad, grad, names), not a plain attribute.
bool Tracer::tensor_descriptor(const std::string& name) {
  static Ref& tensor_type = *new Ref(import_attr("torch", "Tensor"));  // never freed: outlives the interpreter
  return _PyType_Lookup(as_type(tensor_type), interned(name).ptr()) != nullptr ||
         name.starts_with("__");
}

void Tracer::store_global(const std::string& name, ValuePtr value) {
  // The module whose namespace these globals are: code exec'd in a plain dict has none to
  // write through after the graph.
  PyObject* globals = frame().globals;
  PyObject* module_name = PyDict_GetItemString(globals, "__name__");
  PyObject* module = module_name ? PyDict_GetItemWithError(PyImport_GetModuleDict(), module_name) : nullptr;
  if (PyErr_Occurred()) throw PythonError();
  if (!module || !PyModule_Check(module) || PyModule_GetDict(module) != globals)
    unsupported("assigning a global variable of a namespace that is not a module's");
  Ref owner = Ref::borrow(module);
  auto target = Value::constant(owner, Source::fixed(owner, "<module " + to_std_string(module_name) + ">"));
  target->kind = ValueKind::PyModule;
  store_attr(target, name, value);
  written_globals_[{globals, name}] = std::move(value);
}

}  // namespace cdynamo::interp
