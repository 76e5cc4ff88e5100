// Shared bytecode building for generated code objects (see code_builder.h).
// Assumes CPython 3.11/3.12 opcodes; the assembler computes jumps, tables and stack depth.
#include "frontend/codegen/code_builder.h"

namespace cdynamo::codegen {

void rebuild(CodeBuilder& code, const ValuePtr& value, const std::vector<ValuePtr>& outputs, int depth) {
  switch (value->kind) {
    case ValueKind::Tensor: {
      if (value->source) {
        code.load_source(*value->source);
        return;
      }
      if (depth < 1) throw InternalError("a computed tensor to rebuild without a graph");
      for (size_t i = 0; i < outputs.size(); ++i) {
        if (outputs[i]->node.ptr() != value->node.ptr()) continue;
        code.emit(COPY, depth);
        Ref index = check(PyLong_FromSize_t(i));
        code.load_const(index);
        code.emit(BINARY_SUBSCR);
        return;
      }
      throw InternalError("returned tensor missing from the graph outputs");
    }
    case ValueKind::Constant:
      if (!value->obj) throw InternalError("constant without an object");
      code.load_const(value->obj);
      return;
    case ValueKind::Tuple:
    case ValueKind::List: {
      bool structseq = value->kind == ValueKind::Tuple && value->obj;
      if (structseq) {
        code.emit(PUSH_NULL);
        code.load_const(value->obj);
        depth += 2;
      }
      for (size_t i = 0; i < value->items.size(); ++i) rebuild(code, value->items[i], outputs, depth + static_cast<int>(i));
      code.emit(value->kind == ValueKind::List ? BUILD_LIST : BUILD_TUPLE, static_cast<int>(value->items.size()));
      if (structseq) code.call(1);
      return;
    }
    case ValueKind::Dict: {
      for (size_t i = 0; i < value->items.size(); ++i) {
        code.load_const(value->keys[i]);
        rebuild(code, value->items[i], outputs, depth + 2 * static_cast<int>(i) + 1);
      }
      code.emit(BUILD_MAP, static_cast<int>(value->items.size()));
      return;
    }
    case ValueKind::Set: {
      // set(frozenset(...)): a new set per run, as the traced code makes one.
      code.emit(PUSH_NULL);
      code.load_const(Ref::borrow(reinterpret_cast<PyObject*>(&PySet_Type)));
      code.load_const(check(PyFrozenSet_New(value->obj.ptr())));
      code.call(1);
      return;
    }
    case ValueKind::TensorMethod:
    case ValueKind::UserMethod:
      // A bound method: its receiver, then the attribute (a plain load, not the method form).
      if (!value->name.empty() && !value->items.empty()) {
        rebuild(code, value->items[0], outputs, depth);
#if CD_PY312
        code.emit(LOAD_ATTR, code.name_index(value->name) << 1);
#else
        code.emit(LOAD_ATTR, code.name_index(value->name));
#endif
        return;
      }
      throw interp::Unsupported("rebuilding a method without a name");
    case ValueKind::NNModule:
    case ValueKind::PyModule:
    case ValueKind::Object:
      if (value->source) {
        code.load_source(*value->source);
        return;
      }
      [[fallthrough]];
    default:
      throw interp::Unsupported(std::string("returning a ") + value->describe() + " from a compiled function");
  }
}


void replay_side_effects(CodeBuilder& code, const std::vector<interp::SideEffect>& effects,
                         const std::vector<ValuePtr>& outputs, int depth) {
  for (const auto& effect : effects) {
    rebuild(code, effect.value, outputs, depth);
    rebuild(code, effect.object, outputs, depth + 1);
    code.emit(STORE_ATTR, code.name_index(effect.name));
  }
}

}  // namespace cdynamo::codegen
