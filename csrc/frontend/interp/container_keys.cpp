// Set items and dict keys of the trace's sets and dicts: constants as themselves, traced values
// (tensors, objects) as traced keys (traced_keys.h), hashed and compared as CPython would.
// Assumes the hash and equality the program relies on are the classes' (guarded with them).
#include "common/error.h"
#include "common/py_import.h"
#include "common/py_types.h"
#include "frontend/interp/tracer.h"
#include "frontend/interp/traced_keys.h"

namespace cdynamo::interp {

namespace {

PyObject* type_hash_entry(PyObject* type) {
  static Ref& name = *new Ref(interned("__hash__"));  // never freed: outlives the interpreter
  return PyType_Check(type) ? _PyType_Lookup(as_type(type), name.ptr()) : nullptr;
}

}  // namespace

Ref Tracer::traced_key(const ValuePtr& value, const char* what) {
  // What stands for the object's identity: a tensor is its fake (one tensor may be several
  // Values), an object from the frame or a module its object, an object the trace made its Value.
  const void* identity = value.get();
  Ref type;
  switch (value->kind) {
    case ValueKind::Tensor:
      identity = value->fake.ptr();
      type = type_of(value);
      break;
    case ValueKind::NNModule:
    case ValueKind::Object:
    case ValueKind::Function:
      if (!value->obj) unsupported(std::string(what) + " that is a " + value->describe());
      identity = value->obj.ptr();
      type = Ref::borrow(reinterpret_cast<PyObject*>(Py_TYPE(value->obj.ptr())));
      break;
    case ValueKind::NewObject: type = value->cls; break;
    default: unsupported(std::string(what) + " that is a " + value->describe());
  }
  PyObject* hash = type_hash_entry(type.ptr());
  if (hash == Py_None) raise(PyExc_TypeError, "unhashable type: '" + std::string(as_type(type)->tp_name) + "'");
  static Ref& tensor_hash = *new Ref(Ref::borrow(type_hash_entry(import_attr("torch", "Tensor").ptr())));  // never freed: outlives the interpreter
  static Ref& object_hash = *new Ref(Ref::borrow(type_hash_entry(reinterpret_cast<PyObject*>(&PyBaseObject_Type))));  // likewise
  if (hash == object_hash.ptr() || (value->is_tensor() && hash == tensor_hash.ptr())) {
    // Hashed by identity: equal only to itself, so one traced key per object serves every container.
    auto found = traced_keys_.find(identity);
    if (found != traced_keys_.end()) return found->second;
    Ref key = new_traced_key(value, std::nullopt);
    traced_keys_.emplace(identity, key);
    return key;
  }
  if (!hash || !PyFunction_Check(hash) || value->is_tensor())
    unsupported(std::string(what) + " that is a " + value->describe() + " hashed by a builtin __hash__");
  // A __hash__ written in Python, traced now: the container keeps the hash of the moment it is
  // stored (a new traced key each time), as a real one does.
  ValuePtr result = inline_call(Ref::borrow(hash), {value}, {});
  if (!result->is_constant() || !PyLong_Check(result->obj.ptr()))
    unsupported(std::string(what) + " whose __hash__ returns a " + result->describe());
  Py_hash_t traced_hash = PyObject_Hash(result->obj.ptr());
  if (traced_hash == -1) raise_python_error();
  return new_traced_key(value, traced_hash);
}

Ref Tracer::container_key(const ValuePtr& value, const std::vector<Ref>& held, const char* what) {
  const bool constant = value->is_fully_constant();
  Ref key = constant ? hashable_constant(value, what) : traced_key(value, what);
  const Py_hash_t hash = PyObject_Hash(key.ptr());
  if (hash == -1) raise_python_error();  // unhashable: TypeError, as at run time
  // Keys of one hash are compared with ==, the held one first. Where neither has a user __eq__ the
  // real set or dict answers alike; otherwise the comparison is traced.
  const bool user_eq = traced_key_has_user_eq(key.ptr());
  for (const Ref& held_key : held) {
    if (held_key.ptr() == key.ptr()) return held_key;
    if (!user_eq && !traced_key_has_user_eq(held_key.ptr())) continue;
    ValuePtr held_value = key_value(held_key);
    if (held_value == value) return held_key;  // `is` before ==
    Py_hash_t held_hash = PyObject_Hash(held_key.ptr());
    if (held_hash == -1) raise_python_error();
    if (held_hash != hash) continue;
    compare_op(Py_EQ, held_value, value);
    if (truth_value(pop())) return held_key;
  }
  return key;
}

Ref Tracer::rehold_key(const Ref& key, const std::vector<Ref>& held) {
  if (!traced_key_has_user_eq(key.ptr())) return key;  // a constant or an identity key: the real == answers
  return container_key(key_value(key), held, "a dict key");
}

int Tracer::dict_find(const ValuePtr& dict, const ValuePtr& key) {
  return dict->dict_index(container_key(key, dict->keys, "a dict key"));
}

Ref Tracer::set_member(const ValuePtr& set, const ValuePtr& item) {
  return container_key(item, held_keys(*set), "a set item");
}

}  // namespace cdynamo::interp
