// Shared bytecode building for generated code objects (see code_builder.h).
// Assumes CPython 3.11/3.12 opcodes; the assembler computes jumps, tables and stack depth.
#include "frontend/codegen/code_builder.h"
#include <algorithm>
#include <deque>
#include <unordered_set>
#include "common/py_import.h"
#include "frontend/interp/traced_keys.h"
#include "frontend/interp/trace_markers.h"

namespace cdynamo::codegen {

namespace {

// A def the trace made with a default only the trace holds (_trace_objects.TRACED_DEFAULT).
bool holds_traced_default(Handle function) {
  const Ref& marker = interp::markers::marker(interp::markers::Marker::TracedDefault);
  if (!function || !PyFunction_Check(function.ptr())) return false;
  PyObject* defaults = PyFunction_GetDefaults(function.ptr());  // borrowed, may be null
  for (Py_ssize_t i = 0; defaults && i < PyTuple_GET_SIZE(defaults); ++i)
    if (PyTuple_GET_ITEM(defaults, i) == marker.ptr()) return true;
  PyObject* kwdefaults = PyFunction_GetKwDefaults(function.ptr());  // borrowed, may be null
  PyObject *key, *item;
  for (Py_ssize_t at = 0; kwdefaults && PyDict_Next(kwdefaults, &at, &key, &item);)
    if (item == marker.ptr()) return true;
  return false;
}

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

// A constant holding sizes of a dynamic trace: each SymInt from the graph's outputs (where
// add_symbolic_outputs put it), the tuples, lists and torch.Size around them rebuilt.
void rebuild_symbolic(CodeBuilder& code, Handle obj, const std::vector<ValuePtr>& outputs, int depth) {
  if (graph::is_symbolic(obj.ptr())) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i]->obj.ptr() != obj.ptr() || outputs[i]->is_tensor()) continue;
      if (depth < 1) throw InternalError("a size to rebuild without a graph");
      code.emit(COPY, depth);
      code.load_const(check(PyLong_FromSize_t(i)));
      code.emit(BINARY_SUBSCR);
      return;
    }
    throw InternalError("a symbolic size missing from the graph outputs");
  }
  if (!graph::holds_symbolic(obj.ptr())) {
    code.load_const(obj);
    return;
  }
  if (PySlice_Check(obj.ptr())) {
    auto* slice = reinterpret_cast<PySliceObject*>(obj.ptr());
    int i = 0;
    for (PyObject* part : {slice->start, slice->stop, slice->step}) rebuild_symbolic(code, Handle(part), outputs, depth + i++);
    code.emit(BUILD_SLICE, 3);
    return;
  }
  const bool exact = PyTuple_CheckExact(obj.ptr()) || PyList_CheckExact(obj.ptr());
  if (!exact) {  // torch.Size and other tuple subclasses: the type called on the tuple of items
    code.emit(PUSH_NULL);
    code.load_const(Ref::borrow(reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr()))));
    depth += 2;
  }
  Ref items = check(PySequence_Fast(obj.ptr(), "sequence"));
  Py_ssize_t n = PySequence_Fast_GET_SIZE(items.ptr());
  for (Py_ssize_t i = 0; i < n; ++i)
    rebuild_symbolic(code, Handle(PySequence_Fast_GET_ITEM(items.ptr(), i)), outputs, depth + static_cast<int>(i));
  code.emit(PyList_Check(obj.ptr()) ? BUILD_LIST : BUILD_TUPLE, static_cast<int>(n));
  if (!exact) code.call(1);
}

}  // namespace

// Nesting of the rebuild recursion on this thread. Cycles end at table entries and sources;
// values built deeper than kMaxNestingDepth are refused rather than recursed into.
thread_local int rebuild_nesting = 0;

void rebuild(CodeBuilder& code, const ValuePtr& value, const std::vector<ValuePtr>& outputs, int depth) {
  interp::DepthCount level(rebuild_nesting);
  if (rebuild_nesting > interp::kMaxNestingDepth)
    throw interp::Unsupported("rebuilding data nested deeper than " + std::to_string(interp::kMaxNestingDepth) +
                              " levels");
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
    case ValueKind::Constant: {
      if (!value->obj) throw InternalError("constant without an object");
      if (value->obj.ptr() == interp::markers::marker(interp::markers::Marker::GraphGradFn).ptr())
        throw interp::Unsupported("returning the grad_fn of a tensor the compiled graph computes (the graph makes no such autograd node)");
      static Ref& generator_type = *new Ref(import_attr("torch", "Generator"));  // never freed: outlives the interpreter
      if (PyObject_TypeCheck(value->obj.ptr(), reinterpret_cast<PyTypeObject*>(generator_type.ptr())) &&
          call_helper("cdynamo._special_calls", "is_trace_made_generator", {value->obj}).ptr() == Py_True)
        throw interp::Unsupported("a torch.Generator made inside the compiled function leaving it (the graph's generator is one for every call)");
      if (graph::holds_symbolic(value->obj.ptr())) {
        rebuild_symbolic(code, value->obj, outputs, depth);
        return;
      }
      code.load_const(value->obj);
      return;
    }
    case ValueKind::List:
      if (value->obj && PyType_Check(value->obj.ptr())) {
        // A slice of an nn.Sequential or nn.ModuleList: module_slice(cls, names, [children]).
        static Ref& module_slice = *new Ref(import_attr("cdynamo._trace_support", "module_slice"));  // never freed: outlives the interpreter
        Ref names = check(PyTuple_New(static_cast<Py_ssize_t>(value->items.size())));
        for (size_t i = 0; i < value->items.size(); ++i) {
          const auto& source = value->items[i]->source;
          std::string name = source && source->kind == interp::Source::Kind::Attr ? source->name : std::to_string(i);
          PyTuple_SET_ITEM(names.ptr(), static_cast<Py_ssize_t>(i), check(PyUnicode_FromString(name.c_str())).release());
        }
        code.emit(PUSH_NULL);
        code.load_const(module_slice);
        code.load_const(value->obj);
        code.load_const(names);
        for (size_t i = 0; i < value->items.size(); ++i) rebuild(code, value->items[i], outputs, depth + 4 + static_cast<int>(i));
        code.emit(BUILD_LIST, static_cast<int>(value->items.size()));
        code.call(3);
        return;
      }
      [[fallthrough]];
    case ValueKind::Tuple: {
      interp::refresh_view(*value);  // a dict view leaves the trace as its dict is at the end
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
      if (value->dict_type) {  // OrderedDict({items}), defaultdict(factory, {items})
        code.emit(PUSH_NULL);
        code.load_const(value->dict_type);
        depth += 2;
        if (value->default_factory) rebuild(code, value->default_factory, outputs, depth++);
      }
      for (size_t i = 0; i < value->items.size(); ++i) {
        if (ValuePtr traced = interp::traced_key_value(value->keys[i].ptr()))  // a tensor or object key
          rebuild(code, traced, outputs, depth + 2 * static_cast<int>(i));
        else
          code.load_const(value->keys[i]);
        rebuild(code, value->items[i], outputs, depth + 2 * static_cast<int>(i) + 1);
      }
      code.emit(BUILD_MAP, static_cast<int>(value->items.size()));
      if (value->dict_type) code.call(value->default_factory ? 2 : 1);
      return;
    }
    case ValueKind::Set: {
      if (!interp::traced_keys_of(*value).empty()) {  // holding tensors or objects: built item by item
        std::vector<Ref> members = interp::held_keys(*value);
        for (size_t i = 0; i < members.size(); ++i) {
          if (ValuePtr traced = interp::traced_key_value(members[i].ptr()))
            rebuild(code, traced, outputs, depth + static_cast<int>(i));
          else
            code.load_const(members[i]);
        }
        code.emit(BUILD_SET, static_cast<int>(members.size()));
        return;
      }
      // set(frozenset(...)): a new set per run, as the traced code makes one.
      code.emit(PUSH_NULL);
      code.load_const(Ref::borrow(reinterpret_cast<PyObject*>(&PySet_Type)));
      code.load_const(check(PyFrozenSet_New(value->obj.ptr())));
      code.call(1);
      return;
    }
    case ValueKind::GradModeExit: {
      // The __exit__ of a no_grad/enable_grad block the break cuts: restores the mode from before it.
      static Ref& restorers = *new Ref(import_attr("cdynamo._global_state", "RESTORE_GRAD_MODE"));  // never freed: outlives the interpreter
      code.load_const(Ref::borrow(PyTuple_GET_ITEM(restorers.ptr(), value->restores_enabled ? 1 : 0)));
      return;
    }
    case ValueKind::StateExit:
      // The __exit__ of a torch.autocast or inference_mode block the break cuts: its restorer, made at trace time.
      code.load_const(value->obj);
      return;
    case ValueKind::Iterator: {
      // A loop's iterator at a graph break, as the tuple of the items it has not produced yet
      // (the trace knew them all when the loop began): the resume function's prologue makes it
      // an iterator again (resume_code).
      std::vector<ValuePtr> pending = interp::iterator_pending(*value);
      for (size_t i = 0; i < pending.size(); ++i) rebuild(code, pending[i], outputs, depth + static_cast<int>(i));
      code.emit(BUILD_TUPLE, static_cast<int>(pending.size()));
      return;
    }
    case ValueKind::Function:  // a def or lambda the trace made: made again by the object table
      if (holds_traced_default(value->obj))
        throw interp::Unsupported("returning a function whose default arguments are values the compiled graph computes");
      if (load_from_table(code, value, depth)) return;
      throw interp::Unsupported(std::string("returning a ") + value->describe() + " from a compiled function");
    case ValueKind::NewObject:
      if (interp::is_traced_array(value)) {
        // A NumPy array made from a traced tensor: the real one, tensor.numpy() (memory shared
        // with the tensor as eager's is; two references to it become two ndarray objects).
        static Ref& to_ndarray = *new Ref(import_attr("cdynamo._special_calls", "traced_array_to_ndarray"));  // never freed: outlives the interpreter
        code.emit(PUSH_NULL);
        code.load_const(to_ndarray);
        rebuild(code, interp::traced_array_tensor(value), outputs, depth + 2);
        code.call(1);
        return;
      }
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
      if (value->kind == ValueKind::NNModule && value->obj && value->module_path.starts_with(interp::kMadeWithState)) {
        code.load_const(value->obj);  // made for the one call this code serves
        return;
      }
      [[fallthrough]];
    default:
      throw interp::Unsupported(std::string("returning a ") + value->describe() + " from a compiled function");
  }
}

}  // namespace


bool has_items(const interp::Value& v) {
  switch (v.kind) {
    case ValueKind::Tuple:
    case ValueKind::List:
    case ValueKind::Dict:
    case ValueKind::Set:  // its traced keys
    case ValueKind::NewObject:
    case ValueKind::Iterator:
    case ValueKind::TensorMethod:
    case ValueKind::UserMethod:
    case ValueKind::Function:  // its cells
    case ValueKind::Cell: return true;
    default: return false;
  }
}

// Iterative (an explicit stack, in preorder) and each value with items once: data nested
// thousands deep or containing itself is walked without recursion and without end.
void visit_values(const ValuePtr& value, const std::function<void(const ValuePtr&)>& fn) {
  std::unordered_set<const interp::Value*> seen;
  std::deque<ValuePtr> keys;  // the traced keys of sets and dicts walked (pending points into it)
  std::vector<const ValuePtr*> pending = {&value};
  while (!pending.empty()) {
    const ValuePtr& v = *pending.back();
    pending.pop_back();
    if (!v) continue;
    bool walk_items = has_items(*v);
    if (walk_items && !seen.insert(v.get()).second) continue;
    interp::refresh_view(*v);
    fn(v);
    if (!walk_items) continue;
    for (auto item = v->items.rbegin(); item != v->items.rend(); ++item) pending.push_back(&*item);
    for (ValuePtr& key : interp::traced_keys_of(*v)) pending.push_back(&keys.emplace_back(std::move(key)));
  }
}

int emit_object_table(CodeBuilder& code, const std::vector<ValuePtr>& roots, const std::vector<ValuePtr>& outputs,
                      int depth) {
  // The table: every object the trace made, and every list, dict or set it made that is
  // referenced from two places (rebuilt separately they would become two objects).
  std::vector<ValuePtr> entries;
  std::vector<std::pair<const interp::Value*, int>> references;
  std::unordered_set<const interp::Value*> walked;  // containers from the frame, walked once
  // An explicit stack in preorder: containers nested thousands deep need no C recursion, and
  // every container is entered once, so one that contains itself ends the walk there.
  std::vector<ValuePtr> pending(roots.rbegin(), roots.rend());
  auto push_items = [&](const ValuePtr& v) {
    for (auto item = v->items.rbegin(); item != v->items.rend(); ++item) pending.push_back(*item);
    for (ValuePtr& key : interp::traced_keys_of(*v)) pending.push_back(std::move(key));
  };
  while (!pending.empty()) {
    ValuePtr v = std::move(pending.back());
    pending.pop_back();
    if (!v) continue;
    interp::refresh_view(*v);
    bool container = (v->kind == ValueKind::List || v->kind == ValueKind::Dict || v->kind == ValueKind::Set) && !v->source;
    if (interp::is_traced_array(v)) continue;  // rebuilt in place, from its tensor (a graph output)
    const bool made_function = v->kind == ValueKind::Function && !v->source;
    if (container || v->kind == ValueKind::NewObject || made_function) {
      auto seen = std::find_if(references.begin(), references.end(), [&](const auto& r) { return r.first == v.get(); });
      if (seen != references.end()) {
        ++seen->second;
        continue;  // its contents were walked already
      }
      references.emplace_back(v.get(), 1);
      entries.push_back(v);
    } else if (v->source && !walked.insert(v.get()).second) {
      continue;
    }
    if (v->kind == ValueKind::NewObject) {
      // Its __dict__ and items are its own state, not objects the program holds.
      for (auto state = v->items.rbegin(); state != v->items.rend(); ++state)
        if (*state) push_items(*state);
      continue;
    }
    if (v->is_sequence() || v->kind == ValueKind::Dict || v->kind == ValueKind::Set || v->kind == ValueKind::TensorMethod ||
        v->kind == ValueKind::UserMethod || v->kind == ValueKind::Iterator || v->kind == ValueKind::Function ||
        v->kind == ValueKind::Cell)
      push_items(v);
    if (made_function && v->attributes) pending.push_back(v->attributes);
  }
  std::vector<ValuePtr> objects;
  for (const auto& entry : entries) {
    int count = 0;
    for (const auto& [seen, n] : references)
      if (seen == entry.get()) count = n;
    if (entry->kind == ValueKind::NewObject || entry->kind == ValueKind::Function || count > 1) objects.push_back(entry);
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
  std::vector<const interp::Value*> cells;  // numbered across the table: closures share them
  for (const auto& object : objects) {
    if (object->kind == ValueKind::Function) {
      Ref numbers = check(PyTuple_New(static_cast<Py_ssize_t>(object->items.size())));
      for (size_t i = 0; i < object->items.size(); ++i) {
        const interp::Value* cell = object->items[i].get();
        auto found = std::find(cells.begin(), cells.end(), cell);
        if (found == cells.end()) found = cells.insert(cells.end(), cell);
        PyTuple_SET_ITEM(numbers.ptr(), i, check(PyLong_FromSsize_t(found - cells.begin())).release());
      }
      code.load_const(check(PyTuple_Pack(2, object->obj.ptr(), numbers.ptr())));
      continue;
    }
    // A stand-in leaves as an object of the class it stands for (fill_object gives it the state).
    PyObject* stands_for = object->kind == ValueKind::NewObject
                               ? PyDict_GetItemString(reinterpret_cast<PyTypeObject*>(object->cls.ptr())->tp_dict,
                                                      "_cdynamo_stands_for")  // borrowed
                               : nullptr;
    PyObject* type = stands_for                            ? stands_for
                     : object->kind == ValueKind::NewObject ? object->cls.ptr()
                     : object->kind == ValueKind::List   ? reinterpret_cast<PyObject*>(&PyList_Type)
                     : object->kind == ValueKind::Dict   ? (object->dict_type ? object->dict_type.ptr()
                                                                             : reinterpret_cast<PyObject*>(&PyDict_Type))
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
    if (object->kind == ValueKind::Function) {
      // Its cells' contents (EMPTY_CELL where nothing was stored), then its __dict__ or None.
      const Ref& empty_cell = interp::markers::marker(interp::markers::Marker::EmptyCell);
      for (size_t i = 0; i < object->items.size(); ++i) {
        const ValuePtr& cell = object->items[i];
        if (cell && cell->kind == ValueKind::Cell && !cell->items.empty() && cell->items[0])
          rebuild(code, cell->items[0], outputs, depth + 3 + static_cast<int>(i));
        else
          code.load_const(empty_cell);
      }
      code.emit(BUILD_TUPLE, static_cast<int>(object->items.size()));
      if (object->attributes) rebuild(code, object->attributes, outputs, depth + 4);
      else code.load_const(Ref::borrow(Py_None));
    } else if (object->kind == ValueKind::NewObject) {
      rebuild(code, object->items[0], outputs, depth + 3);
      if (object->items.size() > 1 && object->items[1]) rebuild(code, object->items[1], outputs, depth + 4);
      else code.load_const(Ref::borrow(Py_None));
    } else {
      rebuild_value(code, object, outputs, depth + 3, false);  // its contents, as a new container
      if (object->default_factory) {  // the table's defaultdict gets the factory too
        rebuild(code, object->default_factory, outputs, depth + 4);
      } else {
        code.load_const(Ref::borrow(Py_None));
      }
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
    if (effect.name.empty() || effect.name == interp::kDeferredCall) rebuild_value(code, effect.value, outputs, depth + static_cast<int>(i), false);
    else rebuild(code, effect.value, outputs, depth + static_cast<int>(i));
  }
  code.emit(BUILD_TUPLE, static_cast<int>(effects.size()));
  static Ref& call_deferred = *new Ref(import_attr("cdynamo._special_calls", "call_deferred"));  // never freed: outlives the interpreter
  for (size_t i = 0; i < effects.size(); ++i) {
    const auto& effect = effects[i];
    Ref index = check(PyLong_FromSize_t(i));
    // helper([the effect's target,] values[i]), its result dropped.
    auto call_with_value = [&](const Ref& helper, const interp::Source* target) {
      code.emit(PUSH_NULL);
      code.load_const(helper);
      if (target) code.load_source(*target);
      code.emit(COPY, target ? 4 : 3);
      code.load_const(index);
      code.emit(BINARY_SUBSCR);
      code.call(target ? 2 : 1);
      code.emit(POP_TOP);
    };
    if (effect.name == interp::kDeferredCall) {  // print(...): call_deferred((fn, args, kwargs))
      call_with_value(call_deferred, nullptr);
      continue;
    }
    if (effect.name.empty()) {  // a list or dict from the frame gets its new contents
      call_with_value(replace, effect.object->source.get());
      continue;
    }
    if (interp::is_deleted_attribute(effect.value)) {  // del obj.name
      rebuild(code, effect.object, outputs, depth + 1);
      code.emit(DELETE_ATTR, code.name_index(effect.name));
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
