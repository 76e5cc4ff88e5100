// torch.vmap, torch.func's transforms (one node running them on a real function the node holds)
// and torch.autograd.grad of the graph's own tensors as nodes. Assumes _special_calls.transform_node.
#include "common/error.h"
#include "common/py_import.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {

// The real function for a function value: a constant callable, or a def/lambda made by the trace
// whose closure holds only constants, such functions and tensors (the node calls it at run time,
// outside any trace). A tensor is appended to `captured` (the node's extra arguments) and held
// by a _special_calls.ClosedOverTensor that the node replaces with it at each call.
Ref Tracer::transformed_function(const ValuePtr& func, const std::string& what, std::vector<ValuePtr>& captured) {
  if (func->kind == ValueKind::Constant) return func->obj;
  // A module, or a module's method (vmap(model), grad(self.energy)): run holding the node's
  // tensors (closed_over_object). A module the trace made holds none: it is called as it is.
  if ((func->kind == ValueKind::NNModule && func->source) || func->kind == ValueKind::UserMethod)
    return closed_over_object(func, what, captured);
  if (func->kind == ValueKind::NNModule) return func->obj;
  if (func->kind != ValueKind::Function) unsupported(what + " of a " + func->describe() + " (transform a function)");
  if (func->items.empty()) return func->obj;
  Ref cells = check(PyTuple_New(static_cast<Py_ssize_t>(func->items.size())));
  for (size_t i = 0; i < func->items.size(); ++i) {
    const ValuePtr& cell = func->items[i];
    ValuePtr contents = cell && cell->kind == ValueKind::Cell && !cell->items.empty() ? cell->items[0] : nullptr;
    if (!contents)
      unsupported(what + " of a function that closes over an empty cell (pass it as an argument of the transformed function)");
    PyTuple_SET_ITEM(cells.ptr(), i, check(PyCell_New(closed_over_object(contents, what, captured).ptr())).release());
  }
  PyObject* made = func->obj.ptr();
  Ref function = check(PyFunction_New(PyFunction_GetCode(made), PyFunction_GetGlobals(made)));
  if (PyObject* defaults = PyFunction_GetDefaults(made)) check_status(PyFunction_SetDefaults(function.ptr(), defaults));
  if (PyObject* kwdefaults = PyFunction_GetKwDefaults(made)) check_status(PyFunction_SetKwDefaults(function.ptr(), kwdefaults));
  check_status(PyFunction_SetClosure(function.ptr(), cells.ptr()));
  return function;
}

// What a transformed function's cell holds at run time: a constant, a function the trace made
// (torch.vmap(torch.vmap(f)): the inner stand-in's call closes over f), or a tuple of those
// (transformers' and_masks(*mask_functions) closes over the tuple of functions it combines; a
// list is not copied: the function could change the trace's list).
Ref Tracer::closed_over_object(const ValuePtr& contents, const std::string& what, std::vector<ValuePtr>& captured) {
  if (contents->kind == ValueKind::Function) return transformed_function(contents, what, captured);
  if (contents->is_tensor()) {
    captured.push_back(contents);
    return call_helper("cdynamo._special_calls", "ClosedOverTensor", {steal(PyLong_FromSize_t(captured.size() - 1))});
  }
  if (contents->kind == ValueKind::NNModule && contents->source) {
    // A module (a model the function runs, self): its parameters and buffers are the node's
    // arguments, the graph's inputs, which the module holds while the node runs the function.
    Ref names = call_helper("cdynamo._special_calls", "module_tensor_names", {contents->obj});
    const size_t start = captured.size();
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(names.ptr()); ++k) {
      ValuePtr tensor = contents;
      std::string path = to_std_string(Handle(PyTuple_GET_ITEM(names.ptr(), k)));
      for (size_t begin = 0, dot; begin <= path.size(); begin = dot + 1) {
        dot = path.find('.', begin);
        if (dot == std::string::npos) dot = path.size();
        tensor = load_attr(tensor, path.substr(begin, dot - begin));
      }
      captured.push_back(tensor);
    }
    return call_helper("cdynamo._special_calls", "ClosedOverModule", {contents->obj, names, steal(PyLong_FromSize_t(start))});
  }
  if (contents->kind == ValueKind::UserMethod && contents->items.size() == 1 && contents->items[0]->kind == ValueKind::NNModule &&
      contents->obj && PyFunction_Check(contents->obj.ptr())) {
    // A module's method (vmap(grad(self.energy))): the function bound to the module as above.
    Ref module = closed_over_object(contents->items[0], what, captured);
    return call_helper("cdynamo._special_calls", "ClosedOverMethod", {contents->obj, module});
  }
  if (contents->is_fully_constant()) return contents->as_python_constant();
  if (contents->kind == ValueKind::Tuple) {
    Ref tuple = check(PyTuple_New(static_cast<Py_ssize_t>(contents->items.size())));
    for (size_t i = 0; i < contents->items.size(); ++i)
      PyTuple_SET_ITEM(tuple.ptr(), i, closed_over_object(contents->items[i], what, captured).release());
    return tuple;
  }
  unsupported(what + " of a function that closes over a " + contents->describe() +
              " (pass it as an argument of the transformed function)");
}

ValuePtr Tracer::call_transformed(std::vector<ValuePtr> args, graph::KwArgs kwargs) {
  if (args.size() < 3) throw InternalError("call_transformed without its transform, function and options");
  const std::string name = callable_name(args[0]->obj) + "()";
  if (!args[2]->is_fully_constant()) unsupported(name + " with options the trace computes");
  std::vector<ValuePtr> captured;
  Ref func = transformed_function(args[1], name, captured);
  // Modules the function reads as globals (jacrev(lambda t: model(t)) in a script): held by the
  // node like closed-over ones, read here through the globals dict (guarded there).
  Ref held = check(PyList_New(0));
  {
    Ref reads = call_helper("cdynamo._special_calls", "global_modules_read", {func});
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(reads.ptr()); ++k) {
      PyObject* read = PyTuple_GET_ITEM(reads.ptr(), k);  // (globals, name, module), borrowed
      Ref globals = Ref::borrow(PyTuple_GET_ITEM(read, 0));
      Ref global_name = Ref::borrow(PyTuple_GET_ITEM(read, 1));
      SourcePtr source = Source::dict_item(Source::fixed(globals, "globals of " + name), global_name);
      ValuePtr module = wrap(Handle(PyTuple_GET_ITEM(read, 2)), source);
      Ref closed = closed_over_object(module, name, captured);
      check_status(PyList_Append(held.ptr(), Ref(check(PyTuple_Pack(2, global_name.ptr(), closed.ptr()))).ptr()));
    }
  }
  Ref answer = call_helper("cdynamo._special_calls", "transform_node",
                           {args[0]->obj, func, args[2]->as_python_constant(), steal(PyLong_FromSize_t(captured.size())),
                            Ref(check(PyList_AsTuple(held.ptr())))});
  Handle node = PyTuple_GET_ITEM(answer.ptr(), 0);
  if (node.ptr() == Py_None) unsupported(to_std_string(Handle(PyTuple_GET_ITEM(answer.ptr(), 1))));
  keep_alive_.push_back(Ref::borrow(node.ptr()));
  std::vector<ValuePtr> operands(args.begin() + 3, args.end());
  operands.insert(operands.end(), captured.begin(), captured.end());
  return graph_.call("call_function", Ref::borrow(node.ptr()), operands, kwargs, name);
}

// torch.autograd.grad(outputs, inputs, ...) of outputs the graph computes (MAML's inner step,
// a gradient penalty): a node, which runs autograd on the graph's own history as eager does
// (AOTAutograd traces through it). Outputs computed before the graph carry a history the
// graph's inputs do not: refused (policy "autograd_grad").
ValuePtr Tracer::autograd_grad_in_graph(Handle fn, const std::vector<ValuePtr>& args, const graph::KwArgs& kwargs) {
  ValuePtr outputs = !args.empty() ? args[0] : nullptr;
  for (const auto& [name, value] : kwargs)
    if (name == "outputs") outputs = value;
  if (!outputs) raise(PyExc_TypeError, "grad() missing required argument 'outputs'");
  std::vector<ValuePtr> differentiated = outputs->is_tensor() ? std::vector<ValuePtr>{outputs}
                                         : outputs->is_sequence() ? outputs->items : std::vector<ValuePtr>{};
  if (differentiated.empty()) unsupported("torch.autograd.grad() of a " + outputs->describe());
  for (const ValuePtr& output : differentiated)
    if (!output->is_tensor() || output->source || !graph_.computed_tensor(output->fake))
      unsupported("torch.autograd.grad() of a tensor computed before the compiled function (its autograd history is not the graph's)");
  return graph_.call("call_function", fn, args, kwargs, "torch.autograd.grad()");
}

}  // namespace cdynamo::interp
