// Values for objects read from the frame (locals, globals, closures, attributes), and the
// guards that keep each value valid: what TorchDynamo calls the VariableBuilder.
// Assumes every object with a source is reachable again through that source on later calls.
#include <unordered_set>
#include "common/error.h"
#include "common/py_import.h"
#include "common/py_types.h"
#include "frontend/interp/traced_keys.h"
#include "frontend/interp/tracer.h"
#include "frontend/interp/trace_markers.h"

namespace cdynamo::interp {
namespace {

bool is_instance(Handle obj, const char* module, const char* type) {
  Ref cls = import_attr(module, type);
  int result = PyObject_IsInstance(obj.ptr(), cls.ptr());
  check_status(result);
  return result;
}

bool is_tensor(Handle obj) { return is_instance(obj, "torch", "Tensor"); }
bool is_nn_module(Handle obj) { return is_instance(obj, "torch.nn", "Module"); }

}  // namespace

bool is_numpy_scalar(PyObject* obj) {
  // numpy.generic (np.float32(2.0), np.int64 from np.prod): immutable numbers. numpy is not
  // imported for this: a program holding such a value has imported it already.
  static PyObject* generic = nullptr;  // borrowed from the numpy module, which lives on
  if (!generic) {
    Ref name = check(PyUnicode_FromString("numpy"));
    Ref module = steal(PyImport_GetModule(name.ptr()));  // only if already imported
    if (!module) {
      PyErr_Clear();
      return false;
    }
    Ref type = steal(PyObject_GetAttrString(module.ptr(), "generic"));
    if (!type) {
      PyErr_Clear();
      return false;
    }
    generic = type.release();  // kept: never freed, as the numpy module itself
  }
  int found = PyObject_IsInstance(obj, generic);
  check_status(found);
  return found && !PyType_Check(obj);
}

namespace {

bool is_plain_constant(PyObject* obj);

// A slice of None and plain numbers (one of tensors, made eagerly before a resume function, is
// data: graphs cannot hold it as a constant).
bool is_plain_slice(PyObject* obj) {
  if (!PySlice_Check(obj)) return false;
  auto* slice = reinterpret_cast<PySliceObject*>(obj);
  for (PyObject* part : {slice->start, slice->stop, slice->step})
    if (part != Py_None && (PySlice_Check(part) || !is_plain_constant(part))) return false;
  return true;
}

// Immutable values compared by ==: specialised into the graph, guarded by equality.
bool is_plain_constant(PyObject* obj) {
  return PyLong_CheckExact(obj) || PyFloat_CheckExact(obj) || PyUnicode_CheckExact(obj) ||
         PyBytes_CheckExact(obj) || PyComplex_CheckExact(obj) || is_plain_slice(obj) || PyRange_Check(obj) ||
         is_numpy_scalar(obj);
}

bool is_torch_constant(Handle obj) {
  return is_instance(obj, "torch", "dtype") || is_instance(obj, "torch", "device") ||
         is_instance(obj, "torch", "Size") || is_instance(obj, "torch", "layout") ||
         is_instance(obj, "torch", "memory_format");
}

bool is_torch_module_object(Handle module) {
  Ref name = steal(PyObject_GetAttrString(module.ptr(), "__name__"));
  if (!name) {
    PyErr_Clear();
    return false;
  }
  std::string text = to_std_string(name);
  return text == "torch" || text.starts_with("torch.");
}

// A class collections.namedtuple or typing.NamedTuple made: fields, _make, and a tuple base.
bool is_namedtuple_class(PyTypeObject* type) {
  if (!(type->tp_flags & Py_TPFLAGS_HEAPTYPE) || !PyType_IsSubtype(type, &PyTuple_Type)) return false;
  PyObject* fields = _PyType_Lookup(type, interned("_fields").ptr());  // borrowed
  PyObject* make = _PyType_Lookup(type, interned("_make").ptr());     // borrowed
  return fields && PyTuple_Check(fields) && make;
}

// A class written in Python outside torch (whose classes, like its modules, are taken as fixed).
bool is_user_class(Handle obj) {
  if (!PyType_Check(obj.ptr()) || !(as_type(obj)->tp_flags & Py_TPFLAGS_HEAPTYPE)) return false;
  PyObject* module = PyDict_GetItemString(as_type(obj)->tp_dict, "__module__");  // borrowed
  if (!module || !PyUnicode_Check(module)) return true;
  std::string text = to_std_string(module);
  return !(text == "torch" || text.starts_with("torch."));
}

std::string path_of(const SourcePtr& source) {
  switch (source->kind) {
    case Source::Kind::Local:
    case Source::Kind::Global:
    case Source::Kind::Closure: return source->name;
    case Source::Kind::Attr: return path_of(source->base) + "." + source->name;
    case Source::Kind::Item: return path_of(source->base) + "." + std::to_string(source->index);
    case Source::Kind::DictItem: return path_of(source->base) + "." + to_std_string(source->key);
    case Source::Kind::Fixed: return "fixed";
    case Source::Kind::Converted: return path_of(source->base);
  }
  return "?";
}

// Tensor attributes whose value the fake tensor does not know or that expose autograd state.
// (Tensor.data is read in the graph: a detached alias, as make_fx and AOTAutograd trace it.)
const std::unordered_set<std::string>& unsupported_tensor_attributes() {
  static const std::unordered_set<std::string> names = {
      "grad", "_base", "grad_fn", "is_leaf", "_version", "retains_grad", "names",
      "untyped_storage", "storage", "data_ptr", "__class__", "__dict__"};
  return names;
}

}  // namespace

void Tracer::check_source_depth(const SourcePtr& source) const {
  if (source->depth <= kMaxNestingDepth) return;
  std::string path = source->str();
  if (path.size() > 60) path = path.substr(0, 60) + "...";
  unsupported("data nested deeper than " + std::to_string(kMaxNestingDepth) + " levels (" + path + ")");
}

// Dict keys the trace can hold as constants: compared and hashed by value (str, int, bytes,
// bool, None) or by identity (classes, which the guards fix: copy's table of copiers by type;
// enum members and typing forms: a validator table keyed by typing.Union).
bool is_plain_dict_key(PyObject* key) {
  if (PyTuple_CheckExact(key)) {  // (type_p, type_q): torch.distributions' KL registry
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(key); ++i)
      if (!is_plain_dict_key(PyTuple_GET_ITEM(key, i))) return false;
    return true;
  }
  // torch.dtype and torch.device: a cache's (length, device, dtype) key, compared by value.
  static PyObject* const dtype_type = import_attr("torch", "dtype").release();  // never freed: outlive the interpreter
  static PyObject* const device_type = import_attr("torch", "device").release();
  return PyUnicode_CheckExact(key) || PyLong_CheckExact(key) || PyBytes_CheckExact(key) || PyBool_Check(key) ||
         PyFloat_CheckExact(key) || key == Py_None || PyType_Check(key) || PyFunction_Check(key) || PyCFunction_Check(key) ||
         Py_TYPE(key) == as_type(dtype_type) ||
         Py_TYPE(key) == as_type(device_type) ||
         is_identity_constant(Handle(key));  // functions hash and compare by identity (pytree's SUPPORTED_NODES)
}

bool is_identity_constant(Handle obj) {
  static Ref& types = *new Ref(import_attr("cdynamo._trace_support", "IDENTITY_CONSTANT_TYPES"));  // never freed: outlives the interpreter
  int found = PyObject_IsInstance(obj.ptr(), types.ptr());
  check_status(found);
  return found != 0;
}

ValuePtr Tracer::wrap(Handle obj, SourcePtr source) {
  PyObject* o = obj.ptr();
  check_source_depth(source);
  guards::GuardManager& manager = source->manager(*guards_);
  if (o == Py_None || o == Py_True || o == Py_False || o == Py_Ellipsis) {
    manager.add_id_match(obj);
    return Value::constant(Ref::borrow(obj), source);
  }
  static Ref& restorers = *new Ref(import_attr("cdynamo._global_state", "RESTORE_GRAD_MODE"));  // never freed: outlives the interpreter
  for (int enabled = 0; enabled < 2; ++enabled)
    if (o == PyTuple_GET_ITEM(restorers.ptr(), enabled)) {
      // A no_grad/enable_grad block cut by a graph break continues here (codegen rebuilt its __exit__).
      manager.add_id_match(obj);
      auto exit = std::make_shared<Value>();
      exit->kind = ValueKind::GradModeExit;
      exit->restores_enabled = enabled;
      return exit;
    }
  static Ref& state_restorers = *new Ref(import_attr("cdynamo._global_state", "STATE_RESTORERS"));  // never freed: outlives the interpreter
  if (PyTuple_Check(state_restorers.ptr()) && PySequence_Contains(state_restorers.ptr(), reinterpret_cast<PyObject*>(Py_TYPE(o))) == 1) {
    // A torch.autocast or inference_mode block cut by a graph break continues here (codegen left its restorer).
    manager.add_id_match(obj);
    auto exit = std::make_shared<Value>();
    exit->kind = ValueKind::StateExit;
    exit->obj = Ref::borrow(obj);
    return exit;
  }
  if ((PyLong_CheckExact(o) || PyFloat_CheckExact(o)) && source->reads_frame_data()) {
    // A number that changes between calls may be a graph input instead of a constant.
    if (ValuePtr symbolic = graph_.scalar_input(obj, source)) {
      if (PyFloat_CheckExact(o)) manager.add_symbolic_float_match();
      else manager.add_type_match(Py_TYPE(o));
      return symbolic;
    }
  }
  if (is_plain_constant(o)) {
    manager.add_equals_match(obj);
    return Value::constant(Ref::borrow(obj), source);
  }
  if (is_tensor(obj)) {
    if (auto attribute = attributes_.find(o); attribute != attributes_.end()) {
      // A parameter or buffer the trace read as a module attribute, reached another way (through
      // module._parameters): the same graph value, so `is` and in-place writes see one tensor.
      manager.add_id_match(obj);
      return attribute->second;
    }
    auto seen = tensor_inputs_.find(o);
    if (seen != tensor_inputs_.end() && seen->second->source->kind == Source::Kind::Local &&
        source->kind == Source::Kind::Local) {
      // One tensor passed as two arguments: one graph input, and a guard that it stays so.
      guards_->add_same_object_guard(seen->second->source->index, seen->second->source->name, source->index,
                                     source->name);
      return seen->second;
    }
    if (seen != tensor_inputs_.end()) {
      // One tensor reachable two ways (an argument and an item of a list argument): one graph
      // input, and a guard that both paths still lead to one object.
      SourcePtr first = seen->second->source;
      guards_->add_same_object_guard([first](const guards::FrameView& f) { return first->fetch(f); }, first->str(),
                                     [source](const guards::FrameView& f) { return source->fetch(f); }, source->str());
      return seen->second;
    }
    ValuePtr value = graph_.add_input(obj, source);
    manager.add_tensor_match(obj, graph_.dynamic() ? Handle(value->fake) : Handle());
    static PyObject* const tensor_type = import_attr("torch", "Tensor").release();  // never freed: outlives the interpreter
    if (Py_TYPE(o) != as_type(tensor_type)) {  // a subclass: type() and its own attributes in the trace
      static PyObject* const traced_class = import_attr("cdynamo._tensor_subclasses", "traced_class").release();  // never freed: outlives the interpreter
      Ref cls = check(PyObject_CallOneArg(traced_class, obj.ptr()));
      if (cls.ptr() != Py_None) value->cls = std::move(cls);
    }
    tensor_inputs_.emplace(o, value);
    keep_alive_.push_back(Ref::borrow(obj));
    if (source->kind == Source::Kind::Local) local_tensor_inputs_.emplace_back(source->index, source->name);
    return value;
  }
  if (PyList_CheckExact(o) || PyDict_CheckExact(o)) {
    // One Value per list or dict object, however it is reached: the trace may change it in place.
    auto seen = container_inputs_.find(o);
    if (seen != container_inputs_.end() && seen->second->source) {
      SourcePtr first = seen->second->source;
      if (first->str() == source->str()) return seen->second;  // read again the same way
      guards_->add_same_object_guard([first](const guards::FrameView& f) { return first->fetch(f); }, first->str(),
                                     [source](const guards::FrameView& f) { return source->fetch(f); }, source->str());
      return seen->second;
    }
  }
  if (PyTuple_CheckExact(o) || PyList_CheckExact(o) || PyDict_CheckExact(o)) return wrap_container(obj, source, manager);
  if (PyTuple_Check(o) && is_namedtuple_class(Py_TYPE(o))) {
    // A namedtuple passed in: a tuple that knows its class, as one the trace makes (its type guarded).
    ValuePtr value = wrap_container(obj, source, manager);
    value->obj = Ref::borrow(reinterpret_cast<PyObject*>(Py_TYPE(o)));
    return value;
  }
  if (PyFrozenSet_CheckExact(o) || PySet_CheckExact(o)) {
    // Sets of plain constants (membership tests against option names): specialised by equality.
    // A frozenset that also holds classes (dataclasses' _ATOMIC_TYPES): by identity, since it
    // cannot change and classes compare by identity anyway.
    PyObject* item;
    Ref iterator = check(PyObject_GetIter(o));
    bool plain = PySet_GET_SIZE(o) <= 64, classes = false;
    while (plain && (item = PyIter_Next(iterator.ptr()))) {
      classes = classes || PyType_Check(item);
      plain = is_plain_constant(item) || item == Py_None || PyBool_Check(item) || PyType_Check(item);
      Py_DECREF(item);
    }
    if (PyErr_Occurred()) throw PythonError();
    if (plain && classes && PyFrozenSet_CheckExact(o)) {
      manager.add_id_match(obj);
      return Value::constant(Ref::borrow(obj), source);
    }
    if (plain && !classes) {
      // A mutable set is compared with a copy taken now: the same object, changed in place,
      // must fail the guard.
      Ref snapshot = PySet_CheckExact(o) ? check(PySet_New(o)) : Ref::borrow(obj);
      manager.add_equals_match(snapshot);
      return Value::constant(std::move(snapshot), source);
    }
  }
  if (is_torch_constant(obj)) {
    manager.add_equals_match(obj);
    return Value::constant(Ref::borrow(obj), source);
  }
  if (PyModule_Check(o)) {
    manager.add_id_match(obj);
    auto value = Value::constant(Ref::borrow(obj), source);
    value->kind = ValueKind::PyModule;
    return value;
  }
  if (is_nn_module(obj)) {
    manager.add_id_match(obj);
    if (source->kind == Source::Kind::Local) identities_.emplace_back(source->index, o);
    auto value = Value::constant(Ref::borrow(obj), source);
    value->kind = ValueKind::NNModule;
    value->module_path = path_of(source);
    return value;
  }
  if (ValuePtr array = constant_array_input(obj, source)) return array;
  if (PyMethod_Check(o)) {
    // A bound method is a new object on each attribute read: guard its function and receiver.
    Ref function = Ref::borrow(PyMethod_GET_FUNCTION(o));
    Source::attr(source, "__func__")->manager(*guards_).add_id_match(function);
    if (PyType_Check(PyMethod_GET_SELF(o))) {
      // A classmethod bound to its class (`sparsemax = Sparsemax.apply`): a constant, its call
      // policy the method's (an autograd Function's apply is a graph node).
      Source::attr(source, "__self__")->manager(*guards_).add_id_match(PyMethod_GET_SELF(o));
      return Value::constant(Ref::borrow(obj), source);
    }
    auto method = std::make_shared<Value>();
    method->kind = ValueKind::UserMethod;
    method->obj = function;
    method->name = to_std_string(Ref(check(PyObject_GetAttrString(function.ptr(), "__name__"))));
    method->items = {wrap(PyMethod_GET_SELF(o), Source::attr(source, "__self__"))};
    return method;
  }
  if (PyCFunction_Check(o) && PyCFunction_GET_SELF(o) && !PyModule_Check(PyCFunction_GET_SELF(o))) {
    // A builtin method bound to an object (list.append of some list, ContextVar.set): a new
    // object on each read, so the guard is on the receiver; the name is fixed by the source.
    Source::attr(source, "__self__")->manager(*guards_).add_id_match(PyCFunction_GET_SELF(o));
    return Value::constant(Ref::borrow(obj), source);
  }
  if (is_identity_constant(obj)) {
    // Enum members and type expressions never change: constants, one identity guard each.
    manager.add_id_match(obj);
    return Value::constant(Ref::borrow(obj), source);
  }
  // An instance of a class with a Python __call__ is an object with state the call reads: it is
  // guarded like other objects (its type, then each attribute the trace reads).
  PyObject* call_entry = PyType_Check(o) ? nullptr : _PyType_Lookup(Py_TYPE(o), Ref(check(PyUnicode_FromString("__call__"))).ptr());
  bool python_callable_object = call_entry && PyFunction_Check(call_entry);
  if ((PyCallable_Check(o) || PyType_Check(o)) && !python_callable_object) {
    // Functions, builtins and classes: the trace depends on which one it is.
    manager.add_id_match(obj);
    return Value::constant(Ref::borrow(obj), source);
  }
  manager.add_type_match(Py_TYPE(o));
  auto value = Value::constant(Ref::borrow(obj), source);
  value->kind = ValueKind::Object;
  return value;
}

// Lists, tuples and dicts from the frame, item by item. A list or dict gets its one Value before
// its items are wrapped: an item that leads back to it (a list containing itself) is that Value
// again, guarded to stay the same object, so cyclic data is traced, not unrolled forever.
ValuePtr Tracer::wrap_container(Handle obj, const SourcePtr& source, guards::GuardManager& manager) {
  PyObject* o = obj.ptr();
  PathStep step(wrap_path_, o, "data");
  if (step.cycle()) unsupported(std::string("a ") + Py_TYPE(o)->tp_name + " that contains itself");
  manager.add_type_match(Py_TYPE(o));
  if (PyDict_CheckExact(o)) {
    // Guarded key by key: same length and every key present means the same key set.
    manager.add_length_check(PyDict_GET_SIZE(o));
    std::vector<Ref> order;  // iteration follows insertion order, which equality ignores
    PyObject *key, *item;
    Py_ssize_t pos = 0;
    while (PyDict_Next(o, &pos, &key, &item)) order.push_back(Ref::borrow(key));
    manager.add_dict_key_order(std::move(order));
    ValuePtr value = Value::dict({}, {}, source);
    container_inputs_[o] = value;
    keep_alive_.push_back(Ref::borrow(obj));
    pos = 0;
    while (PyDict_Next(o, &pos, &key, &item)) {
      if (!is_plain_dict_key(key)) unsupported("a dict with keys of type " + std::string(Py_TYPE(key)->tp_name));
      Ref owned_key = Ref::borrow(key), owned_item = Ref::borrow(item);
      ValuePtr wrapped = wrap(owned_item, Source::dict_item(source, owned_key));
      value->keys.push_back(owned_key);
      value->items.push_back(std::move(wrapped));
    }
    return value;
  }
  Py_ssize_t size = PySequence_Fast_GET_SIZE(o);
  manager.add_length_check(size);
  bool is_list = PyList_CheckExact(o);
  ValuePtr value = Value::sequence(is_list ? ValueKind::List : ValueKind::Tuple, {}, source);
  if (is_list) {
    container_inputs_[o] = value;
    keep_alive_.push_back(Ref::borrow(obj));
  }
  for (Py_ssize_t i = 0; i < size; ++i) {
    ValuePtr item = wrap(PySequence_Fast_GET_ITEM(o, i), Source::item(source, static_cast<int>(i)));
    value->items.push_back(std::move(item));
  }
  return value;
}

SourcePtr Tracer::global_source(const std::string& name, bool in_builtins) {
  if (frame().globals == root_globals_) return Source::global(name);
  PyObject* namespace_dict = in_builtins ? frame().builtins : frame().globals;
  Ref key = check(PyUnicode_FromString(name.c_str()));
  std::string display = in_builtins ? "<builtins>" : "<globals of " + to_std_string(frame().code->co_filename) + ">";
  return Source::dict_item(Source::fixed(Ref::borrow(namespace_dict), display), std::move(key));
}

ValuePtr Tracer::load_global(const std::string& name) {
  auto written = written_globals_.find({frame().globals, name});
  if (written != written_globals_.end()) return written->second;  // assigned earlier in this trace
  PyObject* value = PyDict_GetItemString(frame().globals, name.c_str());
  bool in_builtins = false;
  if (!value && PyDict_Check(frame().builtins)) {
    value = PyDict_GetItemString(frame().builtins, name.c_str());
    in_builtins = true;
  }
  if (!value) unsupported("name '" + name + "' is not defined");
  return wrap(value, global_source(name, in_builtins));
}

void Tracer::guard_bound_function(const SourcePtr& method_source, Handle bound_method) {
  Source::attr(method_source, "__func__")->manager(*guards_).add_id_match(Ref::borrow(PyMethod_GET_FUNCTION(bound_method.ptr())));
}

Ref Tracer::apparent_type(const ValuePtr& value) {
  if (is_traced_array(value)) return import_attr("numpy", "ndarray");
  if (value->kind == ValueKind::NewObject) {
    PyObject* stands_for = PyDict_GetItemString(as_type(value->cls)->tp_dict, "_cdynamo_stands_for");  // borrowed
    if (stands_for) return Ref::borrow(stands_for);
  }
  return type_of(value);
}

// tensor.grad and tensor.is_leaf: of a tensor from the frame (an argument, a parameter), its own,
// guarded there; of one the graph computes, what autograd gives such a tensor: no .grad, and a
// leaf unless it requires grad through its computation. Null where the trace cannot tell.
ValuePtr Tracer::tensor_autograd_state(const ValuePtr& tensor, const std::string& name) {
  PyObject* real = nullptr;
  for (const auto& [object, input] : tensor_inputs_)
    if (input == tensor) real = object;
  for (const auto& [object, attribute] : attributes_)
    if (attribute == tensor) real = object;
  if (real && tensor->source) return wrap(check(PyObject_GetAttrString(real, name.c_str())), Source::attr(tensor->source, name));
  if (real) return nullptr;
  Ref requires_grad = check(PyObject_GetAttrString(tensor->fake.ptr(), "requires_grad"));
  if (name == "grad") {
    if (requires_grad.ptr() == Py_True) return nullptr;  // a leaf made in the graph may get one later
    return Value::constant(Ref::borrow(Py_None));
  }
  if (requires_grad.ptr() != Py_True) return Value::boolean(true);
  // requires_grad_() made it a leaf; anything else computed it from tensors that require grad.
  Ref target = check(PyObject_GetAttrString(tensor->node.ptr(), "target"));
  return Value::boolean(PyUnicode_Check(target.ptr()) && to_std_string(target) == "requires_grad_");
}

Ref Tracer::type_of(const ValuePtr& value) {
  switch (value->kind) {
    case ValueKind::Tensor: {
      if (value->cls) return value->cls;  // a tensor subclass's (an input's, or its ops' results)
      for (const auto& [object, input] : tensor_inputs_)
        if (input == value) return Ref::borrow(reinterpret_cast<PyObject*>(Py_TYPE(object)));
      for (const auto& [object, attribute] : attributes_)
        if (attribute == value) return Ref::borrow(reinterpret_cast<PyObject*>(Py_TYPE(object)));
      return import_attr("torch", "Tensor");
    }
    case ValueKind::Tuple:
      if (value->obj) return value->obj;
      return Ref::borrow(reinterpret_cast<PyObject*>(&PyTuple_Type));
    case ValueKind::List:
      if (value->view_type) return value->view_type;
      if (value->obj) return value->obj;  // a slice of an nn.Sequential or nn.ModuleList: its class
      return Ref::borrow(reinterpret_cast<PyObject*>(&PyList_Type));
    case ValueKind::Dict:
      if (value->dict_type) return value->dict_type;
      return Ref::borrow(reinterpret_cast<PyObject*>(&PyDict_Type));
    case ValueKind::Set: return Ref::borrow(reinterpret_cast<PyObject*>(&PySet_Type));
    case ValueKind::Function: return Ref::borrow(reinterpret_cast<PyObject*>(&PyFunction_Type));
    case ValueKind::UserMethod:  // a Python function bound to a value: a bound method
      if (value->obj && PyFunction_Check(value->obj.ptr())) return Ref::borrow(reinterpret_cast<PyObject*>(&PyMethod_Type));
      unsupported("type() of a " + value->describe());
    case ValueKind::Generator: return Ref::borrow(reinterpret_cast<PyObject*>(&PyGen_Type));
    case ValueKind::TensorMethod: {  // bound as on a real tensor: a builtin method, or a Python one's
      if (value->items.empty() || !value->items[0]->fake) unsupported("type() of a " + value->describe());
      Ref bound = check(PyObject_GetAttrString(value->items[0]->fake.ptr(), value->name.c_str()));
      return Ref::borrow(reinterpret_cast<PyObject*>(Py_TYPE(bound.ptr())));
    }
    case ValueKind::NewObject: return value->cls;
    case ValueKind::Constant:
      // A number the trace holds as a symbol is a plain int, float or bool at run time.
      return Ref::borrow(reinterpret_cast<PyObject*>(graph::concrete_type(value->obj.ptr())));
    case ValueKind::PyModule:
    case ValueKind::NNModule:
    case ValueKind::Object: return Ref::borrow(reinterpret_cast<PyObject*>(Py_TYPE(value->obj.ptr())));
    default: unsupported("type() of a " + value->describe());
  }
}

ValuePtr Tracer::load_attr(ValuePtr base, const std::string& name) {
  if (base->kind == ValueKind::NewObject) return new_object_attr(base, name);
  if (base->kind == ValueKind::Super && base->cls) return super_attr(base, name);
  if (ValuePtr written = pending_attribute(base, name))
    return is_deleted_attribute(written) ? read_deleted_attribute(base, name) : written;
  if (ValuePtr written = written_through_dict(base, name)) return written;
  if ((name == "__dict__" || name == "_modules" || name == "_parameters" || name == "_buffers") &&
      (base->kind == ValueKind::NNModule || base->kind == ValueKind::Object) && pending_write_lands_in(base, name))
    return table_with_pending_writes(base, name);
  Ref attr_name = check(PyUnicode_FromString(name.c_str()));
  switch (base->kind) {
    case ValueKind::NNModule: return nn_module_attr(base, name);
    case ValueKind::PyModule: {
      Ref attr = steal(PyObject_GetAttr(base->obj.ptr(), attr_name.ptr()));
      if (!attr) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) raise_python_error();
        // Absent: the AttributeError is raised in the trace (hasattr's False, getattr's default),
        // and a user module is guarded to stay without it (torch's namespaces are stable).
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        if (base->source && !is_torch_module_object(base->obj)) base->source->manager(*guards_).add_no_attr(name);
        PyErr_Restore(type, value, traceback);
        raise_python_error();
      }
      // torch's own namespaces are assumed stable; user modules' attributes are guarded.
      if (is_torch_module_object(base->obj) || !base->source) {
        auto value = Value::constant(attr, base->source ? Source::attr(base->source, name) : nullptr);
        if (PyModule_Check(attr.ptr())) value->kind = ValueKind::PyModule;
        return value;
      }
      return wrap(attr, Source::attr(base->source, name));
    }
    case ValueKind::Tensor: {
      if (base->cls) {
        if (ValuePtr own = subclass_attribute(base, name)) return own;
        if (ValuePtr overridden = attribute_override(base, name)) return overridden;
      }
      if (name == "grad" || name == "is_leaf")
        if (ValuePtr state = tensor_autograd_state(base, name)) return state;
      if (name == "grad_fn") {
        // A tensor that does not require grad has no grad_fn (its requires_grad is the fake's:
        // guarded for inputs, followed through autograd for computed tensors). One that does
        // has an autograd node of eager's graph, which the compiled graph does not make.
        Ref requires_grad = check(PyObject_GetAttrString(base->fake.ptr(), "requires_grad"));
        if (requires_grad.ptr() == Py_False) return Value::constant(Ref::borrow(Py_None));
        // A leaf (an input that is one, guarded so, or a tensor requires_grad_() made one) has none.
        ValuePtr leaf = tensor_autograd_state(base, "is_leaf");
        if (leaf && leaf->is_constant() && leaf->obj.ptr() == Py_True) return Value::constant(Ref::borrow(Py_None));
        // Computed from tensors that require grad: a node, which the trace only tells from None.
        if (leaf && leaf->is_constant() && leaf->obj.ptr() == Py_False && !base->source) return Value::constant(markers::marker(markers::Marker::GraphGradFn));
      }
      if (name == "_base" && !base->source) {
        // A tensor the graph computed: the fake tensors made the same views as eager, so the
        // fake's _base names the graph's tensor it views (or None). A view of an input is not
        // answered: the input may itself be a view of a tensor the trace never saw.
        Ref fake_base = check(PyObject_GetAttr(base->fake.ptr(), attr_name.ptr()));
        if (fake_base.ptr() == Py_None && graph_.computed_tensor(base->fake)) return Value::constant(fake_base);
        if (ValuePtr viewed = graph_.computed_tensor(fake_base)) return viewed;
        // A view of an input that is no view itself (guarded so): that input.
        for (const auto& [object, input] : tensor_inputs_) {
          if (input->fake.ptr() != fake_base.ptr() || !input->source) continue;
          ValuePtr inputs_base = wrap(check(PyObject_GetAttr(object, attr_name.ptr())), Source::attr(input->source, name));
          if (inputs_base->is_constant() && inputs_base->obj.ptr() == Py_None) return input;
        }
      }
      if (unsupported_tensor_attributes().count(name))
        unsupported("reading Tensor." + name + " (autograd or storage state is not captured in graphs)");
      if (base->source && !tensor_descriptor(name)) {
        // A Python attribute of an input tensor (its instance dict): read there, guarded at its source.
        for (const auto& [object, input] : tensor_inputs_) {
          if (input != base) continue;
          Ref dict = steal(PyObject_GetAttrString(object, "__dict__"));
          if (!dict) PyErr_Clear();
          PyObject* own = dict && PyDict_Check(dict.ptr()) ? PyDict_GetItemWithError(dict.ptr(), attr_name.ptr()) : nullptr;
          if (PyErr_Occurred()) throw PythonError();
          if (own) return wrap(Ref::borrow(own), Source::attr(base->source, name));
        }
      }
      Ref fake_attr = steal(PyObject_GetAttr(base->fake.ptr(), attr_name.ptr()));
      if (!fake_attr) {
        // Tensor attributes come from the tensor's type, which the tensor guards fix.
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
          PyErr_Clear();
          unsupported("reading Tensor." + name);
        }
        PyErr_Clear();
        raise(PyExc_AttributeError, "'Tensor' object has no attribute '" + name + "'");
      }
      if (is_tensor(fake_attr)) {
        static Ref& getattr_fn = *new Ref(import_attr("builtins", "getattr"));  // never freed: outlives the interpreter
        return graph_.call("call_function", getattr_fn, {base, Value::constant(attr_name)}, {}, "Tensor." + name);
      }
      if (PyCallable_Check(fake_attr.ptr())) {
        auto method = std::make_shared<Value>();
        method->kind = ValueKind::TensorMethod;
        method->items = {base};
        method->name = name;
        return method;
      }
      return Value::constant(std::move(fake_attr));
    }
    case ValueKind::Generator:
      if (name != "send" && name != "throw" && name != "close") unsupported("attribute " + name + " of a generator");
      [[fallthrough]];
    case ValueKind::Set: {
      auto method = std::make_shared<Value>();
      method->kind = ValueKind::TensorMethod;  // a method of a traced value: set.add etc.
      method->items = {base};
      method->name = name;
      return method;
    }
    case ValueKind::Dict:
    case ValueKind::List:
    case ValueKind::Tuple: {
      if (base->obj) {  // torch.return_types: fields by name
        Ref fields = check(PyObject_GetAttrString(base->obj.ptr(), "__match_args__"));
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields.ptr()); ++i)
          if (to_std_string(PyTuple_GET_ITEM(fields.ptr(), i)) == name) return base->items.at(i);
      }
      if (base->kind == ValueKind::Tuple && base->obj && PyType_Check(base->obj.ptr())) {
        // A method or property a NamedTuple class writes in Python: run in the trace.
        PyObject* raw = _PyType_Lookup(as_type(base->obj), attr_name.ptr());  // borrowed
        if (raw && PyFunction_Check(raw) && !name.starts_with("_")) {
          auto method = std::make_shared<Value>();
          method->kind = ValueKind::UserMethod;
          method->obj = Ref::borrow(raw);
          method->name = name;
          method->items = {base};
          return method;
        }
        if (raw && PyObject_TypeCheck(raw, &PyProperty_Type)) {
          Ref getter = check(PyObject_GetAttrString(raw, "fget"));
          if (PyFunction_Check(getter.ptr())) return inline_call(getter, {base}, {});
        }
        // The class's data (namedtuple's _fields): the value the class holds, fixed with it.
        if (raw && (PyTuple_CheckExact(raw) || PyUnicode_CheckExact(raw) || PyLong_CheckExact(raw)))
          return Value::constant(Ref::borrow(raw));
      }
      // Anything else is the class's (count, index, _replace): absent there, absent (hasattr).
      Ref type = base->kind == ValueKind::Tuple && base->obj ? base->obj : type_of(base);
      if (PyType_Check(type.ptr()) && !PyObject_HasAttr(type.ptr(), attr_name.ptr()))
        raise(PyExc_AttributeError, "'" + std::string(as_type(type)->tp_name) +
                                        "' object has no attribute '" + name + "'");
      auto method = std::make_shared<Value>();
      method->kind = ValueKind::TensorMethod;  // a method of a traced value: list.append etc.
      method->items = {base};
      method->name = name;
      return method;
    }
    case ValueKind::Super: {
      Ref attr = steal(PyObject_GetAttr(base->obj.ptr(), attr_name.ptr()));
      if (!attr) {
        PyErr_Clear();
        unsupported("super() has no attribute " + name);
      }
      if (ValuePtr method = dict_method_of(base->items[0], attr, name)) return method;
      // torch.Tensor.__torch_function__ bound to the class (a subclass's super() call): the
      // interpreter's own (tensor_subclasses.cpp), by its call policy.
      if (PyMethod_Check(attr.ptr()) && PyMethod_GET_SELF(attr.ptr()) == base->items[0]->obj.ptr() &&
          callable_policy(attr) != "tensor_torch_function") {
        auto method = std::make_shared<Value>();
        method->kind = ValueKind::UserMethod;
        method->obj = Ref::borrow(PyMethod_GET_FUNCTION(attr.ptr()));
        // No name: rebuilding it as self.<name> would find the subclass's method, not super's
        // (a graph break there would then call itself forever).
        method->items = {base->items[0]};
        return method;
      }
      return Value::constant(std::move(attr));
    }
    case ValueKind::Constant:
    case ValueKind::Object: {
      // A Python number the trace holds as a symbol: its methods (bit_length, is_integer) read
      // its value, so it is specialised first (guarded on that value).
      if (base->is_constant() && graph::is_symbolic(base->obj.ptr())) base = Value::constant(graph::specialize(base->obj), base->source);
      if (base->kind == ValueKind::Object && has_pending_writes(base)) {
        // A property of an object the trace wrote attributes of: its getter runs in the trace,
        // where it reads those writes (the real object does not have them yet).
        PyObject* raw = _PyType_Lookup(Py_TYPE(base->obj.ptr()), attr_name.ptr());
        if (raw && PyObject_TypeCheck(raw, &PyProperty_Type)) {
          Ref getter = check(PyObject_GetAttrString(raw, "fget"));
          if (PyFunction_Check(getter.ptr())) return inline_call(getter, {base}, {});
        }
      }
      Ref attr = steal(PyObject_GetAttr(base->obj.ptr(), attr_name.ptr()));
      if (!attr) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) raise_python_error();
        // Absent now; the trace relies on it staying absent.
        if (base->source) base->source->manager(*guards_).add_no_attr(name);
        raise_python_error();
      }
      if (base->kind == ValueKind::Object)
        if (ValuePtr method = dict_method_of(base, attr, name)) return method;
      if (base->kind == ValueKind::Object && PyMethod_Check(attr.ptr()) && PyMethod_GET_SELF(attr.ptr()) == base->obj.ptr()) {
        // A method of the object's class, bound to the traced value. Guarded on the function
        // obj.<name> binds (the class's method replaced, or an instance attribute shadowing it,
        // fails the guard).
        if (base->source) guard_bound_function(Source::attr(base->source, name), attr);
        auto method = std::make_shared<Value>();
        method->kind = ValueKind::UserMethod;
        method->obj = Ref::borrow(PyMethod_GET_FUNCTION(attr.ptr()));
        method->name = name;
        method->items = {base};
        return method;
      }
      if (base->source && base->kind == ValueKind::Object) return wrap(attr, Source::attr(base->source, name));
      if (base->source && is_user_class(base->obj)) {
        // Cfg.scale, Cls.method, Cls.factory: class attributes a program may assign between
        // calls, so guarded (a classmethod through the function it binds: each read makes a
        // new bound method).
        SourcePtr attr_source = Source::attr(base->source, name);
        if (PyMethod_Check(attr.ptr()) && PyMethod_GET_SELF(attr.ptr()) == base->obj.ptr()) {
          guard_bound_function(attr_source, attr);
          return Value::constant(std::move(attr));
        }
        return wrap(attr, attr_source);
      }
      // An exception the trace raised holding a value only it has (StopIteration(tensor) of a
      // generator's return): the value.
      if (base->is_constant() && PyExceptionInstance_Check(base->obj.ptr())) return key_value(attr);
      return Value::constant(std::move(attr));
    }
    case ValueKind::Function: return function_attr(base, name);
    case ValueKind::Cell:
      if (name == "cell_contents") {
        if (base->items.empty() || !base->items[0]) raise(PyExc_ValueError, "Cell is empty");
        return base->items[0];
      }
      unsupported("attribute " + name + " of a closure cell");
    case ValueKind::UserMethod:
      // A bound method as a value: what it binds.
      if (name == "__self__" && !base->items.empty()) return base->items[0];
      if (name == "__func__" && base->obj) return Value::constant(base->obj);
      [[fallthrough]];
    default: unsupported("attribute " + name + " of a " + base->describe());
  }
}

// An attribute of a function the trace made: what the trace set on it (functools.wraps sets
// __name__, __wrapped__, ...; its __dict__ is that table), else the function object's own. Such
// functions never leave the trace, so the writes stay with the Value.
ValuePtr Tracer::function_attr(const ValuePtr& function, const std::string& name) {
  if (!function->attributes) function->attributes = Value::dict({}, {});
  if (name == "__dict__") return function->attributes;
  // Its closure: the cells the trace holds (the function object made for it has none).
  if (name == "__closure__" && !function->items.empty()) return Value::sequence(ValueKind::Tuple, function->items);
  if (auto made = made_defaults_.find(function->obj.ptr()); made != made_defaults_.end()) {
    // The defaults calls bind (a list default holds what earlier calls appended).
    if (name == "__defaults__" && made->second.first) return made->second.first;
    if (name == "__kwdefaults__" && made->second.second) return made->second.second;
  }
  Ref key = check(PyUnicode_FromString(name.c_str()));
  int at = function->attributes->dict_index(key);
  if (at >= 0) return function->attributes->items[at];
  return Value::constant(checked(PyObject_GetAttr(function->obj.ptr(), key.ptr())));
}

// A dynamic trace, once done: the facts its ShapeEnv recorded about the inputs' sizes.
void Tracer::add_shape_guard() {
  Ref result;
  try {
    result = check(PyObject_CallMethod(graph_.shape_trace().ptr(), "guard_checks", nullptr));
  } catch (const PythonError&) {
    graph::rethrow_trace_error();
  }
  // (source names, texts, checks): a check is (program, None) or (None, predicate).
  PyObject* names = PyTuple_GET_ITEM(result.ptr(), 0);
  PyObject* texts = PyTuple_GET_ITEM(result.ptr(), 1);
  PyObject* programs = PyTuple_GET_ITEM(result.ptr(), 2);
  std::vector<guards::ObjectFetcher> fetchers;
  std::vector<std::string> sources;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(names); ++i) {
    std::string name = to_std_string(Handle(PyList_GET_ITEM(names, i)));
    SourcePtr found;
    for (const auto& input : graph_.inputs())
      if (input.source->str() == name) found = input.source;
    if (!found) throw InternalError("a symbolic input without a source: " + name);
    fetchers.push_back([found](const guards::FrameView& f) { return found->fetch(f); });
    sources.push_back(name);
  }
  std::vector<guards::ShapeCheck> checks;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(texts); ++i) {
    guards::ShapeCheck c;
    c.text = to_std_string(Handle(PyList_GET_ITEM(texts, i)));
    PyObject* pair = PyList_GET_ITEM(programs, i);
    PyObject* program = PyTuple_GET_ITEM(pair, 0);
    if (program == Py_None) {
      c.predicate = Ref::borrow(PyTuple_GET_ITEM(pair, 1));
    } else {
      for (Py_ssize_t k = 0; k < PyList_GET_SIZE(program); ++k) {
        long long v = PyLong_AsLongLong(PyList_GET_ITEM(program, k));
        if (v == -1 && PyErr_Occurred()) throw PythonError();
        c.program.push_back(v);
      }
    }
    checks.push_back(std::move(c));
  }
  guards_->add_shape_guard(std::move(fetchers), std::move(sources), std::move(checks));
}

}  // namespace cdynamo::interp
