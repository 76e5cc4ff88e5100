// Attribute writes on objects from the frame, which the graph's side effects make after it: what
// the trace's own reads see of them (the attribute, the table it lands in). Assumes SideEffect.
#include "common/error.h"
#include "common/py_import.h"
#include "common/py_types.h"
#include "frontend/interp/tracer.h"
#include "frontend/interp/trace_markers.h"

namespace cdynamo::interp {

ValuePtr Tracer::pending_attribute(const ValuePtr& base, const std::string& name) const {
  if (base->is_tensor() && base->fake) {  // one tensor, however many Values: its fake
    for (auto it = side_effects_.rbegin(); it != side_effects_.rend(); ++it)
      if (it->object->is_tensor() && it->object->fake.ptr() == base->fake.ptr() && it->name == name) return it->value;
    return nullptr;
  }
  if (!base->obj) return nullptr;
  if (PyType_Check(base->obj.ptr())) return pending_class_attribute(as_type(base->obj.ptr()), name);
  for (auto it = side_effects_.rbegin(); it != side_effects_.rend(); ++it)
    if (it->object->obj.ptr() == base->obj.ptr() && it->name == name) return it->value;
  return nullptr;
}

// A class attribute as the trace's own writes left it: the first class of the MRO that holds
// the name decides, as attribute lookup does (a pending write counts as holding it).
ValuePtr Tracer::pending_class_attribute(PyTypeObject* type, const std::string& name) const {
  PyObject* mro = type->tp_mro;
  if (!mro || side_effects_.empty()) return nullptr;
  Ref key = interned(name);
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); ++i) {
    PyObject* cls = PyTuple_GET_ITEM(mro, i);
    for (auto it = side_effects_.rbegin(); it != side_effects_.rend(); ++it)
      if (it->object->obj.ptr() == cls && it->name == name) return it->value;
    PyObject* dict = as_type(cls)->tp_dict;
    if (dict && PyDict_GetItemWithError(dict, key.ptr())) return nullptr;
    if (PyErr_Occurred()) throw PythonError();
  }
  return nullptr;
}

namespace {

// The value a pending write of a deleted attribute holds (the replay deletes it: DELETE_ATTR).
const Ref& deleted_marker() { return markers::marker(markers::Marker::DeletedAttribute); }

// Whether the object's own tables hold the name: its __dict__ and, for a module, its _modules,
// _parameters and _buffers (what `del` removes; a class attribute is not the instance's).
// Whether the class's `name` (__delattr__, __getattr__) is object's or nn.Module's own: what the
// trace's model of a deletion and of a read after it assumes.
bool object_or_module_slot(PyTypeObject* type, const char* name) {
  static Ref& module_type = *new Ref(import_attr("torch.nn", "Module"));  // never freed: outlives the interpreter
  Ref key = interned(name);
  PyObject* found = _PyType_Lookup(type, key.ptr());  // borrowed
  return !found || found == _PyType_Lookup(&PyBaseObject_Type, key.ptr()) || found == _PyType_Lookup(as_type(module_type), key.ptr());
}

bool instance_holds(PyObject* obj, const std::string& name) {
  Ref dict = steal(PyObject_GenericGetDict(obj, nullptr));
  if (!dict) {
    PyErr_Clear();
    return false;
  }
  if (PyDict_GetItemString(dict.ptr(), name.c_str())) return true;
  for (const char* table : {"_modules", "_parameters", "_buffers"}) {
    PyObject* entries = PyDict_GetItemString(dict.ptr(), table);  // borrowed
    if (entries && PyDict_Check(entries) && PyDict_GetItemString(entries, name.c_str())) return true;
  }
  return false;
}

}  // namespace

bool is_deleted_attribute(const ValuePtr& written) {
  return written->is_constant() && written->obj.ptr() == deleted_marker().ptr();
}

// `del obj.name` on an object from the frame (a module's child, an object's attribute): replayed
// after the graph, where nn.Module.__delattr__ takes it out of the table it is in; the trace's
// reads see the name gone. A class that deletes in a __delattr__ of its own breaks.
void Tracer::delete_frame_attribute(const ValuePtr& object, const std::string& name) {
  const bool reachable = (object->kind == ValueKind::Object || object->kind == ValueKind::NNModule) && object->source && object->obj;
  if (!reachable) unsupported("deleting an attribute of a " + object->describe());
  PyTypeObject* type = Py_TYPE(object->obj.ptr());
  Ref key = interned(name);
  if (!object_or_module_slot(type, "__delattr__"))
    unsupported("deleting an attribute of a " + std::string(type->tp_name) + " object, whose class defines __delattr__");
  PyObject* found = _PyType_Lookup(type, key.ptr());  // borrowed
  if (found && Py_TYPE(found)->tp_descr_set) unsupported("deleting the attribute " + name + " (a descriptor of its class)");
  ValuePtr pending = pending_attribute(object, name);
  const bool present = pending ? !is_deleted_attribute(pending) : instance_holds(object->obj.ptr(), name);
  if (!present) raise(PyExc_AttributeError, "'" + std::string(type->tp_name) + "' object has no attribute '" + name + "'");
  side_effects_.push_back({object, name, Value::constant(deleted_marker())});
}

// An attribute read after the trace deleted it: the class's attribute, or a class __getattr__
// other than nn.Module's (which only looks in the tables the deletion left), where there is one
// (not modelled: break), else AttributeError as eager raises.
ValuePtr Tracer::read_deleted_attribute(const ValuePtr& base, const std::string& name) {
  PyTypeObject* type = Py_TYPE(base->obj.ptr());
  if (_PyType_Lookup(type, interned(name).ptr())) unsupported("reading the class attribute " + name + " after deleting the instance's");
  if (!object_or_module_slot(type, "__getattr__"))
    unsupported("reading " + name + " after deleting it from an object whose class defines __getattr__");
  raise(PyExc_AttributeError, "'" + std::string(type->tp_name) + "' object has no attribute '" + name + "'");
}

bool Tracer::has_pending_writes(const ValuePtr& base) const {
  if (!base->obj) return false;
  for (const SideEffect& effect : side_effects_)
    if (!effect.name.empty() && effect.object->obj.ptr() == base->obj.ptr()) return true;
  return false;
}

// Where an attribute write of base the trace holds (made after the graph) lands: an nn.Module's
// _modules (a module assigned, or a name already there), _parameters or _buffers (a name already
// there), else the instance's __dict__.
std::string Tracer::landing_table(const ValuePtr& base, const SideEffect& effect) const {
  if (base->kind != ValueKind::NNModule) return "__dict__";
  Ref dict = steal(PyObject_GenericGetDict(base->obj.ptr(), nullptr));
  if (!dict) PyErr_Clear();
  auto in_table = [&](const char* name) {
    PyObject* entries = dict ? PyDict_GetItemString(dict.ptr(), name) : nullptr;  // borrowed
    return entries && PyDict_Check(entries) && PyDict_GetItemString(entries, effect.name.c_str());
  };
  if (effect.value->kind == ValueKind::NNModule || in_table("_modules")) return "_modules";
  if (in_table("_parameters")) return "_parameters";
  if (in_table("_buffers")) return "_buffers";
  return "__dict__";
}

bool Tracer::pending_write_lands_in(const ValuePtr& base, const std::string& table) const {
  if (!base->obj) return false;
  for (const SideEffect& effect : side_effects_) {
    if (effect.name.empty() || effect.name == kDeferredCall || effect.object->obj.ptr() != base->obj.ptr()) continue;
    if (landing_table(base, effect) == table) return true;
  }
  return false;
}

// An attribute the trace wrote through the object's __dict__ (`self.__dict__["scale"] = 3.0`,
// `vars(self).update(...)`), or into a module's _buffers/_parameters/_modules (register_buffer
// of a new buffer): the dict the trace holds for it has the value (written after the graph),
// unless a data descriptor of the class takes precedence. Null for others.
ValuePtr Tracer::written_through_dict(const ValuePtr& base, const std::string& name) {
  if ((base->kind != ValueKind::NNModule && base->kind != ValueKind::Object) || !base->obj) return nullptr;
  PyObject** dict_slot = _PyObject_GetDictPtr(base->obj.ptr());
  if (!dict_slot || !*dict_slot) return nullptr;
  // The tables the trace holds as dicts, in the order attribute lookup reads them (most reads
  // find none: every attribute load of a module or object passes here).
  std::vector<ValuePtr> held;
  auto hold = [&](PyObject* table) {
    auto seen = table ? container_inputs_.find(table) : container_inputs_.end();
    if (seen != container_inputs_.end()) held.push_back(seen->second);
  };
  hold(*dict_slot);
  if (base->kind == ValueKind::NNModule)
    for (const char* table : {"_parameters", "_buffers", "_modules"}) hold(PyDict_GetItemString(*dict_slot, table));
  if (held.empty()) return nullptr;
  Ref key = check(PyUnicode_FromString(name.c_str()));
  PyObject* raw = _PyType_Lookup(Py_TYPE(base->obj.ptr()), key.ptr());  // borrowed
  if (raw && Py_TYPE(raw)->tp_descr_set) return nullptr;
  for (const ValuePtr& table : held) {
    int index = table->dict_index(key);
    if (index < 0) continue;
    if (table->items[index]->source) return nullptr;  // read, not written: the usual path
    return table->items[index];
  }
  return nullptr;
}

// An instance's __dict__ or a module's _modules, _parameters or _buffers read after the trace set
// attributes that land there (written after the graph): the table as it is, with those writes,
// read-only (a write to it would have to reach the object's own table too).
ValuePtr Tracer::table_with_pending_writes(const ValuePtr& base, const std::string& table) {
  if (!base->source) unsupported("reading " + table + " of an object the function set an attribute of");
  Ref real = check(PyObject_GetAttrString(base->obj.ptr(), table.c_str()));
  if (!PyDict_CheckExact(real.ptr()) && !PyDict_Check(real.ptr()))
    unsupported("reading " + table + " that is not a dict, after the function set an attribute");
  ValuePtr read = wrap(real, Source::attr(base->source, table));
  if (read->kind != ValueKind::Dict) unsupported("reading " + table + " of a " + read->describe());
  ValuePtr merged = Value::dict(read->keys, read->items);
  merged->dict_type = read->dict_type;
  for (const SideEffect& effect : side_effects_) {
    if (effect.name.empty() || effect.name == kDeferredCall || effect.object->obj.ptr() != base->obj.ptr()) continue;
    if (landing_table(base, effect) != table) continue;
    Ref key = check(PyUnicode_FromString(effect.name.c_str()));
    if (!is_deleted_attribute(effect.value)) {
      merged->dict_set(std::move(key), effect.value);
    } else if (int at = merged->dict_index(key); at >= 0) {
      merged->keys.erase(merged->keys.begin() + at);
      merged->items.erase(merged->items.begin() + at);
    }
  }
  merged->read_only = true;
  return merged;
}

}  // namespace cdynamo::interp
