// Shared bytecode building for generated code objects (see code_builder.h).
// Assumes CPython 3.11/3.12 opcodes; the assembler computes jumps, tables and stack depth.
#include "frontend/codegen/code_builder.h"
#include "common/py_import.h"

namespace cdynamo::codegen {

namespace {

// Pushes the table's entry for `value` (an object or shared container the trace made), if any.
bool load_from_table(CodeBuilder& code, const ValuePtr& value, int depth) {
  for (size_t i = 0; i < code.new_objects.size(); ++i) {
    if (code.new_objects[i] != value.get()) continue;
    code.emit(COPY, depth - 1);  // the object table sits right above the outputs
    code.load_const(Ref(check(PyLong_FromSize_t(i))));
    code.emit(BINARY_SUBSCR);
    return true;
  }
  return false;
}

void rebuild_value(CodeBuilder& code, const ValuePtr& value, const std::vector<ValuePtr>& outputs, int depth,
                   bool use_table);

}  // namespace

void rebuild(CodeBuilder& code, const ValuePtr& value, const std::vector<ValuePtr>& outputs, int depth) {
  rebuild_value(code, value, outputs, depth, true);
}

namespace {

void rebuild_value(CodeBuilder& code, const ValuePtr& value, const std::vector<ValuePtr>& outputs, int depth,
                   bool use_table) {
  if (use_table && (value->kind == ValueKind::List || value->kind == ValueKind::Dict || value->kind == ValueKind::Set) &&
      load_from_table(code, value, depth))
    return;
  if (use_table && (value->kind == ValueKind::List || value->kind == ValueKind::Dict) && value->source) {
    code.load_source(*value->source);  // the program's own list or dict (given its new contents first)
    return;
  }
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
        // torch.return_types take the tuple; a namedtuple is made from it by cls._make.
        Ref make = steal(PyObject_GetAttrString(value->obj.ptr(), "_make"));
        if (!make) PyErr_Clear();
        code.emit(PUSH_NULL);
        code.load_const(make ? make : value->obj);
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
    case ValueKind::GradModeExit: {
      // The __exit__ of a no_grad/enable_grad block the break cuts: restores the mode from before it.
      static Ref& restorers = *new Ref(import_attr("cdynamo._trace_support", "RESTORE_GRAD_MODE"));  // never freed: outlives the interpreter
      code.load_const(Ref::borrow(PyTuple_GET_ITEM(restorers.ptr(), value->position ? 1 : 0)));
      return;
    }
    case ValueKind::Iterator: {
      // A loop's iterator at a graph break, as the tuple of the items it has not produced yet
      // (the trace knew them all when the loop began): the resume function's prologue makes it
      // an iterator again (resume_code).
      for (size_t i = value->position; i < value->items.size(); ++i)
        rebuild(code, value->items[i], outputs, depth + static_cast<int>(i - value->position));
      code.emit(BUILD_TUPLE, static_cast<int>(value->items.size() - value->position));
      return;
    }
    case ValueKind::NewObject:
      if (load_from_table(code, value, depth)) return;
      throw InternalError("an object made by the trace is missing from the object table");
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

}  // namespace


void visit_values(const ValuePtr& value, const std::function<void(const ValuePtr&)>& fn) {
  std::vector<const interp::Value*> seen;
  std::function<void(const ValuePtr&)> walk = [&](const ValuePtr& v) {
    if (!v) return;
    if (v->kind == ValueKind::NewObject) {
      for (const auto* done : seen)
        if (done == v.get()) return;
      seen.push_back(v.get());
    }
    fn(v);
    switch (v->kind) {
      case ValueKind::Tuple:
      case ValueKind::List:
      case ValueKind::Dict:
      case ValueKind::NewObject:
      case ValueKind::Iterator:
      case ValueKind::TensorMethod:
      case ValueKind::UserMethod:
        for (const auto& item : v->items) walk(item);
        break;
      default: break;
    }
  };
  walk(value);
}

int emit_object_table(CodeBuilder& code, const std::vector<ValuePtr>& roots, const std::vector<ValuePtr>& outputs,
                      int depth) {
  // The table: every object the trace made, and every list, dict or set it made that is
  // referenced from two places (rebuilt separately they would become two objects).
  std::vector<ValuePtr> entries;
  std::vector<std::pair<const interp::Value*, int>> references;
  std::function<void(const ValuePtr&)> walk = [&](const ValuePtr& v) {
    if (!v) return;
    bool container = (v->kind == ValueKind::List || v->kind == ValueKind::Dict || v->kind == ValueKind::Set) && !v->source;
    if (container || v->kind == ValueKind::NewObject) {
      for (auto& [seen, count] : references)
        if (seen == v.get()) {
          ++count;
          return;  // its contents were walked already
        }
      references.emplace_back(v.get(), 1);
      entries.push_back(v);
    }
    if (v->kind == ValueKind::NewObject) {
      // Its __dict__ and items are its own state, not objects the program holds.
      for (const auto& state : v->items)
        if (state)
          for (const auto& item : state->items) walk(item);
      return;
    }
    if (v->is_sequence() || v->kind == ValueKind::Dict || v->kind == ValueKind::TensorMethod ||
        v->kind == ValueKind::UserMethod || v->kind == ValueKind::Iterator)
      for (const auto& item : v->items) walk(item);
  };
  for (const auto& root : roots) walk(root);
  std::vector<ValuePtr> objects;
  for (const auto& entry : entries) {
    int count = 0;
    for (const auto& [seen, n] : references)
      if (seen == entry.get()) count = n;
    if (entry->kind == ValueKind::NewObject || count > 1) objects.push_back(entry);
  }
  if (objects.empty()) return depth;
  if (depth < 1) {
    code.load_const(Ref::borrow(Py_None));  // stands for the output tuple of a graph there is not
    depth = 1;
  }
  static Ref& make = *new Ref(import_attr("cdynamo._trace_support", "new_objects"));  // never freed: outlives the interpreter
  static Ref& fill = *new Ref(import_attr("cdynamo._trace_support", "fill_object"));  // never freed: outlives the interpreter
  code.emit(PUSH_NULL);
  code.load_const(make);
  for (const auto& object : objects) {
    PyObject* type = object->kind == ValueKind::NewObject ? object->cls.ptr()
                     : object->kind == ValueKind::List   ? reinterpret_cast<PyObject*>(&PyList_Type)
                     : object->kind == ValueKind::Dict   ? reinterpret_cast<PyObject*>(&PyDict_Type)
                                                         : reinterpret_cast<PyObject*>(&PySet_Type);
    code.load_const(Ref::borrow(type));
  }
  code.call(static_cast<int>(objects.size()));
  depth += 1;
  for (const auto& object : objects) code.new_objects.push_back(object.get());
  // State after identity: it may refer to other entries of the table (or to the entry itself).
  for (const auto& object : objects) {
    code.emit(PUSH_NULL);
    code.load_const(fill);
    rebuild(code, object, outputs, depth + 2);
    if (object->kind == ValueKind::NewObject) {
      rebuild(code, object->items[0], outputs, depth + 3);
      if (object->items.size() > 1 && object->items[1]) rebuild(code, object->items[1], outputs, depth + 4);
      else code.load_const(Ref::borrow(Py_None));
    } else {
      rebuild_value(code, object, outputs, depth + 3, false);  // its contents, as a new container
      code.load_const(Ref::borrow(Py_None));
    }
    code.call(3);
    code.emit(POP_TOP);
  }
  return depth;
}

void replay_side_effects(CodeBuilder& code, const std::vector<interp::SideEffect>& effects,
                         const std::vector<ValuePtr>& outputs, int depth) {
  if (effects.empty()) return;
  static Ref& replace = *new Ref(import_attr("cdynamo._trace_support", "replace_contents"));  // never freed: outlives the interpreter
  // Every new value is built before anything is written: a value reloaded from its source must
  // be read as the trace read it, before a write changes what that path leads to.
  for (size_t i = 0; i < effects.size(); ++i) {
    const auto& effect = effects[i];
    if (effect.name.empty()) rebuild_value(code, effect.value, outputs, depth + static_cast<int>(i), false);
    else rebuild(code, effect.value, outputs, depth + static_cast<int>(i));
  }
  code.emit(BUILD_TUPLE, static_cast<int>(effects.size()));
  for (size_t i = 0; i < effects.size(); ++i) {
    const auto& effect = effects[i];
    Ref index = check(PyLong_FromSize_t(i));
    if (effect.name.empty()) {  // a list or dict from the frame gets its new contents
      code.emit(PUSH_NULL);
      code.load_const(replace);
      code.load_source(*effect.object->source);
      code.emit(COPY, 4);
      code.load_const(index);
      code.emit(BINARY_SUBSCR);
      code.call(2);
      code.emit(POP_TOP);
      continue;
    }
    code.emit(COPY, 1);
    code.load_const(index);
    code.emit(BINARY_SUBSCR);
    rebuild(code, effect.object, outputs, depth + 2);
    code.emit(STORE_ATTR, code.name_index(effect.name));
  }
  code.emit(POP_TOP);
}

}  // namespace cdynamo::codegen
