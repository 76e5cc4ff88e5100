// The guard tree: decides in C++ whether a frame's inputs still match what a cache entry was
// traced with. Accessors own child managers; leaf guards check one value; most-failing first.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include "common/py_ref.h"

namespace cdynamo::guards {

// What guards read from a frame. All borrowed; valid for the duration of one check.
struct FrameView {
  PyObject* const* localsplus = nullptr;  // fast locals: args | locals | cells (may hold NULL)
  PyObject* globals = nullptr;            // the frame's globals dict
  PyObject* builtins = nullptr;           // the frame's builtins dict
  PyObject* closure = nullptr;            // the function's closure tuple of cells, or NULL
};

// A check on one value. `describe` says in user terms why `value` fails it (for recompile
// reasons and the cache-limit warning), naming the value by `source`.
class LeafGuard {
 public:
  virtual ~LeafGuard() = default;
  virtual bool check(PyObject* value) const = 0;
  virtual std::string describe(PyObject* value, const std::string& source) const = 0;
  // A short name and the expected value, for dumps of the tree: "EQUALS_MATCH 3".
  virtual std::string repr() const = 0;
  // True once the guard can never pass again (an object it matches by identity was freed).
  virtual bool expired() const { return false; }
  uint64_t fail_count = 0;
};

class Accessor;
using ObjectFetcher = std::function<PyObject*(const FrameView&)>;

// One node: guards on the value found at `source` (e.g. "L['x']", "G['torch']", "L['self'].fc").
class GuardManager {
 public:
  explicit GuardManager(std::string source) : source_(std::move(source)) {}
  GuardManager(const GuardManager&) = delete;
  GuardManager& operator=(const GuardManager&) = delete;
  ~GuardManager();
  const std::string& source() const { return source_; }

  // Children, created on first request and shared on later ones.
  GuardManager& attr(const std::string& name);  // getattr(value, name); nn.Module's _modules,
                                                // _parameters and _buffers read without __getattr__
  GuardManager& item(Py_ssize_t index);          // value[index] for a tuple or list
  GuardManager& dict_item(Handle key);           // value[key] for a dict (exact key object, hashed)
  GuardManager& cell_contents();                 // value.cell_contents for a cell
  GuardManager& converted(Handle function, const std::string& function_name);  // function(value)

  // Leaf guards on this node's value.
  void add_type_match(PyTypeObject* type);  // type(value) is type
  void add_symbolic_float_match();          // a float, finite and not -0.0
  void add_id_match(Handle obj);            // value is obj (keeps obj alive)
  void add_equals_match(Handle obj);        // type(value) is type(obj) and value == obj
  void add_length_check(Py_ssize_t length); // len(value) == length (tuple, list, dict)
  void add_no_attr(const std::string& name); // not hasattr(value, name)
  void add_dict_key_order(std::vector<Ref> keys);  // the dict's keys, in this order
  void add_requires_grad_match(bool requires_grad);  // value.requires_grad == requires_grad
  // The tensor's Python type, dispatch keys, dtype, device, requires_grad, sizes and strides;
  // with shape_from (its fake tensor), sizes and strides symbolic there are left unchecked.
  void add_tensor_match(Handle tensor, Handle shape_from = Handle());

  bool check(PyObject* value);
  // The first failing guard's description under this node, or "" if all pass.
  std::string failure_reason(PyObject* value) const;
  // Number of leaf guards in this subtree.
  size_t size() const;
  // True if some guard in this subtree can never pass again.
  bool expired() const;
  // The subtree in check order with fail counts, one line per node or guard (for logs, tests).
  std::string dump(int indent = 0) const;

 private:
  GuardManager& child(std::unique_ptr<Accessor> accessor);
  std::string source_;
  std::vector<std::unique_ptr<LeafGuard>> leaves_;
  std::vector<std::unique_ptr<Accessor>> accessors_;
};

// Reads a child value from a parent value (returns a new reference, or NULL without an error
// set when the value is missing) and owns the child manager.
class Accessor {
 public:
  explicit Accessor(std::string child_source) : manager(std::move(child_source)) {}
  virtual ~Accessor() = default;
  virtual PyObject* get(PyObject* parent) const = 0;
  virtual bool same_as(const Accessor& other) const = 0;
  // Why get() found nothing, in user terms ("L['self'] has no attribute 'fc'").
  virtual std::string describe_missing(PyObject* parent) const;
  GuardManager manager;
  uint64_t fail_count = 0;
};

// One fact about input sizes a dynamic trace relied on (cdynamo.shapes.ShapeTrace.guard_checks):
// a program over the inputs' sizes, strides and storage offsets evaluated in C++, or, for
// expressions it cannot hold, a Python predicate called with the list of input tensors.
struct ShapeCheck {
  std::string text;              // as users read it: "L['x'].size()[0] == L['y'].size()[0]"
  std::vector<int64_t> program;  // empty when predicate is set
  Ref predicate;
};

// Roots of the tree: frame locals, globals (falling back to builtins) and closure cells, plus
// guards on global state (grad mode) and relations between tensors (no unexpected aliasing).
class RootGuardManager {
 public:
  RootGuardManager();
  RootGuardManager(const RootGuardManager&) = delete;
  ~RootGuardManager();

  GuardManager& local(int index, const std::string& name);  // localsplus[index]
  GuardManager& global(const std::string& name);             // globals[name] or builtins[name]
  GuardManager& closure_cell(int index, const std::string& name);  // closure[index].cell_contents
  // A fixed object (kept alive): the globals dict or a closure cell of an inlined function.
  GuardManager& fixed(Handle object, const std::string& source);

  // Grad mode must equal what it was when this call is made (torch.is_grad_enabled()).
  void add_grad_mode_guard();
  // The tensors at these local sources must be pairwise distinct objects.
  void add_no_aliasing_guard(std::vector<std::pair<int, std::string>> local_indices_and_names);
  // The locals at slots a and b must be the same object (as they were when traced).
  void add_same_object_guard(int a, const std::string& name_a, int b, const std::string& name_b);
  // The same for values reached by any path: each fetcher returns a new reference or NULL
  // (with or without an error set, which the guard clears).
  void add_same_object_guard(ObjectFetcher a, const std::string& source_a, ObjectFetcher b, const std::string& source_b);

  // The size relations of a dynamic trace over the tensors the fetchers return (checked last,
  // after each tensor's own match guard).
  void add_shape_guard(std::vector<ObjectFetcher> tensors, std::vector<std::string> sources,
                       std::vector<ShapeCheck> checks);

  bool check(const FrameView& frame);
  // The first failing guard's description, or "" if all pass.
  std::string failure_reason(const FrameView& frame) const;
  size_t size() const;
  // True if the tree can never pass again: its entry only holds memory and can be dropped.
  bool expired() const;
  std::string dump() const;
  // One more than the highest localsplus index any guard reads (the frame must have that many).
  int locals_needed() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// While alive, tensor match guards record the dispatch keys a tensor has under the thread-local
// dispatch state of this object's construction (a traced frame's entry), not under the state
// the trace is in when it first reads the tensor (inside a no_grad or autocast block).
class EntryDispatchState {
 public:
  EntryDispatchState();
  ~EntryDispatchState();
  EntryDispatchState(const EntryDispatchState&) = delete;
  EntryDispatchState& operator=(const EntryDispatchState&) = delete;
};

}  // namespace cdynamo::guards
