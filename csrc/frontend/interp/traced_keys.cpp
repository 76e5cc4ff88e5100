// The traced key type (a small Python type of our own, so real sets and dicts can hold it) and
// the reads that turn held keys back into values. Assumes the GIL is held.
#include "frontend/interp/traced_keys.h"
#include "common/error.h"

namespace cdynamo::interp {

namespace {

struct TracedKeyObject {
  PyObject_HEAD
  ValuePtr* value;  // owned; a strong reference, as a real set holds its items
  Py_hash_t hash;
  bool user_eq;
};

void traced_key_dealloc(PyObject* self) {
  auto* key = reinterpret_cast<TracedKeyObject*>(self);
  delete key->value;
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);  // a heap type: each instance holds a reference to it
}

Py_hash_t traced_key_hash(PyObject* self) { return reinterpret_cast<TracedKeyObject*>(self)->hash; }

PyObject* traced_key_repr(PyObject* self) {
  const ValuePtr& value = *reinterpret_cast<TracedKeyObject*>(self)->value;
  return PyUnicode_FromFormat("<traced %s>", value->describe().c_str());
}

PyTypeObject* traced_key_type() {
  // Never freed: instances may be alive until the interpreter ends.
  static PyTypeObject* type = [] {
    static PyType_Slot slots[] = {
        {Py_tp_dealloc, reinterpret_cast<void*>(traced_key_dealloc)},
        {Py_tp_hash, reinterpret_cast<void*>(traced_key_hash)},
        {Py_tp_repr, reinterpret_cast<void*>(traced_key_repr)},
        {0, nullptr},
    };
    // No Py_TPFLAGS_BASETYPE: nothing derives from it. Equality is object's: identity.
    static PyType_Spec spec = {"cdynamo._C.TracedKey", sizeof(TracedKeyObject), 0, Py_TPFLAGS_DEFAULT, slots};
    return reinterpret_cast<PyTypeObject*>(check(PyType_FromSpec(&spec)).release());
  }();
  return type;
}

TracedKeyObject* as_traced_key(PyObject* key) {
  if (!key || Py_TYPE(key) != traced_key_type()) return nullptr;
  return reinterpret_cast<TracedKeyObject*>(key);
}

}  // namespace

Ref new_traced_key(ValuePtr value, std::optional<Py_hash_t> hash) {
  PyTypeObject* type = traced_key_type();
  Ref key = check(type->tp_alloc(type, 0));
  auto* object = reinterpret_cast<TracedKeyObject*>(key.ptr());
  object->value = new ValuePtr(std::move(value));
  object->user_eq = hash.has_value();
  // An identity hash like object's: from the address, never -1 (CPython's error value).
  Py_hash_t identity = static_cast<Py_hash_t>(reinterpret_cast<uintptr_t>(key.ptr()) >> 4);
  object->hash = hash.value_or(identity == -1 ? -2 : identity);
  return key;
}

ValuePtr traced_key_value(PyObject* key) {
  TracedKeyObject* object = as_traced_key(key);
  return object ? *object->value : nullptr;
}

bool traced_key_has_user_eq(PyObject* key) {
  TracedKeyObject* object = as_traced_key(key);
  return object && object->user_eq;
}

ValuePtr key_value(Handle key) {
  if (ValuePtr value = traced_key_value(key.ptr())) return value;
  return Value::constant(Ref::borrow(key));
}

std::vector<Ref> held_keys(const Value& container) {
  if (container.kind == ValueKind::Dict) return container.keys;
  std::vector<Ref> keys;
  if (container.kind != ValueKind::Set || !container.obj) return keys;
  Ref list = check(PySequence_List(container.obj.ptr()));
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list.ptr()); ++i) keys.push_back(Ref::borrow(PyList_GET_ITEM(list.ptr(), i)));
  return keys;
}

std::vector<ValuePtr> traced_keys_of(const Value& container) {
  std::vector<ValuePtr> values;
  if (container.kind != ValueKind::Dict && container.kind != ValueKind::Set) return values;
  for (const Ref& key : held_keys(container))
    if (ValuePtr value = traced_key_value(key.ptr())) values.push_back(std::move(value));
  return values;
}

}  // namespace cdynamo::interp
