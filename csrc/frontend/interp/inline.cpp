// Inlining: a call of a Python function runs its bytecode inside the same trace, so its torch
// operations join the caller's graph. Assumes the callee's globals and cells stay reachable.
#include <functional>
#include "common/error.h"
#include "common/py_import.h"
#include "common/py_types.h"
#include "frontend/bytecode/bytecode.h"
#include "frontend/interp/traced_keys.h"
#include "frontend/interp/tracer.h"
#include "frontend/interp/trace_markers.h"

namespace cdynamo::interp {
namespace {

constexpr size_t kMaxInlineDepth = 32;

std::string function_name(PyCodeObject* code) { return to_std_string(code->co_qualname); }

// Why calls into code's file are not traced (config's tables, read by utils.inline_refusal), or "".
std::string inline_refusal(PyCodeObject* code) {
  Ref refusal = call_helper("cdynamo.utils", "inline_refusal", {code->co_filename});
  return refusal.ptr() == Py_None ? std::string() : to_std_string(refusal);
}

}  // namespace

// Binding errors are the call's own TypeError, raised in the trace (a try/except around a call
// that passes an argument the callee does not take catches it, as in eager), worded as CPython's.
void Tracer::raise_if_missing(const std::string& name, const std::vector<ValuePtr>& slots, int begin, int end,
                              const char* kind, const std::function<std::string(int)>& param_name) const {
  std::vector<std::string> missing;
  for (int slot = begin; slot < end; ++slot)
    if (!slots[slot]) missing.push_back("'" + param_name(slot) + "'");
  if (missing.empty()) return;
  std::string listed = missing[0];
  for (size_t k = 1; k < missing.size(); ++k)
    listed += (k + 1 == missing.size() ? (missing.size() > 2 ? ", and " : " and ") : ", ") + missing[k];
  raise(PyExc_TypeError, name + "() missing " + std::to_string(missing.size()) + " required " + kind + " argument" +
                             (missing.size() == 1 ? "" : "s") + ": " + listed);
}

std::vector<ValuePtr> Tracer::bind_arguments(PyCodeObject* code, Handle function, std::vector<ValuePtr> args,
                                             graph::KwArgs kwargs) {
  const int positional = code->co_argcount;
  const int keyword_only = code->co_kwonlyargcount;
  const int positional_only = code->co_posonlyargcount;
  const bool has_varargs = code->co_flags & CO_VARARGS;
  const bool has_varkw = code->co_flags & CO_VARKEYWORDS;
  const std::string name = function_name(code);
  auto param_name = [&](int slot) { return to_std_string(PyTuple_GET_ITEM(code->co_localsplusnames, slot)); };

  std::vector<ValuePtr> slots(code->co_nlocalsplus);
  std::vector<ValuePtr> extra_positional;
  for (size_t i = 0; i < args.size(); ++i) {
    if (static_cast<int>(i) < positional) slots[i] = args[i];
    else if (has_varargs) extra_positional.push_back(args[i]);
    else raise(PyExc_TypeError, name + "() takes " + std::to_string(positional) + " positional argument" +
                                    (positional == 1 ? "" : "s") + " but " + std::to_string(args.size()) +
                                    (args.size() == 1 ? " was" : " were") + " given");
  }
  auto varkw = Value::dict({}, {});
  for (auto& [key, value] : kwargs) {
    int found = -1;
    for (int slot = positional_only; slot < positional + keyword_only; ++slot)
      if (param_name(slot) == key) found = slot;
    if (found >= 0) {
      if (slots[found]) raise(PyExc_TypeError, name + "() got multiple values for argument '" + key + "'");
      slots[found] = value;
    } else if (has_varkw) {
      varkw->keys.push_back(check(PyUnicode_FromString(key.c_str())));
      varkw->items.push_back(value);
    } else {
      raise(PyExc_TypeError, name + "() got an unexpected keyword argument '" + key + "'");
    }
  }
  // Defaults are attributes of the function object, which the caller's guards pin down.
  auto* fn = reinterpret_cast<PyFunctionObject*>(function.ptr());
  // A tensor default (`lambda x, scale=scale: ...` over a tensor) is a graph input read from
  // the function's defaults at each call.
  auto defaults_source = [&](const char* attribute) {
    return Source::attr(Source::fixed(Ref::borrow(function.ptr()), "<function " + name + ">"), attribute);
  };
  auto default_value = [&](PyObject* obj, const std::function<SourcePtr()>& source) -> ValuePtr {
    if (PyObject_TypeCheck(obj, as_type(import_attr("torch", "Tensor").ptr())))
      return wrap(Handle(obj), source());
    if (obj == Py_None || PyLong_CheckExact(obj) || PyFloat_CheckExact(obj) || PyUnicode_CheckExact(obj) ||
        PyBool_Check(obj) || PyTuple_CheckExact(obj) || PyObject_TypeCheck(obj, &PyBaseObject_Type))
      return Value::constant(Ref::borrow(obj));
    unsupported("a default argument of type " + std::string(Py_TYPE(obj)->tp_name));
  };
  auto made = made_defaults_.find(function.ptr());
  const ValuePtr made_defaults = made != made_defaults_.end() ? made->second.first : nullptr;
  const ValuePtr made_kwdefaults = made != made_defaults_.end() ? made->second.second : nullptr;
  if (fn->func_defaults) {
    Py_ssize_t count = PyTuple_GET_SIZE(fn->func_defaults);
    for (Py_ssize_t i = 0; i < count; ++i) {
      int slot = positional - static_cast<int>(count) + static_cast<int>(i);
      if (slot >= 0 && !slots[slot] && made_defaults) {
        slots[slot] = made_defaults->items.at(static_cast<size_t>(i));
      } else if (slot >= 0 && !slots[slot]) {
        slots[slot] = default_value(PyTuple_GET_ITEM(fn->func_defaults, i),
                                    [&] { return Source::item(defaults_source("__defaults__"), static_cast<int>(i)); });
      }
    }
  }
  for (int slot = positional; slot < positional + keyword_only; ++slot) {
    if (slots[slot]) continue;
    if (made_kwdefaults) {
      Ref key = check(PyUnicode_FromString(param_name(slot).c_str()));
      if (int at = made_kwdefaults->dict_index(key); at >= 0) slots[slot] = made_kwdefaults->items[at];
      continue;
    }
    PyObject* obj = fn->func_kwdefaults ? PyDict_GetItemString(fn->func_kwdefaults, param_name(slot).c_str()) : nullptr;
    if (obj)
      slots[slot] = default_value(obj, [&] {
        return Source::dict_item(defaults_source("__kwdefaults__"), check(PyUnicode_FromString(param_name(slot).c_str())));
      });
  }
  raise_if_missing(name, slots, 0, positional, "positional", param_name);
  raise_if_missing(name, slots, positional, positional + keyword_only, "keyword-only", param_name);
  int next = positional + keyword_only;
  if (has_varargs) slots[next++] = Value::sequence(ValueKind::Tuple, std::move(extra_positional));
  if (has_varkw) slots[next++] = varkw;
  return slots;
}

ValuePtr Tracer::inline_call(Handle function, std::vector<ValuePtr> args, graph::KwArgs kwargs,
                             const std::vector<ValuePtr>* cells, bool direct, ValuePtr names) {
  // A function with a stand-in (one decorated with @torch.no_grad(), or an lru_cache wrapper,
  // reached as a method or a forward): the stand-in runs instead.
  Ref stand_in = cells ? Ref() : polyfill_of(function);
  if (stand_in) function = stand_in;
  if (!PyFunction_Check(function.ptr())) unsupported("calling a " + std::string(Py_TYPE(function.ptr())->tp_name));
  auto* code = reinterpret_cast<PyCodeObject*>(PyFunction_GET_CODE(function.ptr()));
  std::string name = function_name(code);
  const bool generator = code->co_flags & CO_GENERATOR;
  if (code->co_flags & (CO_COROUTINE | CO_ASYNC_GENERATOR))
    unsupported("calling the coroutine function " + name + "()");
  if (frames_.size() >= kMaxInlineDepth) unsupported("calls nested deeper than 32 levels (recursion?)");
  // A function whose code is a constant of a frame being traced (a generator expression, a
  // lambda or a nested def there) is part of that frame's code, wherever its file lies: torch's
  // layers traced for their changed state use generator expressions.
  auto made_by_traced_frame = [&]() {
    for (const auto& frame : frames_) {
      PyObject* consts = frame->code->co_consts;
      for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(consts); ++k)
        if (PyTuple_GET_ITEM(consts, k) == reinterpret_cast<PyObject*>(code)) return true;
    }
    return false;
  };
  if (std::string refusal = inline_refusal(code);
      !refusal.empty() && !made_by_traced_frame() &&
      !PyObject_IsTrue(call_helper("cdynamo._trace_support", "is_nn_layer_method", {function}).ptr()))
    unsupported("calling " + name + "() of " + to_std_string(code->co_filename) + " (" + refusal + ")");

  auto callee = std::make_shared<InterpFrame>();
  callee->code = code;
  callee->code_ref = Ref::borrow(reinterpret_cast<PyObject*>(code));
  callee->function = Ref::borrow(function);
  callee->instructions = bytecode::decode(code);
  callee->globals = PyFunction_GET_GLOBALS(function.ptr());
  callee->builtins = reinterpret_cast<PyFunctionObject*>(function.ptr())->func_builtins;
  callee->closure = cells ? nullptr : PyFunction_GET_CLOSURE(function.ptr());
  callee->argument_slots = argument_slot_count(code);
  callee->first_free_slot = code->co_nlocalsplus - code->co_nfreevars;
  callee->locals = bind_arguments(code, function, std::move(args), std::move(kwargs));
  callee->local_initialised.assign(code->co_nlocalsplus, true);
  callee->names = std::move(names);
  for (int slot = callee->first_free_slot; slot < code->co_nlocalsplus; ++slot) {
    size_t index = static_cast<size_t>(slot - callee->first_free_slot);
    if (cells && index < cells->size()) callee->locals[slot] = (*cells)[index];  // the trace's own cells
    else callee->local_initialised[slot] = false;                               // read from the closure
  }
  if (generator) {
    // Nothing runs until the generator is iterated (as in CPython).
    auto value = std::make_shared<Value>();
    value->kind = ValueKind::Generator;
    value->frame = std::move(callee);
    return value;
  }
  callee->direct_call = direct;
  frames_.push_back(std::move(callee));
  ValuePtr result;
  try {
    result = run_frame();
  } catch (const TracedException&) {
    // Unhandled in the callee: it unwinds to the caller's CALL, whose handler may catch it.
    // (Other errors keep the frame: they report where the trace stopped.)
    frames_.pop_back();
    throw;
  }
  frames_.pop_back();
  return result;
}

ValuePtr Tracer::resume_generator(const ValuePtr& generator, ValuePtr sent, Ref thrown) {
  if (generator->exhausted) {
    if (thrown) raise(std::move(thrown));  // throw() into a finished generator raises at once
    return nullptr;
  }
  if (frames_.size() >= kMaxInlineDepth) unsupported("calls nested deeper than 32 levels (recursion?)");
  for (const auto& running : frames_)
    if (running == generator->frame) unsupported("a generator that iterates itself");
  InterpFrame& suspended = *generator->frame;
  if (sent && !suspended.yielded && !(sent->is_constant() && sent->obj.ptr() == Py_None))
    raise(PyExc_TypeError, "can't send non-None value to a just-started generator");
  if (suspended.yielded) suspended.stack.push_back(sent ? sent : Value::constant(Ref::borrow(Py_None)));  // what yield returns
  suspended.yielded = false;
  suspended.pending_throw = std::move(thrown);
  frames_.push_back(generator->frame);
  try {
    run_frame();
  } catch (const TracedException&) {
    frames_.pop_back();
    generator->exhausted = true;
    throw;
  }
  frames_.pop_back();
  if (!suspended.yielded) {
    generator->exhausted = true;  // returned: StopIteration
    return nullptr;
  }
  return suspended.return_value;
}

ValuePtr Tracer::call_generator_method(const ValuePtr& generator, const std::string& name, std::vector<ValuePtr> args) {
  // A generator that returns ends send() and throw() with StopIteration(value): a Python object,
  // a traced key where only the trace has the value (e.value reads it back).
  auto stop_iteration = [&]() -> ValuePtr {
    const ValuePtr& returned = generator->frame->return_value;
    if (!returned) raise(PyExc_StopIteration, Ref::borrow(Py_None));
    raise(PyExc_StopIteration, returned->is_fully_constant() ? returned->as_python_constant() : new_traced_key(returned, std::nullopt));
  };
  if (name == "send" && args.size() == 1) {
    if (ValuePtr item = resume_generator(generator, args[0])) return item;
    return stop_iteration();
  }
  if (name == "throw" && !args.empty() && args.size() <= 3) {
    // throw(exception) or the older throw(type[, value[, traceback]]) that contextlib calls.
    for (const auto& arg : args)
      if (!arg->is_constant()) unsupported("generator.throw() of a " + arg->describe());
    Ref exception = args[0]->obj;
    if (PyExceptionClass_Check(exception.ptr())) {
      PyObject* value = args.size() > 1 ? args[1]->obj.ptr() : Py_None;
      exception = PyObject_IsInstance(value, args[0]->obj.ptr()) == 1 ? Ref::borrow(value)
                  : value == Py_None ? check(PyObject_CallNoArgs(args[0]->obj.ptr()))
                                     : check(PyObject_CallOneArg(args[0]->obj.ptr(), value));
    }
    if (!PyExceptionInstance_Check(exception.ptr())) raise(PyExc_TypeError, "exceptions must derive from BaseException");
    if (ValuePtr item = resume_generator(generator, nullptr, exception)) return item;
    return stop_iteration();
  }
  if (name == "close" && args.empty()) {
    // GeneratorExit where it is paused: ending with it (or returning) closes it quietly.
    if (generator->exhausted || !generator->frame->yielded) {
      generator->exhausted = true;
      return Value::constant(Ref::borrow(Py_None));
    }
    try {
      if (resume_generator(generator, nullptr, check(PyObject_CallNoArgs(PyExc_GeneratorExit))))
        raise(PyExc_RuntimeError, "generator ignored GeneratorExit");
    } catch (const TracedException& raised) {
      if (!PyErr_GivenExceptionMatches(raised.exception.ptr(), PyExc_GeneratorExit)) throw;
    }
    generator->exhausted = true;
    return Value::constant(Ref::borrow(Py_None));
  }
  unsupported("generator." + name + "() with " + std::to_string(args.size()) + " arguments");
}

void Tracer::send_none(int target) {
  ValuePtr sent = pop();
  if (!sent->is_constant() || sent->obj.ptr() != Py_None) unsupported("send() of a value into a generator");
  ValuePtr receiver = top();
  if (receiver->kind == ValueKind::Generator) {
    if (ValuePtr item = resume_generator(receiver)) {
      push(std::move(item));
      return;
    }
  } else if (receiver->kind != ValueKind::Iterator) {
    throw InternalError("SEND without an iterator");
  } else if (ValuePtr item = iterator_next(*receiver)) {
    push(std::move(item));
    return;
  }
  ValuePtr returned = receiver->kind == ValueKind::Generator ? receiver->frame->return_value : nullptr;
  if (!returned) returned = Value::constant(Ref::borrow(Py_None));
  if (kOparg.send_result_replaces_iterator) pop();  // 3.11; 3.12's END_SEND pops it
  push(std::move(returned));
  frame().pc = target;
}

namespace {

// What a def made by the trace holds as __defaults__ (a tuple) or __kwdefaults__ (a dict): the
// constants themselves, and _trace_objects.TRACED_DEFAULT for a value only the trace has (a
// tensor the graph computes: calls bind the Value, made_defaults_; such a function cannot leave).
// Null for defaults of another shape.
Ref defaults_object(const ValuePtr& defaults) {
  const Ref& marker = markers::marker(markers::Marker::TracedDefault);
  if (defaults->is_fully_constant()) return defaults->as_python_constant();
  auto constant_or_marker = [&](const ValuePtr& item) { return item->is_fully_constant() ? item->as_python_constant() : marker; };
  if (defaults->kind == ValueKind::Tuple) {
    Ref tuple = check(PyTuple_New(static_cast<Py_ssize_t>(defaults->items.size())));
    for (size_t i = 0; i < defaults->items.size(); ++i)
      PyTuple_SET_ITEM(tuple.ptr(), static_cast<Py_ssize_t>(i), constant_or_marker(defaults->items[i]).release());
    return tuple;
  }
  if (defaults->kind == ValueKind::Dict && traced_keys_of(*defaults).empty()) {
    Ref dict = check(PyDict_New());
    std::vector<Ref> keys = held_keys(*defaults);
    for (size_t i = 0; i < keys.size(); ++i)
      check_status(PyDict_SetItem(dict.ptr(), keys[i].ptr(), constant_or_marker(defaults->items[i]).ptr()));
    return dict;
  }
  return Ref();
}

}  // namespace

void Tracer::make_function(int flags) {
  ValuePtr code = pop();
  ValuePtr closure = (flags & 0x08) ? pop() : nullptr;
  ValuePtr annotations = (flags & 0x04) ? pop() : nullptr;
  ValuePtr kwdefaults = (flags & 0x02) ? pop() : nullptr;
  ValuePtr defaults = (flags & 0x01) ? pop() : nullptr;
  if (!code->is_constant() || !PyCode_Check(code->obj.ptr())) throw InternalError("MAKE_FUNCTION without a code object");
  Ref function = check(PyFunction_New(code->obj.ptr(), frame().globals));
  // Defaults live on the function object (inspect.signature reads them there), and as Values
  // bind_arguments binds (made_defaults_): a mutable default (a list, a dict, an object) is one
  // object for every call, so what one call appends the next one sees.
  if (defaults) {
    Ref held = defaults_object(defaults);
    if (!held) unsupported("a default argument that is a " + defaults->describe());
    check_status(PyFunction_SetDefaults(function.ptr(), held.ptr()));
  }
  if (kwdefaults) {
    Ref held = defaults_object(kwdefaults);
    if (!held) unsupported("a keyword default that is a " + kwdefaults->describe());
    check_status(PyFunction_SetKwDefaults(function.ptr(), held.ptr()));
  }
  // A constant tuple (LOAD_CONST (1, "a")) holds only immutable objects: the real ones serve.
  ValuePtr default_values = defaults && defaults->kind == ValueKind::Tuple ? defaults : nullptr;
  ValuePtr kwdefault_values = kwdefaults && kwdefaults->kind == ValueKind::Dict ? kwdefaults : nullptr;
  if (default_values || kwdefault_values) {
    made_defaults_[function.ptr()] = {default_values, kwdefault_values};
    keep_alive_.push_back(function);  // the key stays this function's
  }
  if (annotations && annotations->is_fully_constant()) {
    // 3.11/3.12 push annotations as a flat tuple (name, value, name, value, ...).
    Ref flat = annotations->as_python_constant();
    Ref dict = check(PyDict_New());
    if (PyTuple_Check(flat.ptr()))
      for (Py_ssize_t i = 0; i + 1 < PyTuple_GET_SIZE(flat.ptr()); i += 2)
        check_status(PyDict_SetItem(dict.ptr(), PyTuple_GET_ITEM(flat.ptr(), i), PyTuple_GET_ITEM(flat.ptr(), i + 1)));
    else if (PyDict_Check(flat.ptr()))
      check_status(PyDict_Update(dict.ptr(), flat.ptr()));
    check_status(PyFunction_SetAnnotations(function.ptr(), dict.ptr()));
  }
  auto value = std::make_shared<Value>();
  value->kind = ValueKind::Function;
  value->obj = std::move(function);
  if (closure) {
    if (closure->kind != ValueKind::Tuple) throw InternalError("MAKE_FUNCTION closure is not a tuple");
    value->items = closure->items;
  }
  push(value);
}

void Tracer::make_cell(int slot) {
  InterpFrame& current = frame();
  ValuePtr contents = current.locals[slot];
  // An argument that is also a cell: at the root its value is still in the real frame's slot.
  if (!contents && in_root_frame() && slot < current.argument_slots && !current.local_initialised[slot])
    contents = load_local(slot);
  auto cell = std::make_shared<Value>();
  cell->kind = ValueKind::Cell;
  if (contents) cell->items = {contents};
  else cell->items = {nullptr};
  current.locals[slot] = cell;
  current.local_initialised[slot] = true;
}

}  // namespace cdynamo::interp
