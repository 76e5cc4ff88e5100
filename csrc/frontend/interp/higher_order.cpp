// Functions of torch that take a Python function and run it in their own way (torch.vmap): one
// graph node calling them, the function a real one the node holds. Assumes _trace_support.vmap_node.
#include "common/error.h"
#include "common/py_import.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {

// The real function for a function value: a constant callable, or a def/lambda made by the trace
// whose closure holds only constants (the node calls it at run time, outside any trace).
Ref Tracer::vmapped_function(const ValuePtr& func) const {
  if (func->kind == ValueKind::Constant) return func->obj;
  if (func->kind != ValueKind::Function) unsupported("torch.vmap of a " + func->describe() + " (vmap a function)");
  if (func->items.empty()) return func->obj;
  Ref cells = check(PyTuple_New(static_cast<Py_ssize_t>(func->items.size())));
  for (size_t i = 0; i < func->items.size(); ++i) {
    const ValuePtr& cell = func->items[i];
    ValuePtr contents = cell && cell->kind == ValueKind::Cell && !cell->items.empty() ? cell->items[0] : nullptr;
    if (!contents || !contents->is_fully_constant())
      unsupported("torch.vmap of a function that closes over a " + (contents ? contents->describe() : std::string("cell")) +
                  " (pass it as an argument of the vmapped function)");
    PyTuple_SET_ITEM(cells.ptr(), i, check(PyCell_New(contents->as_python_constant().ptr())).release());
  }
  PyObject* made = func->obj.ptr();
  Ref function = check(PyFunction_New(PyFunction_GetCode(made), PyFunction_GetGlobals(made)));
  if (PyObject* defaults = PyFunction_GetDefaults(made)) check_status(PyFunction_SetDefaults(function.ptr(), defaults));
  if (PyObject* kwdefaults = PyFunction_GetKwDefaults(made)) check_status(PyFunction_SetKwDefaults(function.ptr(), kwdefaults));
  check_status(PyFunction_SetClosure(function.ptr(), cells.ptr()));
  return function;
}

ValuePtr Tracer::call_vmapped(std::vector<ValuePtr> args, graph::KwArgs kwargs) {
  if (args.size() < 5) throw InternalError("call_vmapped without vmap's five arguments");
  for (size_t i = 1; i < 5; ++i)
    if (!args[i]->is_fully_constant()) unsupported("torch.vmap with a traced " + args[i]->describe() + " among in_dims, out_dims, randomness and chunk_size");
  Ref func = vmapped_function(args[0]);
  Ref answer = call_helper("cdynamo._special_calls", "vmap_node",
                           {func, args[1]->as_python_constant(), args[2]->as_python_constant(),
                            args[3]->as_python_constant(), args[4]->as_python_constant()});
  Handle node = PyTuple_GET_ITEM(answer.ptr(), 0);
  if (node.ptr() == Py_None) unsupported(to_std_string(Handle(PyTuple_GET_ITEM(answer.ptr(), 1))));
  keep_alive_.push_back(Ref::borrow(node.ptr()));
  std::vector<ValuePtr> operands(args.begin() + 5, args.end());
  return graph_.call("call_function", Ref::borrow(node.ptr()), operands, kwargs, "torch.vmap()");
}

}  // namespace cdynamo::interp
