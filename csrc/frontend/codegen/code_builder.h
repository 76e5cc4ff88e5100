// Building the bytecode of generated code objects (transformed code, resume functions): an
// instruction list with its own constants and names, sources loaded, values rebuilt.
#pragma once
#include <opcode.h>
#include <functional>
#include <string>
#include <vector>
#include "common/cpython_compat.h"
#include "common/error.h"
#include "frontend/bytecode/bytecode.h"
#include "frontend/interp/compile_frame.h"
#include "frontend/interp/tracer.h"
#include "frontend/interp/value.h"

namespace cdynamo::codegen {

using bytecode::Instruction;
using interp::Source;
using interp::ValueKind;
using interp::ValuePtr;

// CO_FAST_CELL from CPython's internal pycore_code.h: the slot holds a cell after MAKE_CELL.
constexpr unsigned char kFastCell = 0x40;

class CodeBuilder {
 public:
  explicit CodeBuilder(PyCodeObject* original) : original_(original) {
    consts_ = check(PyList_New(0));
    names_ = check(PyList_New(0));
    line_ = original->co_firstlineno;
  }

  void emit(int opcode, int arg = 0) {
    Instruction inst;
    inst.opcode = opcode;
    inst.arg = arg;
    inst.position.line = line_;
    inst.position.end_line = line_;
    instructions_.push_back(inst);
  }

  int const_index(Handle value) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(consts_.ptr()); ++i)
      if (PyList_GET_ITEM(consts_.ptr(), i) == value.ptr()) return static_cast<int>(i);
    check_status(PyList_Append(consts_.ptr(), value.ptr()));
    return static_cast<int>(PyList_GET_SIZE(consts_.ptr()) - 1);
  }

  int name_index(const std::string& name) {
    Ref text = check(PyUnicode_FromString(name.c_str()));
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(names_.ptr()); ++i) {
      int equal = PyUnicode_Compare(PyList_GET_ITEM(names_.ptr(), i), text.ptr());
      if (equal == 0) return static_cast<int>(i);
    }
    check_status(PyList_Append(names_.ptr(), text.ptr()));
    return static_cast<int>(PyList_GET_SIZE(names_.ptr()) - 1);
  }

  void load_const(Handle value) { emit(LOAD_CONST, const_index(value)); }

  void load_source(const Source& source) {
    switch (source.kind) {
      case Source::Kind::Local: {
        unsigned char kind = PyBytes_AS_STRING(original_->co_localspluskinds)[source.index];
        emit((kind & kFastCell) ? LOAD_DEREF : LOAD_FAST, source.index);
        return;
      }
      case Source::Kind::Closure:
        emit(LOAD_DEREF, original_->co_nlocalsplus - original_->co_nfreevars + source.index);
        return;
      case Source::Kind::Global: emit(LOAD_GLOBAL, name_index(source.name) << 1); return;
      case Source::Kind::Attr:
        load_source(*source.base);
#if CD_PY312
        emit(LOAD_ATTR, name_index(source.name) << 1);
#else
        emit(LOAD_ATTR, name_index(source.name));
#endif
        return;
      case Source::Kind::Item: {
        load_source(*source.base);
        Ref index = check(PyLong_FromLong(source.index));
        load_const(index);
        emit(BINARY_SUBSCR);
        return;
      }
      case Source::Kind::Fixed: load_const(source.key); return;
      case Source::Kind::Converted:
        emit(PUSH_NULL);
        load_const(source.key);
        load_source(*source.base);
        call(1);
        return;
      case Source::Kind::DictItem:
        load_source(*source.base);
        load_const(source.key);
        emit(BINARY_SUBSCR);
        return;
    }
  }

  // Call with the NULL + callable + args already on the stack.
  void call(int argc) {
#if !CD_PY312
    emit(PRECALL, argc);
#endif
    emit(CALL, argc);
  }

  // The prologue CPython's compiler emits: cells for cell variables, free variables copied
  // from the closure, then RESUME.
  void prologue() {
    const char* kinds = PyBytes_AS_STRING(original_->co_localspluskinds);
    int first_free = original_->co_nlocalsplus - original_->co_nfreevars;
    for (int slot = 0; slot < first_free; ++slot)
      if (static_cast<unsigned char>(kinds[slot]) & kFastCell) emit(MAKE_CELL, slot);
    if (original_->co_nfreevars) emit(COPY_FREE_VARS, original_->co_nfreevars);
    emit(RESUME, 0);
  }

  size_t size() const { return instructions_.size(); }
  // The objects made by the trace that this code rebuilds (emit_object_table); their tuple lies
  // on the stack right above the graph's output tuple.
  std::vector<const interp::Value*> new_objects;
  Instruction& at(size_t index) { return instructions_[index]; }
  void emit_instruction(Instruction inst) {
    inst.position = {line_, line_, -1, -1};
    inst.handler.reset();
    inst.offset = -1;
    instructions_.push_back(inst);
  }

  // Pushes a new function object for `code` built with this frame's globals and, when the
  // original has free variables, its closure cells.
  void make_function(Handle code) {
    int nfree = original_->co_nfreevars;
    if (nfree) {
      int first = original_->co_nlocalsplus - nfree;
      for (int i = 0; i < nfree; ++i) emit(LOAD_CLOSURE, first + i);
      emit(BUILD_TUPLE, nfree);
    }
    load_const(code);
    emit(MAKE_FUNCTION, nfree ? 0x08 : 0);
  }

  // The code object, with the original's locals layout and every argument slot positional.
  Ref finish() {
    int argument_slots = interp::argument_slot_count(original_);
    Ref kwargs = check(PyDict_New());
    auto set = [&](const char* key, PyObject* value) {
      Ref owned = steal(value);
      if (!owned) throw PythonError();
      check_status(PyDict_SetItemString(kwargs.ptr(), key, owned.ptr()));
    };
    set("co_argcount", PyLong_FromLong(argument_slots));
    set("co_posonlyargcount", PyLong_FromLong(0));
    set("co_kwonlyargcount", PyLong_FromLong(0));
    set("co_flags", PyLong_FromLong(original_->co_flags & ~(CO_VARARGS | CO_VARKEYWORDS)));
    set("co_consts", PyList_AsTuple(consts_.ptr()));
    set("co_names", PyList_AsTuple(names_.ptr()));
    return bytecode::assemble(instructions_, original_, kwargs.ptr());
  }

 private:
  PyCodeObject* original_;
  Ref consts_;
  Ref names_;
  int line_;
  bytecode::InstructionList instructions_;
};

// Makes every object the trace created that is reachable from `roots` (once each, so that
// identity is kept), fills in their state, and leaves their tuple on the stack above the graph's
// outputs at `depth` (pushing None for outputs when there is no graph, depth 0). Returns the new
// depth of the outputs tuple (unchanged when there are no such objects).
int emit_object_table(CodeBuilder& code, const std::vector<ValuePtr>& roots, const std::vector<ValuePtr>& outputs,
                      int depth);
// Calls fn on every value reachable from value (through containers, bound methods' receivers and
// objects made by the trace), each object once.
void visit_values(const ValuePtr& value, const std::function<void(const ValuePtr&)>& fn);

// Replays attribute writes in program order (obj.name = value), the graph's output tuple at
// `depth`; leaves the stack as it was.
void replay_side_effects(CodeBuilder& code, const std::vector<interp::SideEffect>& effects,
                         const std::vector<ValuePtr>& outputs, int depth);

// Pushes `value`. Tensors come from their source when they have one (graph inputs, module
// parameters), else from the graph's output tuple found at stack depth `depth` (1 = top).
void rebuild(CodeBuilder& code, const ValuePtr& value, const std::vector<ValuePtr>& outputs, int depth);

}  // namespace cdynamo::codegen
