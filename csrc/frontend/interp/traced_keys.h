// Set items and dict keys that are traced values (tensors, objects): the trace's sets and dicts
// hold a stand-in object for each, a "traced key", hashed as the value hashes at run time.
// Assumes the GIL is held. A traced key never leaves the trace: reads turn it back into its value.
#pragma once
#include <optional>
#include <vector>
#include "common/py_ref.h"
#include "frontend/interp/value.h"

namespace cdynamo::interp {

// A new traced key for `value`. hash: what the value's __hash__ traced to, compared with == where
// hashes meet (traced_eq); none: the value hashes and compares by identity (tensors, plain objects),
// so the key is equal to itself only.
Ref new_traced_key(ValuePtr value, std::optional<Py_hash_t> hash);
// The value a traced key stands for, or null for any other object.
ValuePtr traced_key_value(PyObject* key);
// Whether a traced key was hashed by a user __hash__ (its equality is the user's __eq__ too).
bool traced_key_has_user_eq(PyObject* key);
// A key read out of a set or dict of the trace: its traced value, or the constant it is.
ValuePtr key_value(Handle key);
// The keys of a Dict or the members of a Set, as they are held (constants and traced keys).
std::vector<Ref> held_keys(const Value& container);
// The traced values among them (what leaving the trace must rebuild, and graph outputs include).
std::vector<ValuePtr> traced_keys_of(const Value& container);

}  // namespace cdynamo::interp
