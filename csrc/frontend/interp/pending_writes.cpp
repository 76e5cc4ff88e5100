// Attribute writes on objects from the frame, which the graph's side effects make after it: what
// the trace's own reads see of them (the attribute, the table it lands in). Assumes SideEffect.
#include "common/error.h"
#include "common/py_import.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {
namespace {

PyTypeObject* as_type(PyObject* obj) { return reinterpret_cast<PyTypeObject*>(obj); }
Ref interned(const std::string& name) { return check(PyUnicode_InternFromString(name.c_str())); }

}  // namespace


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
    if (landing_table(base, effect) == table) merged->dict_set(check(PyUnicode_FromString(effect.name.c_str())), effect.value);
  }
  merged->read_only = true;
  return merged;
}

}  // namespace cdynamo::interp
