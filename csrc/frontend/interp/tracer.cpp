// The interpreter loop: frame state (stack, locals) and the handlers of non-call instructions,
// for CPython 3.11 and 3.12 bytecode. Assumes instructions decoded by frontend/bytecode.
#include "frontend/interp/tracer.h"
#include <opcode.h>
#include "common/cpython_compat.h"
#include "common/error.h"
#include "common/py_import.h"
#include "frontend/bytecode/bytecode.h"

namespace cdynamo::interp {

// ============================================================================================
// Frame state
// ============================================================================================

Tracer::Tracer(CdFrame* real_frame, Handle shape_trace, int break_at, size_t break_step)
    : guards_(std::make_unique<guards::RootGuardManager>()) {
  break_at_ = break_at;
  break_step_ = break_step;
  graph_.set_shape_trace(Ref::borrow(shape_trace));
  auto root = std::make_unique<InterpFrame>();
  root->code = cd_frame_code(real_frame);
  root->real_locals = cd_frame_localsplus(real_frame);
  root->globals = cd_frame_globals(real_frame);
  root->builtins = cd_frame_builtins(real_frame);
  PyObject* function = cd_frame_function(real_frame);
  if (function && PyFunction_Check(function)) root->closure = PyFunction_GET_CLOSURE(function);
  root->argument_slots = argument_slot_count(root->code);
  root->first_free_slot = root->code->co_nlocalsplus - root->code->co_nfreevars;
  root->instructions = bytecode::decode(root->code);
  root->locals.resize(root->code->co_nlocalsplus);
  root->local_initialised.resize(root->code->co_nlocalsplus, false);
  root_globals_ = root->globals;
  initial_grad_mode_ = PyObject_IsTrue(call_helper("torch", "is_grad_enabled", {}).ptr()) == 1;
  initial_state_ = call_helper("cdynamo._global_state", "global_state", {});
  frames_.push_back(std::move(root));
  // Graphs depend on grad mode (autograd records or not): always guarded.
  guards_->add_grad_mode_guard();
}

Tracer::~Tracer() {
  // A list from the frame that contains itself is a Value that holds itself: cut the cycle, or
  // the Values (and the fx nodes and fakes they hold) would never be freed.
  for (auto& [object, container] : container_inputs_) container->items.clear();
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  try {
    call_helper("cdynamo._global_state", "set_global_state", {initial_state_});
  } catch (...) {
    PyErr_Clear();
  }
  PyErr_Restore(type, value, traceback);
}

std::string Tracer::local_name(int slot) const {
  return to_std_string(PyTuple_GET_ITEM(frames_.back()->code->co_localsplusnames, slot));
}

void Tracer::unsupported(const std::string& reason) const {
  const InterpFrame& current = *frames_.back();
  Unsupported error(reason);
  error.filename = to_std_string(current.code->co_filename);
  error.line = current.line >= 0 ? current.line : current.code->co_firstlineno;
  error.function = to_std_string(current.code->co_qualname);
  throw error;
}

ValuePtr Tracer::pop() {
  if (frame().stack.empty()) throw InternalError("interpreter stack underflow");
  ValuePtr value = std::move(frame().stack.back());
  frame().stack.pop_back();
  return value;
}

ValuePtr& Tracer::top(int depth) {
  if (depth < 1 || static_cast<size_t>(depth) > frame().stack.size()) throw InternalError("bad stack depth");
  return frame().stack[frame().stack.size() - depth];
}

std::vector<ValuePtr> Tracer::pop_n(int n) {
  if (static_cast<size_t>(n) > frame().stack.size()) throw InternalError("interpreter stack underflow");
  std::vector<ValuePtr> values(frame().stack.end() - n, frame().stack.end());
  frame().stack.resize(frame().stack.size() - n);
  return values;
}

ValuePtr Tracer::load_local(int slot) {
  if (!frame().locals[slot] && !frame().local_initialised[slot]) {
    frame().local_initialised[slot] = true;
    if (slot >= frame().first_free_slot) {
      int index = slot - frame().first_free_slot;
      if (!frame().closure) unsupported("free variable " + local_name(slot) + " without a closure");
      PyObject* cell = PyTuple_GET_ITEM(frame().closure, index);
      PyObject* contents = PyCell_GET(cell);
      if (!contents) unsupported("free variable " + local_name(slot) + " is not bound yet");
      // An inlined function's cells are reached through the cell object itself.
      SourcePtr source = in_root_frame()
                             ? Source::closure(index, local_name(slot))
                             : Source::attr(Source::fixed(Ref::borrow(cell), "<cell " + local_name(slot) + ">"), "cell_contents");
      frame().locals[slot] = wrap(contents, source);
    } else if (frame().real_locals && slot < frame().argument_slots && frame().real_locals[slot]) {
      frame().locals[slot] = wrap(frame().real_locals[slot], Source::local(slot, local_name(slot)));
    }
  }
  if (!frame().locals[slot]) unsupported("local variable " + local_name(slot) + " is read before it is assigned");
  return frame().locals[slot];
}

void Tracer::store_local(int slot, ValuePtr value) {
  frame().local_initialised[slot] = true;
  frame().locals[slot] = value->kind == ValueKind::Null ? nullptr : std::move(value);
}

// ============================================================================================
// The loop
// ============================================================================================

ValuePtr Tracer::run_frame() {
  while (true) {
    InterpFrame& current = frame();
    if (current.pc >= current.instructions.size()) throw InternalError("frame ended without RETURN");
    if (break_at_ >= 0 && frames_.size() == 1 && current.pc == static_cast<size_t>(break_at_)) {
      reached_break_ = true;
      return nullptr;
    }
    if (break_step_ && steps_ + 1 == break_step_) {
      nested_break_ = nested_break_state();
      throw ReachedNestedBreak{};
    }
    const bytecode::Instruction& inst = current.instructions[current.pc++];
    if (inst.position.line >= 0 && inst.position.line != current.line) {
      current.line = inst.position.line;
      // A dynamic trace tags the facts its ShapeEnv records with the user's line.
      if (graph_.dynamic()) graph_.set_location(current.code, current.line);
    }
    if (++steps_ > 1000000) unsupported("the function runs more than a million bytecode steps");
    try {
      if (!step(inst)) return current.return_value;
    } catch (const TracedException& raised) {
      if (!enter_handler(inst, raised)) throw;
    } catch (const Unsupported& error) {
      // An operation that raised on fake tensors raises in the trace where a try block awaits
      // it (the graph keeps no node of it); elsewhere it stays a graph break before the call.
      if (!error.raised || !inside_try_block()) throw;
      TracedException raised{error.raised, to_std_string(current.code->co_filename) + ":" + std::to_string(current.line)};
      if (!enter_handler(inst, raised)) throw raised;
    }
  }
}

bool Tracer::inside_try_block() const {
  for (size_t i = 0; i < frames_.size(); ++i) {
    const InterpFrame& running = *frames_[i];
    if (running.pc == 0) continue;
    if (running.instructions[running.pc - 1].handler) return true;  // the instruction it runs now
  }
  return false;
}

TraceResult Tracer::run() {
  TraceResult result;
  try {
    try {
      result.return_value = run_frame();
    } catch (const ReachedNestedBreak&) {
      result.break_state = std::move(nested_break_);
    }
    check_context_vars_reset();
    for (const auto& container : mutated_containers_) result.side_effects.push_back({container, "", container});
    result.side_effects.insert(result.side_effects.end(), side_effects_.begin(), side_effects_.end());
    if (reached_break_) {
      InterpFrame& root = *frames_.front();
      BreakState state;
      state.instruction = break_at_;
      state.stack = root.stack;
      state.locals = root.locals;
      state.local_touched = root.local_initialised;
      // A traced value no later instruction reads is dropped: as a graph output it would keep
      // its autograd history alive and give the parameters that fed it a zero .grad.
      std::vector<bool> live = bytecode::live_locals(root.code, root.instructions, break_at_);
      for (size_t slot = 0; slot < state.locals.size() && slot < live.size(); ++slot)
        if (!live[slot]) state.locals[slot] = nullptr;
      state.kw_names = root.kw_names;
      result.break_state = std::move(state);
    }
  } catch (const TracedException& raised) {
    // Raised and not handled in the traced frame: the graph ends before the instruction, which
    // then runs eagerly and raises for real.
    Ref repr = steal(PyObject_Repr(raised.exception.ptr()));
    if (!repr) PyErr_Clear();
    Unsupported error("the traced code raises " + (repr ? to_std_string(repr) : std::string("an exception")) +
                      " (raised at " + raised.where + ")");
    const InterpFrame& root = *frames_.front();
    error.filename = to_std_string(root.code->co_filename);
    error.line = root.line >= 0 ? root.line : root.code->co_firstlineno;
    error.function = to_std_string(root.code->co_qualname);
    throw error;
  } catch (Unsupported& error) {
    // Errors raised below the interpreter (graph building) learn where they happened here:
    // the innermost inlined frame, and the chain of calls that led there.
    const InterpFrame& innermost = *frames_.back();
    if (error.filename.empty()) {
      error.filename = to_std_string(innermost.code->co_filename);
      error.line = innermost.line >= 0 ? innermost.line : innermost.code->co_firstlineno;
      error.function = to_std_string(innermost.code->co_qualname);
    }
    throw;
  }
  return result;
}

std::unique_ptr<guards::RootGuardManager> Tracer::take_guards() {
  if (local_tensor_inputs_.size() > 1) guards_->add_no_aliasing_guard(local_tensor_inputs_);
  if (graph_.dynamic()) add_shape_guard();
  return std::move(guards_);
}

void Tracer::jump_if(const bytecode::Instruction& inst, bool jump_when, bool pop_always, bool none_test) {
  ValuePtr condition = pop();
  bool truth;
  if (none_test) {
    truth = condition->kind == ValueKind::Constant && condition->obj.ptr() == Py_None;
  } else {
    truth = truth_value(condition);
  }
  if (truth == jump_when) {
    if (!pop_always) push(condition);
    frame().pc = inst.target;
  }
}

bool Tracer::step(const bytecode::Instruction& inst) {
  const int arg = inst.arg;
  switch (inst.opcode) {
    case NOP:
    case RESUME:
    case COPY_FREE_VARS:   // free variables are read from the function's closure on first use
#if !CD_PY312
    case PRECALL:
#endif
      return true;
    case PUSH_NULL: push(Value::null()); return true;
    case POP_TOP: pop(); return true;
#if CD_PY312
    case END_FOR: pop(); pop(); return true;
#endif
    case COPY: push(top(arg)); return true;
    case SWAP: std::swap(top(1), top(arg)); return true;

    case LOAD_CONST: push(Value::constant(Ref::borrow(PyTuple_GET_ITEM(frame().code->co_consts, arg)))); return true;
    case LOAD_FAST:
#if CD_PY312
    case LOAD_FAST_CHECK:
#endif
      push(load_local(arg));
      return true;
    case MAKE_CELL: make_cell(arg); return true;
    case LOAD_DEREF: {
      ValuePtr value = load_local(arg);
      if (value->kind == ValueKind::Cell) {
        if (!value->items[0]) unsupported("free variable " + local_name(arg) + " is read before it is assigned");
        value = value->items[0];
      }
      push(value);
      return true;
    }
    case LOAD_CLOSURE: {
      ValuePtr value = load_local(arg);
      if (value->kind != ValueKind::Cell) {
        // A free variable read from a real closure: the new function sees its current value
        // (position 1: a copy, so writes through it are refused).
        auto cell = std::make_shared<Value>();
        cell->kind = ValueKind::Cell;
        cell->items = {value};
        cell->position = 1;
        value = cell;
      }
      push(value);
      return true;
    }
    case DELETE_DEREF: {
      ValuePtr value = load_local(arg);
      if (value->kind != ValueKind::Cell || value->position == 1) unsupported("deleting the enclosing function's variable " + local_name(arg));
      value->items[0] = nullptr;
      return true;
    }
    case MAKE_FUNCTION: make_function(arg); return true;
    case RETURN_GENERATOR: push(Value::constant(Ref::borrow(Py_None))); return true;  // popped right after
    case YIELD_VALUE:
      frame().return_value = pop();
      frame().yielded = true;
      return false;
#if CD_PY312
    case LOAD_FAST_AND_CLEAR: {
      ValuePtr value = frame().locals[arg];
      if (!value && !frame().local_initialised[arg] && arg < frame().argument_slots) value = load_local(arg);
      push(value ? value : Value::null());
      frame().locals[arg] = nullptr;
      frame().local_initialised[arg] = true;
      return true;
    }
#endif
    case STORE_FAST: store_local(arg, pop()); return true;
    case STORE_DEREF: {
      ValuePtr value = pop();
      ValuePtr cell = frame().locals[arg];
      if (cell && cell->kind == ValueKind::Cell && cell->position != 1) {
        cell->items[0] = value;  // seen by every function sharing the cell
        return true;
      }
      if (arg >= frame().first_free_slot) unsupported("assigning to the enclosing function's variable " + local_name(arg));
      store_local(arg, value);
      return true;
    }
    case DELETE_FAST: frame().locals[arg] = nullptr; frame().local_initialised[arg] = true; return true;

    case LOAD_GLOBAL: {
      if (arg & 1) push(Value::null());
      push(load_global(to_std_string(PyTuple_GET_ITEM(frame().code->co_names, arg >> 1))));
      return true;
    }
    case LOAD_ATTR: {
#if CD_PY312
      std::string name = to_std_string(PyTuple_GET_ITEM(frame().code->co_names, arg >> 1));
      ValuePtr base = pop();
      if (arg & 1) push(Value::null());
      push(load_attr(base, name));
#else
      push(load_attr(pop(), to_std_string(PyTuple_GET_ITEM(frame().code->co_names, arg))));
#endif
      return true;
    }
#if !CD_PY312
    case LOAD_METHOD: {
      ValuePtr base = pop();
      push(Value::null());
      push(load_attr(base, to_std_string(PyTuple_GET_ITEM(frame().code->co_names, arg))));
      return true;
    }
#endif
    case KW_NAMES: frame().kw_names = Ref::borrow(PyTuple_GET_ITEM(frame().code->co_consts, arg)); return true;
    case CALL: {
      Ref names = std::move(frame().kw_names);
      call(arg, names);
      return true;
    }
    case CALL_FUNCTION_EX: {
      ValuePtr kwargs = (arg & 1) ? pop() : nullptr;
      ValuePtr args = pop();
      ValuePtr callable = pop();
      pop();  // the NULL below the callable
      if (args->is_constant() && PyTuple_Check(args->obj.ptr())) {
        std::vector<ValuePtr> items;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args->obj.ptr()); ++i)
          items.push_back(Value::constant(Ref::borrow(PyTuple_GET_ITEM(args->obj.ptr(), i))));
        args = Value::sequence(ValueKind::Tuple, std::move(items));
      }
      if (!args->is_sequence()) unsupported("f(*args) where args is a " + args->describe());
      graph::KwArgs keywords;
      if (kwargs && kwargs->kind == ValueKind::Dict) {
        for (size_t i = 0; i < kwargs->keys.size(); ++i)
          keywords.emplace_back(to_std_string(kwargs->keys[i]), kwargs->items[i]);
      } else if (kwargs) {
        if (!kwargs->is_constant() || !PyDict_Check(kwargs->obj.ptr()))
          unsupported("f(**kwargs) where kwargs is a " + kwargs->describe());
        PyObject *key, *item;
        Py_ssize_t pos = 0;
        while (PyDict_Next(kwargs->obj.ptr(), &pos, &key, &item))
          keywords.emplace_back(to_std_string(key), Value::constant(Ref::borrow(item)));
      }
      push(call_value(callable, args->items, std::move(keywords)));
      return true;
    }

    case BINARY_OP: {
      ValuePtr rhs = pop();
      ValuePtr lhs = pop();
      static Ref& ops = *new Ref(call_helper("cdynamo._trace_support", "binary_operators", {}));  // never freed: outlives the interpreter
      if (arg < 0 || arg >= PyTuple_GET_SIZE(ops.ptr())) unsupported("unknown binary operator");
      binary_op(PyTuple_GET_ITEM(ops.ptr(), arg), "binary operator", lhs, rhs);
      return true;
    }
    case COMPARE_OP: {
      ValuePtr rhs = pop();
      ValuePtr lhs = pop();
#if CD_PY312
      compare_op(arg >> 4, lhs, rhs);
#else
      compare_op(arg, lhs, rhs);
#endif
      return true;
    }
    case UNARY_NEGATIVE: unary_op("neg", pop()); return true;
    case UNARY_INVERT: unary_op("invert", pop()); return true;
    case UNARY_NOT: {
      bool truth = truth_value(pop());
      push(Value::constant(Ref::borrow(truth ? Py_False : Py_True)));
      return true;
    }
#if CD_PY312
    case LOAD_SUPER_ATTR: {
      // super().name in 3.12: [super, __class__, self] -> the attribute (method form: NULL first).
      ValuePtr self = pop();
      ValuePtr cls = pop();
      ValuePtr super_fn = pop();
      graph::KwArgs no_kwargs;
      std::vector<ValuePtr> super_args{cls, self};
      ValuePtr bound = call_value(super_fn, std::move(super_args), std::move(no_kwargs));
      if (arg & 1) push(Value::null());
      push(load_attr(bound, to_std_string(PyTuple_GET_ITEM(frame().code->co_names, arg >> 2))));
      return true;
    }
    case CALL_INTRINSIC_1: {
      if (arg == 5) {  // INTRINSIC_UNARY_POSITIVE
        unary_op("pos", pop());
      } else if (arg == 3) {  // INTRINSIC_STOPITERATION_ERROR: a generator's StopIteration becomes RuntimeError
        ValuePtr exception = pop();
        if (exception->obj && PyObject_TypeCheck(exception->obj.ptr(), reinterpret_cast<PyTypeObject*>(PyExc_StopIteration)))
          exception = Value::constant(check(PyObject_CallFunction(PyExc_RuntimeError, "s", "generator raised StopIteration")));
        push(exception);
      } else if (arg == 6) {  // INTRINSIC_LIST_TO_TUPLE
        ValuePtr list = pop();
        if (!list->is_sequence()) unsupported("tuple() of a " + list->describe());
        push(Value::sequence(ValueKind::Tuple, list->items));
      } else {
        unsupported("intrinsic function " + std::to_string(arg));
      }
      return true;
    }
#else
    case UNARY_POSITIVE: unary_op("pos", pop()); return true;
    case LIST_TO_TUPLE: {
      ValuePtr list = pop();
      if (!list->is_sequence()) unsupported("tuple() of a " + list->describe());
      push(Value::sequence(ValueKind::Tuple, list->items));
      return true;
    }
#endif
    case IS_OP: {
      ValuePtr rhs = pop();
      ValuePtr lhs = pop();
      bool same;
      if (lhs->is_constant() && rhs->is_constant()) same = lhs->obj.ptr() == rhs->obj.ptr();
      else if (lhs->is_tensor() && rhs->is_tensor()) same = lhs->node.ptr() == rhs->node.ptr();
      else if (lhs->kind == ValueKind::NewObject || rhs->kind == ValueKind::NewObject) same = lhs == rhs;
      else if (lhs->obj && rhs->obj) same = lhs->obj.ptr() == rhs->obj.ptr();
      else if (!lhs->source && !rhs->source && lhs->kind == rhs->kind &&
               (lhs->kind == ValueKind::List || lhs->kind == ValueKind::Dict || lhs->kind == ValueKind::Set))
        same = lhs == rhs;  // containers made by the trace: one Value per object
      else if ((lhs->kind == ValueKind::List || lhs->kind == ValueKind::Dict) &&
               (rhs->kind == ValueKind::List || rhs->kind == ValueKind::Dict) && !lhs->obj && !rhs->obj)
        same = lhs == rhs;  // lists and dicts read from the frame have one Value per object too (container_inputs_)
      else if (lhs->is_constant() || rhs->is_constant()) same = false;  // a constant is not a traced value
      else unsupported("'is' between a " + lhs->describe() + " and a " + rhs->describe());
      push(Value::constant(Ref::borrow((same != (arg == 1)) ? Py_True : Py_False)));
      return true;
    }
    case CONTAINS_OP: {
      ValuePtr container = pop();
      ValuePtr item = pop();
      if (container->kind == ValueKind::Set && item->is_fully_constant()) {
        int found = PySet_Contains(container->obj.ptr(), item->as_python_constant().ptr());
        if (found < 0) raise_python_error();
        push(Value::constant(Ref::borrow((found != (arg == 1)) ? Py_True : Py_False)));
        return true;
      }
      if (container->kind == ValueKind::NewObject && container->items.size() > 1 && container->items[1] &&
          !python_special_method(container, "__contains__")) {
        container = container->items[1];  // a dict subclass's own items
      } else if (container->kind == ValueKind::Object && !python_special_method(container, "__contains__")) {
        if (ValuePtr contents = dict_contents(container)) container = contents;
      }
      if (container->kind == ValueKind::NNModule && item->is_constant() && container->obj) {
        // "key" in a ModuleDict (or any container module): its children, which the trace takes as
        // fixed by the module's identity (guarded), as it does when it reads them.
        int found = PySequence_Contains(container->obj.ptr(), item->obj.ptr());
        if (found < 0) raise_python_error();
        push(Value::constant(Ref::borrow((found != (arg == 1)) ? Py_True : Py_False)));
        return true;
      }
      if (container->kind == ValueKind::Dict && item->is_constant()) {
        bool found = container->dict_index(item->obj) >= 0;
        push(Value::constant(Ref::borrow((found != (arg == 1)) ? Py_True : Py_False)));
        return true;
      }
      if (Ref method = python_special_method(container, "__contains__")) {
        bool found = truth_value(inline_call(method, {container, item}, {}));  // `in` takes bool() of it
        push(Value::constant(Ref::borrow((found != (arg == 1)) ? Py_True : Py_False)));
        return true;
      }
      if (!container->is_fully_constant() || !item->is_fully_constant())
        unsupported("'in' on a " + container->describe());
      int found = PySequence_Contains(container->as_python_constant().ptr(), item->as_python_constant().ptr());
      if (found < 0) raise_python_error();
      push(Value::constant(Ref::borrow((found != (arg == 1)) ? Py_True : Py_False)));
      return true;
    }

    case BINARY_SUBSCR: {
      ValuePtr key = pop();
      subscript(pop(), key);
      return true;
    }
#if CD_PY312
    case BINARY_SLICE: {
      ValuePtr stop = pop();
      ValuePtr start = pop();
      ValuePtr container = pop();
      if (!start->is_constant() || !stop->is_constant()) unsupported("slicing with traced bounds");
      Ref slice = check(PySlice_New(start->obj.ptr(), stop->obj.ptr(), nullptr));
      subscript(container, Value::constant(std::move(slice)));
      return true;
    }
    case STORE_SLICE: {
      ValuePtr stop = pop();
      ValuePtr start = pop();
      ValuePtr container = pop();
      ValuePtr value = pop();
      if (!start->is_constant() || !stop->is_constant()) unsupported("slicing with traced bounds");
      Ref slice = check(PySlice_New(start->obj.ptr(), stop->obj.ptr(), nullptr));
      store_subscript(container, Value::constant(std::move(slice)), value);
      return true;
    }
#endif
    case STORE_SUBSCR: {
      ValuePtr key = pop();
      ValuePtr container = pop();
      ValuePtr value = pop();
      store_subscript(container, key, value);
      return true;
    }
    case DELETE_SUBSCR: {
      ValuePtr key = pop();
      delete_subscript(pop(), std::move(key));
      return true;
    }
    case BUILD_SLICE: {
      std::vector<ValuePtr> parts = pop_n(arg);
      for (const auto& part : parts)
        if (!part->is_constant()) unsupported("a slice with traced bounds");
      Ref slice = check(PySlice_New(parts[0]->obj.ptr(), parts[1]->obj.ptr(), arg == 3 ? parts[2]->obj.ptr() : nullptr));
      push(Value::constant(std::move(slice)));
      return true;
    }
    case BUILD_TUPLE: push(Value::sequence(ValueKind::Tuple, pop_n(arg))); return true;
    case BUILD_SET: {
      Ref set = check(PySet_New(nullptr));
      for (const auto& item : pop_n(arg)) {
        if (!item->is_constant()) unsupported("a set holding a " + item->describe());
        if (PySet_Add(set.ptr(), item->obj.ptr()) < 0) raise_python_error();
      }
      push(new_set(std::move(set)));
      return true;
    }
    case SET_ADD:
    case SET_UPDATE: {
      ValuePtr item = pop();
      ValuePtr& set = top(arg);
      if (set->kind != ValueKind::Set) throw InternalError("SET_ADD without a set");
      std::vector<ValuePtr> items = inst.opcode == SET_ADD ? std::vector<ValuePtr>{item} : iterate(item);
      for (const auto& element : items) {
        if (!element->is_constant()) unsupported("a set holding a " + element->describe());
        if (PySet_Add(set->obj.ptr(), element->obj.ptr()) < 0) raise_python_error();
      }
      return true;
    }
    case BUILD_LIST: push(Value::sequence(ValueKind::List, pop_n(arg))); return true;
    case LIST_APPEND: {
      ValuePtr item = pop();
      ValuePtr& list = top(arg);
      if (list->kind != ValueKind::List || !trace_owned(list)) unsupported("appending to a list from outside the function");
      list->items.push_back(item);
      return true;
    }
    case LIST_EXTEND: {
      ValuePtr iterable = pop();
      ValuePtr list = top(arg);  // a copy: iterating a generator below runs other frames
      if (list->kind != ValueKind::List || !trace_owned(list)) unsupported("extending a list from outside the function");
      if (iterable->is_sequence()) {
        list->items.insert(list->items.end(), iterable->items.begin(), iterable->items.end());
      } else if (iterable->is_constant()) {
        Ref items = check(PySequence_Fast(iterable->obj.ptr(), "not iterable"));
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(items.ptr()); ++i)
          list->items.push_back(Value::constant(Ref::borrow(PySequence_Fast_GET_ITEM(items.ptr(), i))));
      } else {
        // [*generator], [*iterator], [*obj]: whatever iterating it gives (a generator runs now).
        for (ValuePtr& item : iterate(iterable)) list->items.push_back(std::move(item));
      }
      return true;
    }
    case UNPACK_SEQUENCE: unpack_sequence(pop(), arg); return true;
    case UNPACK_EX: {
      std::vector<ValuePtr> items = iterate(pop());
      size_t before = arg & 0xFF, after = arg >> 8;
      if (items.size() < before + after) unsupported("not enough values to unpack");
      std::vector<ValuePtr> ordered(items.begin(), items.begin() + before);
      ordered.push_back(Value::sequence(ValueKind::List, std::vector<ValuePtr>(items.begin() + before, items.end() - after)));
      ordered.insert(ordered.end(), items.end() - after, items.end());
      for (auto it = ordered.rbegin(); it != ordered.rend(); ++it) push(*it);
      return true;
    }
    case BUILD_MAP: {
      std::vector<ValuePtr> flat = pop_n(2 * arg);
      std::vector<Ref> keys;
      std::vector<ValuePtr> values;
      for (int i = 0; i < arg; ++i) {
        if (!flat[2 * i]->is_constant()) unsupported("a dict key that is a " + flat[2 * i]->describe());
        keys.push_back(flat[2 * i]->obj);
        values.push_back(flat[2 * i + 1]);
      }
      push(Value::dict(std::move(keys), std::move(values)));
      return true;
    }
    case BUILD_CONST_KEY_MAP: {
      ValuePtr names = pop();
      std::vector<ValuePtr> values = pop_n(arg);
      std::vector<Ref> keys;
      for (int i = 0; i < arg; ++i) keys.push_back(Ref::borrow(PyTuple_GET_ITEM(names->obj.ptr(), i)));
      push(Value::dict(std::move(keys), std::move(values)));
      return true;
    }
    case DICT_MERGE:
    case DICT_UPDATE: {
      ValuePtr update = pop();
      ValuePtr& target = top(arg);
      if (target->kind != ValueKind::Dict || !trace_owned(target)) unsupported("updating a dict from outside the function");
      if (update->kind == ValueKind::Constant && PyDict_Check(update->obj.ptr())) {
        PyObject *key, *item;
        Py_ssize_t pos = 0;
        std::vector<std::pair<Ref, ValuePtr>> entries;
        while (PyDict_Next(update->obj.ptr(), &pos, &key, &item))
          entries.emplace_back(Ref::borrow(key), Value::constant(Ref::borrow(item)));
        update = Value::dict({}, {});
        for (auto& [k, v] : entries) {
          update->keys.push_back(k);
          update->items.push_back(v);
        }
      }
      if (update->kind != ValueKind::Dict) update = mapping_as_dict(update);
      for (size_t i = 0; i < update->keys.size(); ++i) {
        int at = target->dict_index(update->keys[i]);
        if (at >= 0) {
          if (inst.opcode == DICT_MERGE) unsupported("a keyword argument given twice");
          target->items[at] = update->items[i];
        } else {
          target->keys.push_back(update->keys[i]);
          target->items.push_back(update->items[i]);
        }
      }
      return true;
    }
    case MAP_ADD: {
      ValuePtr value = pop();
      ValuePtr key = pop();
      ValuePtr& target = top(arg);
      if (target->kind != ValueKind::Dict || !key->is_constant()) unsupported("building a dict with a traced key");
      target->dict_set(key->obj, value);
      return true;
    }
    case FORMAT_VALUE: {
      ValuePtr spec = (arg & 0x04) ? pop() : nullptr;
      ValuePtr value = pop();
      if (!value->is_fully_constant() || (spec && !spec->is_constant())) unsupported("formatting a " + value->describe());
      Ref object = value->as_python_constant();
      int conversion = arg & 0x03;
      if (conversion == 1) object = check(PyObject_Str(object.ptr()));
      else if (conversion == 2) object = check(PyObject_Repr(object.ptr()));
      else if (conversion == 3) object = check(PyObject_ASCII(object.ptr()));
      push(Value::constant(check(PyObject_Format(object.ptr(), spec ? spec->obj.ptr() : nullptr))));
      return true;
    }
    case BUILD_STRING: {
      std::vector<ValuePtr> parts = pop_n(arg);
      Ref list = check(PyList_New(0));
      for (const auto& part : parts) {
        if (!part->is_constant()) unsupported("building a string from a " + part->describe());
        check_status(PyList_Append(list.ptr(), part->obj.ptr()));
      }
      Ref empty = check(PyUnicode_FromString(""));
      push(Value::constant(check(PyUnicode_Join(empty.ptr(), list.ptr()))));
      return true;
    }

    case GET_ITER: get_iter(pop()); return true;
    case GET_YIELD_FROM_ITER: get_iter(pop()); return true;
    case SEND: send_none(inst.target); return true;
#if CD_PY312
    case END_SEND: {
      ValuePtr value = pop();
      pop();  // the exhausted sub-iterator
      push(std::move(value));
      return true;
    }
#endif
    case FOR_ITER: {
      ValuePtr& iterator = top();
      if (iterator->kind == ValueKind::Generator) {
        ValuePtr generator = iterator;
        if (ValuePtr item = resume_generator(generator)) {
          push(item);
          return true;
        }
      } else if (iterator->kind != ValueKind::Iterator) {
        throw InternalError("FOR_ITER without an iterator");
      } else if (iterator->position < iterator->items.size()) {
        push(iterator->items[iterator->position++]);
        return true;
      }
      pop();
      frame().pc = inst.target;
#if CD_PY312
      if (frame().pc < frame().instructions.size() && frame().instructions[frame().pc].opcode == END_FOR) ++frame().pc;
#endif
      return true;
    }

    case JUMP_FORWARD:
    case JUMP_BACKWARD:
    case JUMP_BACKWARD_NO_INTERRUPT: frame().pc = inst.target; return true;
#if CD_PY312
    case POP_JUMP_IF_FALSE: jump_if(inst, false, true, false); return true;
    case POP_JUMP_IF_TRUE: jump_if(inst, true, true, false); return true;
    case POP_JUMP_IF_NONE: jump_if(inst, true, true, true); return true;
    case POP_JUMP_IF_NOT_NONE: jump_if(inst, false, true, true); return true;
#else
    case POP_JUMP_FORWARD_IF_FALSE:
    case POP_JUMP_BACKWARD_IF_FALSE: jump_if(inst, false, true, false); return true;
    case POP_JUMP_FORWARD_IF_TRUE:
    case POP_JUMP_BACKWARD_IF_TRUE: jump_if(inst, true, true, false); return true;
    case POP_JUMP_FORWARD_IF_NONE:
    case POP_JUMP_BACKWARD_IF_NONE: jump_if(inst, true, true, true); return true;
    case POP_JUMP_FORWARD_IF_NOT_NONE:
    case POP_JUMP_BACKWARD_IF_NOT_NONE: jump_if(inst, false, true, true); return true;
    case JUMP_IF_FALSE_OR_POP: jump_if(inst, false, false, false); return true;
    case JUMP_IF_TRUE_OR_POP: jump_if(inst, true, false, false); return true;
#endif

    case RETURN_VALUE: frame().return_value = pop(); return false;
#if CD_PY312
    case RETURN_CONST: frame().return_value = Value::constant(Ref::borrow(PyTuple_GET_ITEM(frame().code->co_consts, arg))); return false;
#endif
    case BEFORE_WITH: before_with(pop()); return true;
    case STORE_ATTR: {
      ValuePtr object = pop();
      ValuePtr value = pop();
      store_attr(std::move(object), to_std_string(PyTuple_GET_ITEM(frame().code->co_names, arg)), std::move(value));
      return true;
    }
    case DELETE_ATTR: delete_attr(pop(), to_std_string(PyTuple_GET_ITEM(frame().code->co_names, arg))); return true;
    case STORE_GLOBAL: {
      ValuePtr value = pop();
      store_global(to_std_string(PyTuple_GET_ITEM(frame().code->co_names, arg)), std::move(value));
      return true;
    }
    case IMPORT_NAME: {
      // Only modules already imported: importing one for the first time runs its code.
      ValuePtr fromlist = pop();
      ValuePtr level = pop();
      if (!level->is_constant() || !PyLong_Check(level->obj.ptr()) || PyLong_AsLong(level->obj.ptr()) != 0)
        unsupported("a relative import");
      Ref name = Ref::borrow(PyTuple_GET_ITEM(frame().code->co_names, arg));
      Ref modules = check(PySys_GetObject("modules") ? Py_NewRef(PySys_GetObject("modules")) : nullptr);
      if (!PyDict_GetItem(modules.ptr(), name.ptr())) unsupported("importing " + to_std_string(name) + ", which is not imported yet");
      Ref module = check(PyImport_ImportModuleLevelObject(name.ptr(), frame().globals, nullptr,
                                                          fromlist->is_constant() ? fromlist->obj.ptr() : nullptr, 0));
      auto value = Value::constant(std::move(module));
      value->kind = ValueKind::PyModule;
      push(value);
      return true;
    }
    case IMPORT_FROM: push(load_attr(top(), to_std_string(PyTuple_GET_ITEM(frame().code->co_names, arg)))); return true;
    default:
      if (exception_step(inst)) return true;
      unsupported(std::string("the bytecode instruction ") + bytecode::opcode_name(inst.opcode));
  }
}

}  // namespace cdynamo::interp
