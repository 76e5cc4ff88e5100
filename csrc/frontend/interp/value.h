// What the symbolic interpreter knows about each Python value: its kind, its payload (a
// constant, or an fx node with a fake example value), and its source (how to reach it from
// the frame), which is what guards are built from and what the transformed code reloads.
#pragma once
#include <memory>
#include <string>
#include <vector>
#include "common/py_ref.h"
#include "frontend/guards/guards.h"
#include "frontend/interp/nesting.h"

namespace cdynamo::interp {

struct Source;
using SourcePtr = std::shared_ptr<const Source>;

// How to reach a value from the frame being traced.
struct Source {
  enum class Kind { Local, Global, Closure, Attr, Item, DictItem, Fixed, Converted };
  Kind kind;
  int index = -1;    // Local: localsplus slot; Closure: index in the function's closure; Item
  std::string name;  // Local/Global/Closure: variable name; Attr: attribute name
  SourcePtr base;    // Attr/Item: the container

  static SourcePtr local(int slot, std::string name);
  static SourcePtr global(std::string name);
  static SourcePtr closure(int index, std::string name);
  static SourcePtr attr(SourcePtr base, std::string name);
  static SourcePtr item(SourcePtr base, int index);
  static SourcePtr dict_item(SourcePtr base, Ref key);
  // A specific object (kept alive by the guards): an inlined function's globals dict or cell.
  static SourcePtr fixed(Ref object, std::string display_name);
  // function(base): what the base holds converted (torch.from_numpy of a NumPy array).
  static SourcePtr converted(SourcePtr base, Ref function, std::string function_name);
  Ref key;           // DictItem: the constant key; Fixed: the object; Converted: the function
  int depth = 0;     // sources between this one and the frame (L['a'].b[0]: 2)

  // A local of the frame, or an item of one (not an attribute, a global or a closure
  // variable): data the caller passes, which may change from call to call.
  bool reads_frame_data() const;
  std::string str() const;  // as users read it: L['x'], G['torch'], L['self'].fc, L['xs'][0]
  // The object at this source in a frame, as a new reference, or NULL (error possibly set).
  PyObject* fetch(const guards::FrameView& frame) const;
  // The guard node for this source in `root`, created on first use.
  guards::GuardManager& manager(guards::RootGuardManager& root) const;
};

#define CDYNAMO_VALUE_KINDS(X)                                                          \
  X(Constant)     /* a Python object known at trace time (int, str, dtype, function) */ \
  X(Tensor)       /* a tensor produced by or fed into the graph */                      \
  X(Tuple)        /* a tuple of values */                                               \
  X(List)         /* a list of values created or read by the trace; obj: the nn.Sequential */ \
                  /* or nn.ModuleList class of a slice of one (its children)              */ \
  X(Dict)         /* a dict (keys[i] -> items[i]; keys: constants, traced_keys.h's)   */ \
                  /* read_only: a view                                                   */ \
                  /* of the items of a dict subclass instance from the frame            */ \
  X(PyModule)     /* a Python module such as torch or torch.nn.functional */            \
  X(NNModule)     /* an nn.Module instance */                                           \
  X(TensorMethod) /* a bound method of a traced tensor, e.g. x.view */                  \
  X(UserMethod)   /* a Python function (obj) bound to a traced value (items[0]) */      \
  X(GradModeExit) /* __exit__ of a no_grad/enable_grad block (restores_enabled)        */ \
  X(SubclassDispatchExit) /* __exit__ of a DisableTorchFunction(Subclass) block      */ \
                  /* (restores_enabled: tensor subclasses' __torch_function__ runs)     */ \
  X(StateExit)    /* __exit__ of a torch.autocast or inference_mode block: obj = its    */ \
                  /* restorer (_global_state.STATE_RESTORERS), graph_node() restores   */ \
  X(Super)        /* super() bound to items[0]; obj = the real super object */          \
  X(Object)       /* another Python object, reachable by its source */                  \
  X(Iterator)     /* an iterator over values (for loops over constants and lists) */    \
  X(NewObject)    /* an instance of a Python class made by the trace: cls; items[0] = */ \
                  /* its __dict__ (a Dict), items[1] = its mapping (dict subclasses)   */ \
  X(Set)          /* a set made by the trace: obj = a set only it holds (constants and */ \
                  /* traced keys, traced_keys.h)                                        */ \
  X(Cell)         /* a closure cell made by the trace; items[0]: its contents, or null; */ \
                  /* read_only: a copy of a real closure's value (writes refused)       */ \
  X(Function)     /* a def/lambda/comprehension made by the trace: obj = the function  */ \
                  /* (trace's globals, constant defaults), items = its closure cells   */ \
  X(Generator)    /* a generator made by the trace: frame = its suspended frame         */ \
  X(Null)         /* the NULL that CPython pushes before a callable */

enum class ValueKind {
#define CDYNAMO_KIND_ENUM(name) name,
  CDYNAMO_VALUE_KINDS(CDYNAMO_KIND_ENUM)
#undef CDYNAMO_KIND_ENUM
};
const char* value_kind_name(ValueKind kind);

struct Value;
using ValuePtr = std::shared_ptr<Value>;
struct InterpFrame;  // tracer.h

struct Value {
  ValueKind kind;
  Ref obj;    // Constant/PyModule/NNModule/Object: the object; TensorMethod: unused
  Ref node;   // Tensor: the torch.fx.Node
  Ref fake;   // Tensor: the fake tensor that stands for it while tracing
  std::vector<ValuePtr> items;  // Tuple/List/Iterator/Dict items; TensorMethod: {self}
  std::vector<Ref> keys;        // Dict: the constant keys, parallel to items
  std::string name;             // TensorMethod: the method name; a dict view: "keys", "values" or "items"
  // Per-kind state: each field means one thing, for the kinds named.
  size_t cursor = 0;                   // Iterator: the index of the next item
  // Iterator over a list (iter(lst), a for loop over it): reads the list as it is at each step,
  // as CPython's list iterator does (items stay empty); null for a snapshot of items.
  std::shared_ptr<Value> live_list;
  long enumerate_start = -1;  // Iterator over a live list made by enumerate(lst, start): items are (index, item)
  bool read_only = false;              // Dict, Cell: the trace may not change it
  bool restores_enabled = false;       // GradModeExit, SubclassDispatchExit: the state its __exit__ sets back
  bool exhausted = false;              // Generator: it returned (next() raises StopIteration)
  SourcePtr source;             // null when the value was made by the trace
  std::string module_path;      // NNModule: its attribute path from the root module
  std::shared_ptr<InterpFrame> frame;  // Generator: the suspended frame
  Ref cls;                      // NewObject: its class; Super of a NewObject: the class super() starts after;
                                // Tensor: its torch.Tensor subclass (an input's, or one its ops' results take)
  SourcePtr cls_source;         // NewObject: where its class was read (class attributes are guarded there)
  Ref dict_type;                // Dict made as collections.OrderedDict or defaultdict: that class (null: dict)
  Ref view_type;                // List made by dict.keys()/values()/items(): dict_keys, ... (null: a list)
  std::shared_ptr<Value> view_of;  // that List's dict: read again at each use (refresh_view), as a view is live
  ValuePtr default_factory;     // Dict made as a defaultdict: its default_factory (None included)
  ValuePtr attributes;          // Function: its __dict__ as the trace wrote it (functools.wraps), or null

  static ValuePtr constant(Ref obj, SourcePtr source = nullptr);
  static ValuePtr boolean(bool value);  // the constant True or False
  static ValuePtr tensor(Ref node, Ref fake, SourcePtr source = nullptr);
  static ValuePtr sequence(ValueKind kind, std::vector<ValuePtr> items, SourcePtr source = nullptr);
  static ValuePtr null();
  static ValuePtr dict(std::vector<Ref> keys, std::vector<ValuePtr> items, SourcePtr source = nullptr);
  // Dict: the index of `key` (compared with ==), or -1. Throws PythonError if == raises.
  int dict_index(Handle key) const;
  // Dict: d[key] = item (replacing the item of an equal key, else appended).
  void dict_set(Ref key, ValuePtr item);

  bool is_constant() const { return kind == ValueKind::Constant; }
  bool is_tensor() const { return kind == ValueKind::Tensor; }
  bool is_sequence() const { return kind == ValueKind::Tuple || kind == ValueKind::List; }
  // True if the value and everything inside it is known at trace time.
  bool is_fully_constant() const;
  // The Python object for a fully constant value (tuples and lists rebuilt). Throws otherwise.
  Ref as_python_constant() const;
  std::string describe() const;  // for error messages: "tensor", "int 3", "list of 2"

 private:
  bool is_fully_constant(WalkPath& path) const;
  Ref as_python_constant(WalkPath& path) const;
};

// A dict view (a List with view_of): its items made again from the dict as it is now. Every read
// of a view's items goes through it (len, in, iteration, comparisons, leaving the trace).
void refresh_view(Value& view);

// Iterator: its next item, or null once exhausted (and from then on, as CPython's iterators).
ValuePtr iterator_next(Value& iterator);
// Iterator: the items it has not produced yet, left unconsumed.
std::vector<ValuePtr> iterator_pending(const Value& iterator);
// Iterator: a snapshot of its pending items in place of a live list (a graph break carries
// iterators as tuples of what they have left).
void freeze_iterator(Value& iterator);

// A NumPy array made from a traced tensor (cdynamo/_numpy_arrays.py's TracedArray, a NewObject),
// and its tensor; leaving the trace it becomes a real ndarray (numpy_arrays.cpp).
bool is_traced_array(const ValuePtr& value);
ValuePtr traced_array_tensor(const ValuePtr& array);
// A NumPy array the trace holds as a constant (_numpy_arrays.is_constant_array; numpy_arrays.cpp).
bool is_constant_array(const ValuePtr& value);

}  // namespace cdynamo::interp
