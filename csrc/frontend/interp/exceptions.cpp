// Exceptions inside the trace: raising on trace-time values, the exception table's handlers,
// and the opcodes of try/except blocks (CPython 3.11/3.12). Assumes decoded handler entries.
#include "common/cpython_compat.h"
#include "common/error.h"
#include "common/py_import.h"
#include "common/py_types.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {
namespace {

// An exception class whose construction runs no Python code (no __init__/__new__ of its own).
bool has_native_constructor(PyObject* type) {
  if (!PyType_Check(type) || !PyType_IsSubtype(as_type(type),
                                               as_type(PyExc_BaseException)))
    return false;
  auto* t = as_type(type);
  for (const char* name : {"__init__", "__new__"}) {
    PyObject* found = _PyType_Lookup(t, Ref(check(PyUnicode_FromString(name))).ptr());
    if (found && (PyFunction_Check(found) || PyObject_TypeCheck(found, &PyStaticMethod_Type))) return false;
  }
  return true;
}

}  // namespace

void Tracer::raise(Ref exception) const {
  PyObject* handled = handled_exception_ && handled_exception_->obj ? handled_exception_->obj.ptr() : nullptr;
  if (handled && handled != exception.ptr() && PyExceptionInstance_Check(exception.ptr())) {
    // Raised while handling another: that one becomes its __context__, as CPython sets it (a
    // chain that already leads back to the new exception is cut there, as CPython cuts it).
    for (PyObject* link = handled; link;) {
      PyObject* next = PyException_GetContext(link);  // new reference
      Py_XDECREF(next);
      if (next == exception.ptr()) {
        PyException_SetContext(link, nullptr);
        break;
      }
      link = next;
    }
    PyException_SetContext(exception.ptr(), Py_NewRef(handled));
  }
  const InterpFrame& current = *frames_.back();
  int line = current.line >= 0 ? current.line : current.code->co_firstlineno;
  throw TracedException{std::move(exception), to_std_string(current.code->co_filename) + ":" + std::to_string(line)};
}

void Tracer::raise(PyObject* type, Handle argument) const {
  raise(check(PyObject_CallOneArg(type, argument.ptr())));
}

void Tracer::raise(PyObject* type, const std::string& message) const {
  Ref text = check(PyUnicode_FromString(message.c_str()));
  raise(type, text);
}

void Tracer::raise_python_error() const {
  if (!PyErr_Occurred()) throw InternalError("a failed call without a Python error");
  if (!PyErr_ExceptionMatches(PyExc_Exception)) throw PythonError();
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  // A number only the data decides (int() of an unbacked size), met by a fold on symbolic
  // values: a limit of the trace, never the program's exception (its try must not catch it).
  // (Looked up with no error pending.)
  static PyObject* const data_dependent[] = {
      import_attr("torch.fx.experimental.symbolic_shapes", "GuardOnDataDependentSymNode").release(),  // never freed
      import_attr("torch._subclasses.fake_tensor", "DataDependentOutputException").release(),
      import_attr("torch._subclasses.fake_tensor", "DynamicOutputShapeException").release()};
  for (PyObject* limit : data_dependent) {
    if (PyErr_GivenExceptionMatches(type, limit)) {
      PyErr_Restore(type, value, traceback);
      graph::rethrow_trace_error();
    }
  }
  PyErr_NormalizeException(&type, &value, &traceback);
  Ref owned_type = Ref::steal(type), owned_traceback = Ref::steal(traceback);
  if (!value) throw InternalError("an exception without a value");
  raise(Ref::steal(value));
}

bool Tracer::is_instance_of(const TracedException& raised, PyObject* type) {
  int match = PyObject_IsInstance(raised.exception.ptr(), type);
  check_status(match);
  return match;
}

bool Tracer::enter_handler(const bytecode::Instruction& inst, const TracedException& raised) {
  if (!inst.handler) return false;
  const bytecode::ExceptionHandler& handler = *inst.handler;
  InterpFrame& current = frame();
  if (static_cast<size_t>(handler.depth) > current.stack.size()) throw InternalError("handler deeper than the stack");
  current.stack.resize(handler.depth);
  // lasti is only read back by RERAISE to set the frame's f_lasti, which a trace has no use for.
  if (handler.lasti) push(Value::constant(check(PyLong_FromLong(inst.offset >= 0 ? inst.offset : 0))));
  push(Value::constant(raised.exception));
  current.pc = handler.target;
  return true;
}

bool Tracer::op_push_exc_info(const bytecode::Instruction&) {
  ValuePtr exception = pop();
  push(handled_exception_ ? handled_exception_ : Value::constant(Ref::borrow(Py_None)));
  handled_exception_ = exception;
  push(exception);
  return true;
}

bool Tracer::op_pop_except(const bytecode::Instruction&) {
  ValuePtr previous = pop();
  handled_exception_ = previous->is_constant() && previous->obj.ptr() == Py_None ? nullptr : previous;
  return true;
}

bool Tracer::op_check_exc_match(const bytecode::Instruction&) {
  ValuePtr type = pop();
  ValuePtr exception = top();
  // An exception from the frame (a resume function's handler) is an object whose type is guarded.
  if (!type->is_fully_constant() || !exception->obj ||
      (!exception->is_constant() && exception->kind != ValueKind::Object))
    unsupported("an except clause on a " + type->describe());
  TracedException raised{exception->obj, ""};
  bool match = is_instance_of(raised, type->as_python_constant().ptr());
  push(Value::boolean(match));
  return true;
}

bool Tracer::op_with_except_start(const bytecode::Instruction&) {
  // [exit, lasti, previous exception, exception]: exit(type, exception, traceback).
  ValuePtr exception = top(1);
  ValuePtr exit = top(4);
  if (!exception->obj) unsupported("an exception leaving a with-block");
  ValuePtr type = Value::constant(Ref::borrow(reinterpret_cast<PyObject*>(Py_TYPE(exception->obj.ptr()))));
  ValuePtr traceback = Value::constant(Ref::borrow(Py_None));  // the trace keeps no traceback
  push(call_value(exit, {type, exception, traceback}, {}));
  return true;
}

bool Tracer::op_reraise(const bytecode::Instruction&) {
  ValuePtr exception = pop();  // (a non-zero arg only peeks at lasti below it, for f_lasti)
  if (!exception->obj || (!exception->is_constant() && exception->kind != ValueKind::Object))
    unsupported("re-raising a " + exception->describe());
  raise(exception->obj);
}

bool Tracer::op_raise_varargs(const bytecode::Instruction& inst) {
  if (inst.arg == 0) {
    if (!handled_exception_) unsupported("a bare raise outside an except block");
    raise(handled_exception_->obj);
  }
  ValuePtr cause = inst.arg == 2 ? pop() : nullptr;
  ValuePtr raised = pop();
  if (!raised->is_constant()) unsupported("raising a " + raised->describe());
  PyObject* obj = raised->obj.ptr();
  Ref exception;
  if (has_native_constructor(obj)) exception = check(PyObject_CallNoArgs(obj));
  else if (PyExceptionInstance_Check(obj) && !raised->source) exception = raised->obj;  // made by the trace
  else unsupported("raising a " + raised->describe());
  if (cause) {
    if (!cause->is_constant()) unsupported("raise ... from a " + cause->describe());
    PyObject* c = cause->obj.ptr();
    if (c == Py_None) {
      PyException_SetCause(exception.ptr(), nullptr);
      reinterpret_cast<PyBaseExceptionObject*>(exception.ptr())->suppress_context = 1;
    } else if (PyExceptionInstance_Check(c)) {
      PyException_SetCause(exception.ptr(), Py_NewRef(c));
    } else {
      unsupported("raise ... from a " + cause->describe());
    }
  }
  raise(std::move(exception));
}

// sys.exc_info() and sys.exception(): the exception the trace is handling (contextlib.ExitStack
// asks), or None; the trace keeps no traceback, so exc_info()'s third item is None. Null for
// other calls.
ValuePtr Tracer::handled_exception_query(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs) {
  static Ref& exc_info = *new Ref(import_attr("sys", "exc_info"));  // never freed: outlives the interpreter
  static Ref& exception = *new Ref(import_attr("sys", "exception"));  // likewise
  if ((fn.ptr() != exc_info.ptr() && fn.ptr() != exception.ptr()) || !args.empty() || !kwargs.empty()) return nullptr;
  ValuePtr none = Value::constant(Ref::borrow(Py_None));
  if (fn.ptr() == exception.ptr()) return handled_exception_ ? handled_exception_ : none;
  if (!handled_exception_) return Value::sequence(ValueKind::Tuple, {none, none, none});
  Ref type = Ref::borrow(reinterpret_cast<PyObject*>(Py_TYPE(handled_exception_->obj.ptr())));
  return Value::sequence(ValueKind::Tuple, {Value::constant(type), handled_exception_, none});
}

}  // namespace cdynamo::interp
