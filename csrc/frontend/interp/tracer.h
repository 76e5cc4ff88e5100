// The symbolic bytecode interpreter: runs a frame's bytecode on Values instead of objects,
// recording torch operations into a graph and guards on everything it relied on.
#pragma once
#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>
#include "common/cpython_compat.h"
#include "frontend/bytecode/instruction.h"
#include "frontend/graph/graph_builder.h"
#include "frontend/guards/guards.h"
#include "frontend/interp/compile_frame.h"
#include "frontend/interp/opcode_handlers.h"
#include "frontend/interp/value.h"

namespace cdynamo::interp {

// Enum members and type expressions (_trace_support.IDENTITY_CONSTANT_TYPES): immutable objects
// wrapped as constants under an identity guard.
bool is_identity_constant(Handle obj);
bool is_plain_dict_key(PyObject* key);
// Every argument a constant (through tuples, lists and dicts): the call can run now (calls.cpp).
bool all_constant(const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs);
std::string callable_name(Handle fn);  // a callable's qualified name, for messages (calls.cpp)
// A numpy scalar (numpy.generic instance): a constant number, passed into graphs as its .item().
bool is_numpy_scalar(PyObject* obj);

// A function inlined into the traced frame, where a graph break inside it (a nested break)
// stopped the trace: its continuation becomes a resume function of its own code.
struct InlinedBreakFrame {
  Ref function;                          // its globals and closure are the resume function's
  PyCodeObject* code = nullptr;          // the function's (kept alive by it)
  bytecode::InstructionList instructions;
  int instruction = -1;                  // its CALL of the next frame, or the break instruction
  std::vector<ValuePtr> stack;           // before that instruction (a CALL's operands taken)
  std::vector<ValuePtr> locals;          // per slot: the live traced value, or null
  Ref kw_names;                          // pending KW_NAMES for a CALL
  bool shares_root_globals = false;      // its globals are the traced frame's
};

struct BreakState;
// Loop iterators over live lists become snapshots of what they have left: the transformed code
// carries iterators across a break as tuples (codegen/resume.cpp).
void freeze_iterators(BreakState& state);

// The traced frame's state where a graph break stops the trace: the transformed code rebuilds
// it, runs the unsupported instruction itself, and continues in a resume function.
struct BreakState {
  int instruction = -1;               // index of the instruction run outside the graph
  std::vector<ValuePtr> stack;        // the root frame's stack before it
  std::vector<ValuePtr> locals;       // per slot: the traced value, or null
  std::vector<bool> local_touched;    // per slot: the trace read, wrote or deleted it
  Ref kw_names;                       // pending KW_NAMES for a CALL
  // A nested break: the functions that the root's CALL at `instruction` led into, outermost
  // first (the root's stack is then what stays under that call). The last one's instruction is
  // the one run outside the graph.
  std::vector<InlinedBreakFrame> inlined;
};

// An attribute write on an object reachable from the frame (obj.attr = value), replayed by the
// transformed code after the graph runs, in program order. An empty name: a list or dict read
// from the frame that the trace changed in place (object == value); its new contents replace
// the old ones, before any attribute write (which could redirect the path to it).
struct SideEffect {
  ValuePtr object;  // has a source; for a deferred call, the callable
  std::string name;  // the attribute written, "" for a container's contents, or kDeferredCall
  ValuePtr value;    // for a deferred call: a Tuple (callable, args Tuple, kwargs Dict)
};
// Whether a SideEffect's value is `del obj.name` (pending_writes.cpp), replayed as the deletion.
bool is_deleted_attribute(const ValuePtr& written);
// The name of a SideEffect that is a call made after the graph (print, warnings.warn, logging).
inline constexpr const char* kDeferredCall = "()";
// The module path of a module made with parameters at trace time (Tracer::serve_one_call_with):
// the transformed code holds that very object, which the call it serves may store.
inline constexpr const char* kMadeWithState = "made_with_state_";

// The outcome of tracing one frame: to its RETURN, or to a graph break.
struct TraceResult {
  ValuePtr return_value;                // null at a graph break
  std::optional<BreakState> break_state;
  std::vector<SideEffect> side_effects;
};

// A Python exception raised by the traced code on values the trace knows (a missing dict key,
// an absent attribute, a raise statement): it unwinds interpreter frames to the innermost
// handler of CPython's exception table. Reaching the root frame unhandled ends the graph there,
// and the instruction runs eagerly, raising it for real.
struct TracedException {
  Ref exception;      // the exception instance
  std::string where;  // "file:line" of the raise, for the graph-break message
};

// Thrown where break_step_ stops a trace inside an inlined function, after the state there was
// taken (Tracer::nested_break_); caught by Tracer::run.
struct ReachedNestedBreak {};

// One Python frame being interpreted: the traced frame itself, or a function inlined into it.
struct InterpFrame {
  PyCodeObject* code = nullptr;
  Ref code_ref;                       // inlined frames: keeps the code alive
  Ref function;                       // inlined frames: the function being run
  bytecode::InstructionList instructions;
  size_t pc = 0;
  int line = -1;
  std::vector<ValuePtr> locals;          // per fast-local slot; null = not bound (yet)
  std::vector<bool> local_initialised;   // root: argument slots read from the real frame once
  std::vector<ValuePtr> stack;
  Ref kw_names;                          // pending KW_NAMES (3.11/3.12)
  PyObject* globals = nullptr;
  PyObject* builtins = nullptr;
  PyObject* closure = nullptr;           // tuple of cells, or NULL
  PyObject* const* real_locals = nullptr;  // root only: the real frame's fast locals
  int argument_slots = 0;
  int first_free_slot = 0;
  ValuePtr return_value;
  bool yielded = false;  // generators: run_frame stopped at a yield (return_value: the item)
  Ref pending_throw;     // generators: gen.throw(e): raised where the frame resumes
  bool direct_call = false;  // called by the caller's CALL, whose result is this frame's return value
  ValuePtr names;            // a class body: its namespace (a Dict: LOAD_NAME/STORE_NAME), else null
};

class Tracer {
 public:
  // break_at: index of a root-frame instruction at which to stop with a graph break (-1: none).
  // break_step: the step (failing_step() of an earlier trace) before which to stop with a
  // nested graph break, inside the functions inlined there (0: none).
  // shape_trace: the trace's cdynamo.shapes.ShapeTrace (static or dynamic sizes).
  Tracer(CdFrame* frame, Handle shape_trace, int break_at = -1, size_t break_step = 0);
  // After run() threw Unsupported: the root-frame instruction that was executing (where a
  // retrace would break), and whether a partial graph may end there.
  int failing_root_instruction() const { return static_cast<int>(frames_.front()->pc) - 1; }
  bool can_break_at(int instruction) const;
  // After run() threw Unsupported inside an inlined function: the step it failed at, and
  // whether a nested break may stop there (every frame on the way a plain call, outside try
  // and with blocks, without cell variables).
  size_t failing_step() const { return steps_; }
  bool can_break_nested() const;
  ~Tracer();  // restores the grad mode that with-blocks may have changed while tracing
  TraceResult run();
  bool initial_grad_mode() const { return initial_grad_mode_; }  // at the frame's entry
  Handle initial_state() const { return initial_state_; }  // _trace_support.global_state() at entry
  // Whether the graph sets torch's global state (grad mode, autocast, blocks it enters).
  bool changes_global_state() const { return changes_global_state_; }

  graph::GraphBuilder& graph() { return graph_; }
  // The guards, completed with the relations between inputs (no unexpected aliasing).
  std::unique_ptr<guards::RootGuardManager> take_guards();
  // A dynamic trace: the facts its ShapeEnv recorded about input sizes, as the shape guard.
  void add_shape_guard();
  const std::vector<std::pair<int, PyObject*>>& identities() const { return identities_; }
  // Tensor.item() and tolist() stay in the graph as unbacked numbers: config.capture_scalar_outputs,
  // or fullgraph=True (one graph was asked for, as torch.compile then captures them too).
  bool capture_scalar_outputs = false;
  // fullgraph=True: where the trace would end a graph for a compiled graph's sake rather than
  // because it must (a new autograd leaf with gradients on), it keeps one graph instead.
  bool one_graph = false;
  // The trace made torch.nn modules with parameters at trace time: its compile serves one call.
  bool made_modules_with_state() const { return static_cast<bool>(one_call_token_); }

 private:
  // --- chapter: frame state --------------------------------------------------------------
  InterpFrame& frame() { return *frames_.back(); }
  bool in_root_frame() const { return frames_.size() == 1; }
  ValuePtr run_frame();  // runs the current frame to its return
  ValuePtr pop();
  ValuePtr& top(int depth = 1);  // top(1) is the top of the stack
  void push(ValuePtr value) { frame().stack.push_back(std::move(value)); }
  std::vector<ValuePtr> pop_n(int n);  // in stack order (deepest first)
  ValuePtr load_local(int slot);
  void store_local(int slot, ValuePtr value);
  std::string local_name(int slot) const;
  [[noreturn]] void unsupported(const std::string& reason) const;
  bool inside_try_block() const;  // whether a running frame's current instruction has a handler
  // --- chapter: checks of tensor data instead of branches (data_checks.cpp) ----------------
  struct RaisingBlock {
    Ref cls;   // the exception class; null: the block does more than raise
    Ref args;  // its constant arguments, or null when they are computed
  };
  RaisingBlock raising_block_at(size_t start);
  bool exception_could_be_caught() const;
  bool decided_by_data(const ValuePtr& condition) const;
  bool check_instead_of_branch(const bytecode::Instruction& inst, const ValuePtr& condition, bool jump_when);

  // --- chapter: exceptions (exceptions.cpp) -----------------------------------------------
  [[noreturn]] void raise(Ref exception) const;
  [[noreturn]] void raise(PyObject* type, Handle argument) const;  // type(argument)
  [[noreturn]] void raise(PyObject* type, const std::string& message) const;
  // A failed CPython call on trace-time values: its Exception becomes a traced raise (the same
  // call raises the same at run time); BaseExceptions such as KeyboardInterrupt stay errors.
  [[noreturn]] void raise_python_error() const;
  Ref checked(PyObject* result) const {  // check() for calls whose failure is the program's
    if (!result) raise_python_error();
    return Ref::steal(result);
  }
  // Unwinds to `inst`'s handler in the current frame; false when it has none.
  bool enter_handler(const bytecode::Instruction& inst, const TracedException& raised);
  static bool is_instance_of(const TracedException& raised, PyObject* type);
  // The Python-level special method `name` of the value's type (__contains__, __getitem__,
  // __len__), or null when the type has none or implements it in C.
  Ref python_special_method(const ValuePtr& value, const char* name);

  // --- chapter: instructions (the ops_*.cpp files; opcode_table.cpp maps opcodes to them) ---
 public:
  using OpcodeHandler = bool (Tracer::*)(const bytecode::Instruction&);
  using OpcodeTable = std::array<OpcodeHandler, 256>;  // null: an opcode the trace does not run

 private:
  static const OpcodeTable& opcode_table();
  bool step(const bytecode::Instruction& inst);  // false once the frame returned
#define CDYNAMO_DECLARE_OPCODE_HANDLER(handler) bool op_##handler(const bytecode::Instruction& inst);
  CDYNAMO_OPCODE_HANDLERS(CDYNAMO_DECLARE_OPCODE_HANDLER)
#undef CDYNAMO_DECLARE_OPCODE_HANDLER
  void jump_if(const bytecode::Instruction& inst, bool jump_when, bool pop_always, bool none_test);
  bool truth_value(const ValuePtr& value);
  void binary_op(Handle op, const char* symbol, ValuePtr lhs, ValuePtr rhs);
  // lhs <op> rhs through special methods written in Python (objects); null if neither has one.
  ValuePtr storage_operator(const char* name, const char* forward, bool reflected, const ValuePtr& self,
                            const ValuePtr& other, PyObject* found);
  ValuePtr object_operator(const std::string& what, const ValuePtr& lhs, const ValuePtr& rhs);
  void unary_op(const char* name, ValuePtr operand);
  void compare_op(int op, ValuePtr lhs, ValuePtr rhs);
  void subscript(ValuePtr container, ValuePtr key);
  // unbacked_numbers.cpp: numbers only the data gives where torch's Python entry points read numbers.
  ValuePtr sequence_order(Handle op, const ValuePtr& lhs, const ValuePtr& rhs);  // null: undecided
  Ref own_module_method(const ValuePtr& module, const char* name);
  // container[key], or with `stored` container[key] = stored; null: not such a key.
  ValuePtr index_by_unbacked_ints(const ValuePtr& container, const ValuePtr& key, const ValuePtr& stored = nullptr);
  ValuePtr tensor_of_unbacked_numbers(const ValuePtr& self, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs);
  bool contains(ValuePtr container, const ValuePtr& item);  // `item in container`
  void delete_subscript(ValuePtr container, ValuePtr key);  // DELETE_SUBSCR on trace-owned lists and dicts
  void store_subscript(ValuePtr container, ValuePtr key, ValuePtr value);
  void get_iter(ValuePtr iterable);
  ValuePtr iterator_over(const ValuePtr& iterable);  // iter(iterable) of a value that is not an iterator
  void unpack_sequence(ValuePtr sequence, int count);

  // --- chapter: values from the frame (wrap.cpp) -------------------------------------------
  ValuePtr wrap(Handle obj, SourcePtr source);
  ValuePtr wrap_container(Handle obj, const SourcePtr& source, guards::GuardManager& manager);
  void check_source_depth(const SourcePtr& source) const;  // Unsupported beyond kMaxNestingDepth
  ValuePtr load_global(const std::string& name);
  ValuePtr load_attr(ValuePtr base, const std::string& name);
  ValuePtr nn_module_attr(ValuePtr module, const std::string& name);
  ValuePtr module_table_attr(const ValuePtr& module, const std::string& name);
  ValuePtr function_attr(const ValuePtr& function, const std::string& name);  // a def the trace made
  Ref type_of(const ValuePtr& value);  // the Python type the value has at run time
  ValuePtr tensor_autograd_state(const ValuePtr& tensor, const std::string& name);  // .grad, .is_leaf
  // The type the program sees: type_of, except for stand-ins (a TracedArray is an np.ndarray, a
  // _polyfills.classes.Deque a collections.deque).
  Ref apparent_type(const ValuePtr& value);
  void guard_defaults(const ValuePtr& function);  // a function with a source: its defaults
  // Guards that the attribute at method_source still binds the function bound_method binds.
  void guard_bound_function(const SourcePtr& method_source, Handle bound_method);
  void store_list_slice(const ValuePtr& list, Handle slice, std::vector<ValuePtr> items);
  std::vector<ValuePtr> iterate(const ValuePtr& iterable);  // items of a for loop over it
  ValuePtr iterator_of(const ValuePtr& iterable, Handle iter_method);
  // An object whose class defines __next__ in Python (an iterator class): python_next calls it,
  // null once it raises StopIteration.
  bool is_python_iterator(const ValuePtr& value);
  ValuePtr python_next(const ValuePtr& iterator);

  // --- chapter: tensor subclasses' __torch_function__ (tensor_subclasses.cpp) ---------------------
  // Tensor subclasses' __torch_function__ runs (off inside DisableTorchFunctionSubclass blocks and
  // torch.Tensor.__torch_function__'s own call of the operator).
  bool subclass_dispatch_ = true;
  struct SubclassDispatchOff;  // RAII: dispatch off for a scope (tensor_subclasses.cpp)
  void set_subclass_dispatch(bool enabled);
  static bool holds_subclass_tensor(const ValuePtr& self, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs);
  ValuePtr torch_function_override(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs);
  ValuePtr operator_override(Handle op, const ValuePtr& lhs, const ValuePtr& rhs, const std::string& what);
  ValuePtr tensor_torch_function(Handle cls, std::vector<ValuePtr> args, graph::KwArgs kwargs, bool wraps);
  ValuePtr with_subclass(const ValuePtr& result, Handle cls, const std::vector<ValuePtr>& args);
  ValuePtr subclass_alias(const ValuePtr& tensor, Handle cls);
  ValuePtr tensor_as_subclass(const ValuePtr& tensor, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs);
  ValuePtr subclass_attribute(const ValuePtr& tensor, const std::string& name);
  ValuePtr attribute_override(const ValuePtr& tensor, const std::string& name);
  ValuePtr call_tensor_getter(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs);
  void enter_subclass_dispatch_block();  // with torch._C.DisableTorchFunctionSubclass()
  std::vector<ValuePtr> iterate_python_iterator(const ValuePtr& iterator);
  // C recursion of iterate/truth_value/call_nn_module through values the trace computes
  // (__iter__ results, __bool__ results, nested Sequentials): bounded by kMaxNestingDepth.
  int value_recursion_ = 0;
  void enter_value_recursion(const std::string& what) const;

  // --- chapter: calls (calls.cpp) -------------------------------------------------------------
  void call(int argc, Handle kw_names);
  ValuePtr call_value(ValuePtr callable, std::vector<ValuePtr> args, graph::KwArgs kwargs);
  ValuePtr call_constant(Handle fn, std::vector<ValuePtr> args, graph::KwArgs kwargs);
  // A builtin of the table in builtins.cpp (keyed by the object): its handler's result; null
  // for other callables. Arguments the handler does not model are Unsupported.
  ValuePtr call_builtin(Handle fn, std::vector<ValuePtr>& args, graph::KwArgs& kwargs);
  // abs(v), str(v), hash(v), ... of an object whose class writes that special method in Python.
  ValuePtr call_special_method_builtin(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs);
  ValuePtr handled_exception_query(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs);  // sys.exc_info()
 public:
  using BuiltinHandler = ValuePtr (Tracer::*)(Handle fn, std::vector<ValuePtr>& args, graph::KwArgs& kwargs);
  struct BuiltinEntry {
    BuiltinHandler handler;
    bool keywords;  // it reads keyword arguments (others refuse them)
  };
  using BuiltinTable = std::unordered_map<PyObject*, BuiltinEntry>;

 private:
  static const BuiltinTable& builtin_table();
  // Each returns null where it does not model these arguments.
#define CDYNAMO_BUILTIN_HANDLERS(X)                                                                        \
  X(fold) X(dict) X(super) X(len) X(isinstance) X(type) X(set) X(setattr) X(iter) X(next) X(all_any)      \
  X(callable) X(tuple_list) X(enumerate) X(zip) X(getattr_hasattr) X(sum) X(vars) X(delattr)             \
  X(build_class) X(globals)
#define CDYNAMO_DECLARE_BUILTIN(name) ValuePtr builtin_##name(Handle fn, std::vector<ValuePtr>& args, graph::KwArgs& kwargs);
  CDYNAMO_BUILTIN_HANDLERS(CDYNAMO_DECLARE_BUILTIN)
#undef CDYNAMO_DECLARE_BUILTIN
#undef CDYNAMO_BUILTIN_HANDLERS
  ValuePtr tensor_tolist(const ValuePtr& tensor);
  ValuePtr hook_value(Handle hook);  // module_calls.cpp
  ValuePtr call_tensor_method(ValuePtr method, std::vector<ValuePtr> args, graph::KwArgs kwargs);
  // Methods of dicts, lists, tuples and sets the trace holds (containers.cpp).
  ValuePtr call_container_method_with_keywords(const ValuePtr& self, const std::string& name, std::vector<ValuePtr>& args,
                                               graph::KwArgs& kwargs);
  ValuePtr call_container_method(ValuePtr self, const std::string& name, std::vector<ValuePtr> args,
                                 graph::KwArgs kwargs);
  // True when the trace may change the container in place: made by the trace, or the root
  // frame's own **kwargs dict (a new dict per call that only the frame sees; it is detached from
  // its source, so a graph break rebuilds it as changed).
  bool trace_owned(const ValuePtr& container);
  ValuePtr new_set(Ref set);
  // The items of a dict subclass instance read from the frame, as a read-only Dict guarded key
  // by key (what dict's own methods see, whatever the subclass overrides); null for others.
  ValuePtr dict_contents(const ValuePtr& object);
  // A builtin dict method bound to such an object, as a method of its contents; null otherwise.
  ValuePtr dict_method_of(const ValuePtr& object, Handle attr, const std::string& name);  // a Set value owning `set` (a real set of constants)
  // --- chapter: objects made by the trace (objects.cpp) -------------------------------------
  // cls(*args, **kwargs) for a plain Python class; null when the class cannot be modelled.
  ValuePtr construct_object(const ValuePtr& cls, std::vector<ValuePtr>& args, graph::KwArgs& kwargs);
  // cls.__new__(cls) of such a class: the object before __init__; null when not modelled.
  // A class's __init__ written in Python, run on the object the trace made; it must return None.
  void run_python_init(Handle init, const ValuePtr& object, const std::vector<ValuePtr>& args, graph::KwArgs kwargs);
  ValuePtr new_object(const ValuePtr& cls, bool by_base_new = false);  // by_base_new: object.__new__(cls) called by name
  ValuePtr new_object_attr(const ValuePtr& object, const std::string& name);
  ValuePtr new_object_generic_attr(const ValuePtr& object, const std::string& name);  // object.__getattribute__
  void new_object_store_attr(const ValuePtr& object, const std::string& name, ValuePtr value, bool raw);
  // An attribute found on a class (the object's own, or after super()'s start class) bound to `self`.
  ValuePtr bind_class_attribute(const ValuePtr& self, Handle found, const std::string& name, const SourcePtr& cls_source);
  ValuePtr super_attr(const ValuePtr& super, const std::string& name);
  // A method of a builtin base (object, dict, OrderedDict) called on a NewObject.
  ValuePtr call_native_method(Handle descriptor, const ValuePtr& self, std::vector<ValuePtr> args, graph::KwArgs kwargs);
  Ref special_method_of_class(PyTypeObject* type, const char* name);
  // own_call: a class's own __call__ runs first (it may call super().__call__, which lands here
  // again with own_call false: nn.Module's call itself, i.e. the forward).
  ValuePtr call_nn_module(ValuePtr module, std::vector<ValuePtr> args, graph::KwArgs kwargs, bool own_call = true,
                          bool direct = false);
  // The module's self.forward(*args, **kwargs), traced (an instance's own forward first).
  ValuePtr call_forward(const ValuePtr& module, std::vector<ValuePtr> args, graph::KwArgs kwargs, bool direct);
  // The hooks a module's call runs, in order: (hook, with_kwargs); backward: backward hooks wrap it.
  struct ModuleHooks {
    std::vector<std::pair<ValuePtr, bool>> pre, forward;
    bool backward = false;
  };
  ModuleHooks module_hooks_of(const ValuePtr& module);
  // Module.__call__'s forward pre-hooks, forward and forward hooks, traced.
  ValuePtr call_module_with_hooks(ValuePtr module, const ModuleHooks& hooks, std::vector<ValuePtr> args, graph::KwArgs kwargs);
  // A forward (pre-)hook registered in the trace, by register_forward_hook's stand-in.
  struct TracedHook {
    ValuePtr module;
    bool pre;
    ValuePtr hook;
    bool prepend, with_kwargs, removed;
  };
  std::vector<TracedHook> traced_hooks_;  // index: the hook's id
  ValuePtr module_hook_call(Handle fn, const std::vector<ValuePtr>& args);  // register_traced_hook, remove_traced_hook
  bool has_traced_hooks(const ValuePtr& module) const;
  void check_traced_hooks_removed() const;  // Unsupported for a hook still registered
  // globals() of the running frame (builtins.cpp): reads and writes through it are global ones.
  bool is_frame_globals(const ValuePtr& value);
  ValuePtr globals_item(const ValuePtr& key);
  // A method of nn.Module itself on a module the trace made, run now (null: not that case).
  ValuePtr module_method_now(const ValuePtr& module, Handle function, const std::vector<ValuePtr>& args,
                             const graph::KwArgs& kwargs);
  // Whether the module's call runs hooks; guards its hook tables (and torch.nn's global ones).
  bool guard_module_hooks(const ValuePtr& module);
  // fn is nn.Module.__call__ (_wrapped_call_impl) or _call_impl: a module call by another route.
  static bool is_module_call_function(Handle fn);
  // transform(func, **options)(*operands) for torch.vmap and torch.func's transforms: one node
  // running it on a real function; args: transform, func, options, operands (higher_order.cpp).
  ValuePtr call_transformed(std::vector<ValuePtr> args, graph::KwArgs kwargs);
  Ref transformed_function(const ValuePtr& func, const std::string& what, std::vector<ValuePtr>& captured);  // the real function a node calls
  Ref closed_over_object(const ValuePtr& contents, const std::string& what, std::vector<ValuePtr>& captured);
  // print(...) and the like: a call replayed after the graph (deferred_calls.cpp); returns None.
  ValuePtr defer_call(ValuePtr callable, std::vector<ValuePtr> args, graph::KwArgs kwargs, const std::string& what);
  ValuePtr defer_tensor_hook(const ValuePtr& tensor, const ValuePtr& hook);
  ValuePtr defer_after_graph(std::vector<ValuePtr> args);
  Ref constant_stand_in(const ValuePtr& value);  // a functools.partial (deque, ...) of constants, as the real one
  ValuePtr hook_in_graph(const ValuePtr& tensor, const ValuePtr& hook);
  // numpy's fn (policy fold_numpy) on arrays made from tensors, or torch.from_numpy/as_tensor/
  // asarray/tensor of one (numpy_arrays.cpp); null when fn is neither.
  ValuePtr call_with_arrays(Handle fn, const std::string& policy, std::vector<ValuePtr>& args, graph::KwArgs& kwargs);
  ValuePtr tensor_numpy(const ValuePtr& tensor, std::vector<ValuePtr> args, graph::KwArgs kwargs);  // t.numpy()
  ValuePtr constant_array_input(Handle array, const SourcePtr& source);  // an ndarray from the frame, or null
  ValuePtr array_tensor(const ValuePtr& array);  // a constant ndarray given to a torch operation
  void arrays_as_tensors(std::vector<ValuePtr>& args, graph::KwArgs& kwargs);
  // Runs a Python function's bytecode inside this trace (its operations join the same graph).
  // `cells`: the closure of a function made by the trace (else the function's own closure is read).
  // A generator function returns a Generator value, run lazily as it is iterated.
  // `direct`: the call is the CALL instruction's own (a nested break may resume after it).
  // `names`: a class body's namespace (class_bodies.cpp).
  ValuePtr inline_call(Handle function, std::vector<ValuePtr> args, graph::KwArgs kwargs,
                       const std::vector<ValuePtr>* cells = nullptr, bool direct = false, ValuePtr names = nullptr);
  // --- class statements (class_bodies.cpp) ---
  const ValuePtr& class_namespace();  // the running class body's namespace; Unsupported elsewhere
  Ref method_of_class_made_now(const ValuePtr& function, const ValuePtr& class_cell, const Ref& real_cell);
  // The generator's next item, or null once it is exhausted.
  // Runs a generator to its next yield (the item) or its end (null). sent: what the paused
  // yield returns (None if null); thrown: an exception raised where it is paused instead.
  ValuePtr resume_generator(const ValuePtr& generator, ValuePtr sent = nullptr, Ref thrown = Ref());
  // gen.send(v), gen.throw(e), gen.close() of a generator the trace runs.
  ValuePtr call_generator_method(const ValuePtr& generator, const std::string& name, std::vector<ValuePtr> args);
  // A set item or dict key as the Python object it is (symbols specialised); refuses traced values.
  Ref hashable_constant(const ValuePtr& value, const char* what);
  // --- set items and dict keys (container_keys.cpp) ---
  // The object a set or dict of the trace holds for `value`, given the keys it holds now: the
  // constant itself, or the value's traced key (traced_keys.h). Keys of one hash where either
  // has a user __eq__ are compared by tracing ==, and an equal held key is the one returned (a
  // dict keeps its first key). Unhashable values raise TypeError, as at run time.
  Ref container_key(const ValuePtr& value, const std::vector<Ref>& held, const char* what);
  Ref traced_key(const ValuePtr& value, const char* what);  // hashed by identity or a traced __hash__
  int dict_find(const ValuePtr& dict, const ValuePtr& key);  // d[key]'s index in a Dict, or -1
  // A key held by one container, for another holding `held` (d.update(e), d | e): a user __eq__
  // key is compared with those again.
  Ref rehold_key(const Ref& key, const std::vector<Ref>& held);
  Ref set_member(const ValuePtr& set, const ValuePtr& item);  // container_key for a Set's items
  std::unordered_map<const void*, Ref> traced_keys_;  // identity -> its one traced key
  // An Iterator's or a Generator's next item; null at its end.
  ValuePtr next_item(const ValuePtr& iterator);
  // SEND of `yield from` (None only): the sub-iterator's next item, or at its end its return
  // value in its place (3.12: above it, for END_SEND) and a jump to `target`.
  void send_none(int target);
  void make_function(int flags);  // MAKE_FUNCTION
  void make_cell(int slot);       // MAKE_CELL
  std::vector<ValuePtr> bind_arguments(PyCodeObject* code, Handle function, std::vector<ValuePtr> args,
                                       graph::KwArgs kwargs);
  void raise_if_missing(const std::string& name, const std::vector<ValuePtr>& slots, int begin, int end, const char* kind,
                        const std::function<std::string(int)>& param_name) const;
  // Where an inlined frame's globals live, for guards and reloads.
  SourcePtr global_source(const std::string& name, bool in_builtins);
  Ref inspected_object(const ValuePtr& value);
  void iterables_as_lists(std::vector<ValuePtr>& args, graph::KwArgs& kwargs);
  // inspect.isclass/isfunction/ismethod(value) answered by the value's type, or null.
  ValuePtr type_predicate(Handle fn, const std::string& name, const std::vector<ValuePtr>& args);
  ValuePtr context_var_get(Ref var, Ref default_value);
  ValuePtr max_of_scalar_tensors(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs);
  ValuePtr extreme_of_unbacked_numbers(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs);
  ValuePtr make_generator(const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs);
  ValuePtr made_generator_method(Handle generator, const std::string& name, const std::vector<ValuePtr>& args,
                                 const graph::KwArgs& kwargs);
  ValuePtr autograd_grad_in_graph(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs);
  // sorted(key=), min(key=), max(key=) on keys the trace computes to constants; null otherwise.
  ValuePtr compare_objects_in_trace(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs);
  ValuePtr sorted_with_key(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs);
  // ContextVar.get/set/reset on the var bound to a builtin method; null for other methods.
  ValuePtr context_var_call(PyObject* var, const std::string& method, const std::vector<ValuePtr>& args);
  // Values set by ContextVar.set() in the trace, innermost last, per var: the real context never
  // changes; each set must be reset (LIFO) before the graph ends.
  std::map<PyObject*, std::vector<ValuePtr>> context_sets_;
  void check_context_vars_reset() const;
  Ref module_container_arguments(const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs, std::vector<Ref>& children);
  // An nn.Module class called in the trace (call policy construct_module), module_calls.cpp.
  ValuePtr construct_module(Handle cls, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs, const std::string& name);
  ValuePtr fold(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs);
  std::string callable_policy(Handle fn);
  bool is_graph_callable_object(Handle obj);
  ValuePtr identity_of(const ValuePtr& value);  // id(value)
  bool is_logging_call(const ValuePtr& method) const;  // an enabled level's call: deferred (deferred_calls.cpp)
  ValuePtr silent_log_call(const ValuePtr& method, const std::vector<ValuePtr>& args);
  ValuePtr mapping_as_dict(const ValuePtr& mapping);  // the items {**mapping} merges, as a Dict
  // The Python function traced in place of a call of fn (the cdynamo/_polyfills/ package), or null.
  Ref polyfill_of(Handle fn);

  std::vector<std::shared_ptr<InterpFrame>> frames_;  // shared: generators keep theirs
  bool changes_global_state_ = false;
  PyObject* root_globals_ = nullptr;
  size_t steps_ = 0;
  std::vector<SideEffect> side_effects_;
  std::vector<ValuePtr> mutated_containers_;  // lists and dicts from the frame changed in place
  std::unordered_map<PyObject*, ValuePtr> container_inputs_;  // list/dict object -> its one Value
  WalkPath wrap_path_;  // the containers wrap() is inside of, outermost first
  // The value of a pending write to base.name, if the trace made one (reads see writes).
  ValuePtr pending_attribute(const ValuePtr& base, const std::string& name) const;
  ValuePtr slice_bound(const ValuePtr& part);  // ops_containers.cpp
  ValuePtr pending_class_attribute(PyTypeObject* type, const std::string& name) const;  // through the MRO
  bool has_pending_writes(const ValuePtr& base) const;  // an attribute of base written by the trace
  bool pending_write_lands_in(const ValuePtr& base, const std::string& table) const;
  std::string landing_table(const ValuePtr& base, const SideEffect& effect) const;
  void delete_frame_attribute(const ValuePtr& object, const std::string& name);  // del obj.name, replayed
  [[noreturn]] ValuePtr read_deleted_attribute(const ValuePtr& base, const std::string& name);
  ValuePtr table_with_pending_writes(const ValuePtr& base, const std::string& table);
  ValuePtr written_through_dict(const ValuePtr& base, const std::string& name);
  ValuePtr weak_reference_call(const ValuePtr& callable, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs);
  std::unordered_map<PyObject*, ValuePtr> weak_targets_;  // weakref.ref(obj) the trace made -> obj's Value
  void assign_tensor_data(const ValuePtr& tensor, const ValuePtr& value);
  void delete_attr(const ValuePtr& object, const std::string& name);
  ValuePtr tensor_contains(const ValuePtr& tensor, const ValuePtr& item, bool negated);  // item in t
  ValuePtr tensor_truth(const ValuePtr& tensor);  // bool(t) as an unbacked bool in the graph
  static bool gradient_fits(const ValuePtr& tensor, const ValuePtr& value);  // t.grad = value accepted
  static bool tensor_descriptor(const std::string& name);  // torch.Tensor's class defines it
  void store_attr(ValuePtr object, const std::string& name, ValuePtr value);
  // `global name = value` in the current frame: an attribute write on the module whose
  // namespace the frame's globals are, replayed after the graph; later reads see the value.
  void store_global(const std::string& name, ValuePtr value);
  std::vector<std::pair<int, PyObject*>> identities_;
  int break_at_ = -1;
  bool reached_break_ = false;
  size_t break_step_ = 0;
  std::optional<BreakState> nested_break_;  // the state where break_step_ stopped the trace
  BreakState nested_break_state() const;
  // Set by a CALL instruction for the call_value (and call_constant) it makes, which take it:
  // the function they inline is called directly by that instruction.
  bool direct_call_ = false;
  ValuePtr handled_exception_;  // the exception an except block is handling (sys.exc_info())
  bool initial_grad_mode_ = true;
  Ref initial_state_;
  Ref rng_state_before_trace_;  // torch.get_rng_state() before the trace's first seed_in_graph (put back at its end)
  ValuePtr seed_in_graph(const ValuePtr& seed);  // torch.manual_seed(seed)
  ValuePtr random_with_generator(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs,
                                 const std::string& what);
  Ref initial_entered_;  // _global_state.entered_state() at entry (restored on leaving)
  // torch.inference_mode, torch.device: `entered` is what __enter__ returns.
  void enter_context_block(Handle enter, Ref argument, const char* what, ValuePtr entered);
  void set_grad_mode_in_graph(bool enabled);  // a graph node, and the tracing thread's mode
  void set_autocast_state_in_graph(Handle state);  // likewise, autocast's (set_autocast_state's arguments)
  void enter_autocast(const ValuePtr& manager);
  bool enter_function_mode(const ValuePtr& manager);
  void before_with(ValuePtr manager);

  guards::EntryDispatchState entry_dispatch_state_;  // before anything the trace changes
  graph::GraphBuilder graph_;
  std::unique_ptr<guards::RootGuardManager> guards_;
  std::unordered_map<PyObject*, ValuePtr> tensor_inputs_;  // input tensor object -> its value
  std::unordered_map<PyObject*, ValuePtr> attributes_;     // parameter/buffer -> get_attr value
  std::vector<std::pair<int, std::string>> local_tensor_inputs_;
  std::unordered_map<PyObject*, std::string> policy_cache_;
  std::unordered_map<PyObject*, Ref> polyfill_cache_;  // callable -> its stand-in (null: none)
  std::map<std::pair<PyObject*, std::string>, ValuePtr> written_globals_;  // (globals dict, name) -> value
  // A function made by the trace -> its defaults and keyword defaults as Values (a Tuple, a Dict;
  // either may be null): one Value per default shared by every call, as CPython shares the one
  // object, so `def f(acc=[])` sees its earlier appends. Such functions never leave the trace.
  std::unordered_map<PyObject*, std::pair<ValuePtr, ValuePtr>> made_defaults_;
  std::vector<Ref> keep_alive_;  // keys of the maps above
  std::unordered_set<PyObject*> made_generators_;  // torch.Generators make_generator made (kept alive there)
  std::vector<ValuePtr> keep_alive_values_;  // values whose address id() handed out
  std::unordered_set<PyObject*> hook_guarded_modules_;  // modules whose hook tables are guarded
  bool global_hooks_guarded_ = false;
  bool global_hooks_present_ = false;  // torch.nn's global hook tables, read once per trace
  int modules_made_ = 0;  // nn.Modules made inside the traced code
  // A module made with parameters (a lazily built head): this compile serves one call, the one
  // whose trace made it (module_calls.cpp, serve_one_call_with).
  void serve_one_call_with(const ValuePtr& made, Handle rng_after);
  // fn wrapped to run at trace time from the global generator's state the trace's earlier such
  // calls left (_made_modules.AtTraceTime); its rng_after (None: it drew nothing) is what
  // follow_generator takes.
  Ref at_trace_time(Handle fn);
  void follow_generator(Handle rng_after);
  Ref one_call_token_;  // empty until that call ran: its entry's guard
  Ref generator_state_;  // where the calls at trace time left the global generator (null: untouched)
  std::unordered_set<PyObject*> made_with_state_;  // those modules (kept alive in keep_alive_)
};

}  // namespace cdynamo::interp
