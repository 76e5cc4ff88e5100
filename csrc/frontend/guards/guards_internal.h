// Factories and helpers shared by the guard tree's files; not part of the interpreter's contract.
// Assumes the GIL is held for every call; nothing here includes torch headers.
#pragma once
#include <memory>
#include <string>
#include <vector>
#include "frontend/guards/guards.h"

namespace cdynamo::guards {

// ---- Leaf guards (leaf_guards.cpp, tensor_match.cpp) ----
std::unique_ptr<LeafGuard> make_type_match(PyTypeObject* type);
std::unique_ptr<LeafGuard> make_symbolic_float_match();
std::unique_ptr<LeafGuard> make_id_match(Handle obj);
std::unique_ptr<LeafGuard> make_equals_match(Handle obj);
std::unique_ptr<LeafGuard> make_length_check(Py_ssize_t length);
std::unique_ptr<LeafGuard> make_no_attr(const std::string& name);
std::unique_ptr<LeafGuard> make_dict_key_order(std::vector<Ref> keys);
std::unique_ptr<LeafGuard> make_requires_grad_match(bool requires_grad);
// Records everything a compiled graph specialised on; throws UserError if `tensor` is not one.
// With shape_from (a fake tensor of a dynamic trace), its symbolic sizes and strides are not checked.
std::unique_ptr<LeafGuard> make_tensor_match(Handle tensor, Handle shape_from = Handle());

// A guard on the whole frame or on global state rather than on one value.
class RootGuard {
 public:
  virtual ~RootGuard() = default;
  virtual bool check(const FrameView& frame) const = 0;
  virtual std::string describe(const FrameView& frame) const = 0;
  virtual std::string repr() const = 0;
  uint64_t fail_count = 0;
};

// Sizes relations of a dynamic trace (shape_guard.cpp, with torch headers).
std::unique_ptr<RootGuard> make_shape_guard(std::vector<ObjectFetcher> tensors, std::vector<std::string> sources,
                                            std::vector<ShapeCheck> checks);

// ---- Accessors (accessors.cpp); each builds the child's source from the parent's ----
std::unique_ptr<Accessor> make_attr_accessor(const std::string& parent_source,
                                             const std::string& name);
std::unique_ptr<Accessor> make_item_accessor(const std::string& parent_source, Py_ssize_t index);
std::unique_ptr<Accessor> make_dict_item_accessor(const std::string& parent_source, Handle key);
std::unique_ptr<Accessor> make_cell_contents_accessor(const std::string& parent_source);
std::unique_ptr<Accessor> make_converted_accessor(const std::string& parent_source, Handle function,
                                                  const std::string& function_name);

// ---- Global torch state (global_state.cpp) ----
bool grad_mode_enabled();

// ---- Shared helpers (leaf_guards.cpp) ----
// The name users know a type by: "int", "Tensor", "Parameter".
std::string type_name(PyTypeObject* type);
// repr(obj) for messages; never leaves an error set.
std::string safe_repr(PyObject* obj);

// A guard that may run arbitrary Python code (a user __eq__, a property) marks the call with a
// PythonCallout. That code could re-enter a check of the same tree; while any callout is active,
// managers do not reorder their children, so an outer loop over them never skips one.
extern int python_callout_depth;
struct PythonCallout {
  PythonCallout() { ++python_callout_depth; }
  ~PythonCallout() { --python_callout_depth; }
  PythonCallout(const PythonCallout&) = delete;
  PythonCallout& operator=(const PythonCallout&) = delete;
};

// Moves element i of a vector of owned guards forward past those that failed less often, so the
// vector stays sorted by fail_count (descending) after one count was incremented.
template <typename Vec>
void promote_after_failure(Vec& items, size_t i) {
  if (python_callout_depth != 0) return;
  while (i > 0 && items[i - 1]->fail_count < items[i]->fail_count) {
    std::swap(items[i - 1], items[i]);
    --i;
  }
}

}  // namespace cdynamo::guards
