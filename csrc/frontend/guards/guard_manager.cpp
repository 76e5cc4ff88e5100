// GuardManager: one node of the guard tree (leaf guards on a value, accessors to child values).
// Assumes the GIL is held; a tree is built fully before its first check and not changed after.
#include "frontend/guards/guards_internal.h"

namespace cdynamo::guards {

int python_callout_depth = 0;

GuardManager::~GuardManager() = default;

std::string Accessor::describe_missing(PyObject* /*parent*/) const {
  return manager.source() + " is missing";
}

GuardManager& GuardManager::child(std::unique_ptr<Accessor> accessor) {
  for (auto& existing : accessors_) {
    if (existing->same_as(*accessor)) return existing->manager;
  }
  accessors_.push_back(std::move(accessor));
  return accessors_.back()->manager;
}

GuardManager& GuardManager::attr(const std::string& name) {
  return child(make_attr_accessor(source_, name));
}
GuardManager& GuardManager::item(Py_ssize_t index) {
  return child(make_item_accessor(source_, index));
}
GuardManager& GuardManager::dict_item(Handle key) {
  return child(make_dict_item_accessor(source_, key));
}
GuardManager& GuardManager::cell_contents() { return child(make_cell_contents_accessor(source_)); }
GuardManager& GuardManager::converted(Handle function, const std::string& function_name) {
  return child(make_converted_accessor(source_, function, function_name));
}

void GuardManager::add_type_match(PyTypeObject* type) { leaves_.push_back(make_type_match(type)); }
void GuardManager::add_symbolic_float_match() { leaves_.push_back(make_symbolic_float_match()); }
void GuardManager::add_id_match(Handle obj) { leaves_.push_back(make_id_match(obj)); }
void GuardManager::add_equals_match(Handle obj) { leaves_.push_back(make_equals_match(obj)); }
void GuardManager::add_length_check(Py_ssize_t length) {
  leaves_.push_back(make_length_check(length));
}
void GuardManager::add_no_attr(const std::string& name) { leaves_.push_back(make_no_attr(name)); }
void GuardManager::add_dict_key_order(std::vector<Ref> keys) { leaves_.push_back(make_dict_key_order(std::move(keys))); }
void GuardManager::add_requires_grad_match(bool requires_grad) {
  leaves_.push_back(make_requires_grad_match(requires_grad));
}
void GuardManager::add_tensor_match(Handle tensor, Handle shape_from) {
  leaves_.push_back(make_tensor_match(tensor, shape_from));
}

// The hot path. Leaves first: they are cheap and usually include a type check that makes the
// accessors below safe and meaningful. On a failure the failing guard moves towards the front.
bool GuardManager::check(PyObject* value) {
  const size_t n_leaves = leaves_.size();
  for (size_t i = 0; i < n_leaves; ++i) {
    if (!leaves_[i]->check(value)) {
      ++leaves_[i]->fail_count;
      promote_after_failure(leaves_, i);
      return false;
    }
  }
  const size_t n_accessors = accessors_.size();
  for (size_t i = 0; i < n_accessors; ++i) {
    Accessor& accessor = *accessors_[i];
    PyObject* child_value = accessor.get(value);
    bool ok = child_value != nullptr && accessor.manager.check(child_value);
    Py_XDECREF(child_value);
    if (!ok) {
      ++accessor.fail_count;
      promote_after_failure(accessors_, i);
      return false;
    }
  }
  return true;
}

// Walks in the same order as check() but reorders nothing, so asking why a check failed does
// not disturb the statistics.
std::string GuardManager::failure_reason(PyObject* value) const {
  for (const auto& leaf : leaves_) {
    if (!leaf->check(value)) return leaf->describe(value, source_);
  }
  for (const auto& accessor : accessors_) {
    Ref child_value = Ref::steal(accessor->get(value));
    if (!child_value) return accessor->describe_missing(value);
    std::string reason = accessor->manager.failure_reason(child_value.ptr());
    if (!reason.empty()) return reason;
  }
  return "";
}

size_t GuardManager::size() const {
  size_t n = leaves_.size();
  for (const auto& accessor : accessors_) n += accessor->manager.size();
  return n;
}

bool GuardManager::expired() const {
  for (const auto& leaf : leaves_)
    if (leaf->expired()) return true;
  for (const auto& accessor : accessors_)
    if (accessor->manager.expired()) return true;
  return false;
}

std::string GuardManager::dump(int indent) const {
  const std::string pad(static_cast<size_t>(indent), ' ');
  std::string out = pad + source_ + "\n";
  for (const auto& leaf : leaves_) {
    out += pad + "  | " + leaf->repr() + "  (failed " + std::to_string(leaf->fail_count) + ")\n";
  }
  for (const auto& accessor : accessors_) {
    out += pad + "  -> (failed " + std::to_string(accessor->fail_count) + ")\n";
    out += accessor->manager.dump(indent + 4);
  }
  return out;
}

}  // namespace cdynamo::guards
