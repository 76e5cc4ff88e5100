// _testing.run_ir: lowers (and optionally schedules) an aten graph, then runs it on the
// reference evaluator with real input tensors, so tests can compare every lowering with eager.
// Assumes small tensors; extern steps call the aten op through torch.ops with rebuilt tensors.
#include <cmath>
#include "backend/ir/ir_eval.h"
#include "backend/lower/lower.h"
#include "backend/sched/schedule.h"
#include "common/error.h"
#include "common/py_import.h"
#include "module.h"

namespace cdynamo {

// bindings.cpp: the options dict shared by the stage entry points.
void read_options(PyObject* options, lower::LowerOptions& lower_options, sched::ScheduleOptions& schedule_options);

namespace {

using ir::EvalNumber;

Ref call_method(Handle obj, const char* name, std::initializer_list<Handle> args = {}) {
  Ref method = check(PyObject_GetAttrString(obj.ptr(), name));
  Ref tuple = check(PyTuple_New(static_cast<Py_ssize_t>(args.size())));
  Py_ssize_t k = 0;
  for (Handle a : args) PyTuple_SET_ITEM(tuple.ptr(), k++, Ref::borrow(a).release());
  return check(PyObject_Call(method.ptr(), tuple.ptr(), nullptr));
}

Ref torch_dtype(ir::DType dtype) {
  std::string name = ir::dtype_torch_name(dtype);  // "torch.float32"
  return import_attr("torch", name.substr(6).c_str());
}

// The logical (row-major) values of a tensor.
std::vector<EvalNumber> numbers_of(Handle tensor, ir::DType dtype) {
  Ref flat = call_method(call_method(call_method(tensor, "detach"), "contiguous"), "reshape", {check(PyLong_FromLong(-1)).ptr()});
  bool floating = ir::is_floating(dtype);
  Ref converted = call_method(flat, floating ? "double" : "long");
  Ref list = call_method(converted, "tolist");
  std::vector<EvalNumber> out;
  for (Py_ssize_t k = 0; k < PyList_GET_SIZE(list.ptr()); ++k) {
    PyObject* item = PyList_GET_ITEM(list.ptr(), k);
    EvalNumber n;
    if (floating) n.f = PyFloat_AsDouble(item);
    else n.i = PyLong_AsLongLong(item);
    out.push_back(n);
  }
  if (PyErr_Occurred()) throw PythonError();
  return out;
}

Ref tensor_of(const std::vector<EvalNumber>& values, const ir::Buffer& b) {
  bool floating = ir::is_floating(b.dtype);
  Ref list = check(PyList_New(static_cast<Py_ssize_t>(values.size())));
  for (size_t k = 0; k < values.size(); ++k)
    PyList_SET_ITEM(list.ptr(), k, floating ? PyFloat_FromDouble(values[k].f) : PyLong_FromLongLong(values[k].i));
  Ref make = import_attr("torch", "tensor");
  Ref kwargs = check(PyDict_New());
  check_status(PyDict_SetItemString(kwargs.ptr(), "dtype", torch_dtype(floating ? ir::DType::Float64 : ir::DType::Int64).ptr()));
  Ref args = check(PyTuple_Pack(1, list.ptr()));
  Ref flat = check(PyObject_Call(make.ptr(), args.ptr(), kwargs.ptr()));
  Ref shape = check(PyList_New(0));
  std::map<std::string, int64_t> none;
  for (const ir::Expr& s : b.sizes) check_status(PyList_Append(shape.ptr(), check(PyLong_FromLongLong(s.evaluate(none))).ptr()));
  Ref shaped = call_method(flat, "reshape", {shape.ptr()});
  return call_method(shaped, "to", {torch_dtype(b.dtype).ptr()});
}

// A constant argument: Python syntax evaluated with torch in scope, else the text itself.
Ref constant_of(const std::string& text) {
  Ref globals = check(PyDict_New());
  check_status(PyDict_SetItemString(globals.ptr(), "torch", check(PyImport_ImportModule("torch")).ptr()));
  check_status(PyDict_SetItemString(globals.ptr(), "inf", check(PyFloat_FromDouble(INFINITY)).ptr()));
  check_status(PyDict_SetItemString(globals.ptr(), "nan", check(PyFloat_FromDouble(NAN)).ptr()));
  PyObject* value = PyRun_String(text.c_str(), Py_eval_input, globals.ptr(), globals.ptr());
  if (value) return Ref::steal(value);
  PyErr_Clear();
  return check(PyUnicode_FromString(text.c_str()));
}

void call_extern(const ir::Extern& call, ir::Evaluator& ev) {
  const ir::Program& p = ev.program();
  Ref args = check(PyList_New(0));
  Ref kwargs = check(PyDict_New());
  for (const ir::ExternArg& arg : call.args) {
    Ref value;
    if (auto* name = std::get_if<std::string>(&arg.tensor)) {
      value = tensor_of(ev.read_logical(*name), p.buffer(*name));
    } else if (auto* names = std::get_if<std::vector<std::string>>(&arg.tensor)) {
      value = check(PyList_New(0));
      for (const std::string& n : *names)
        check_status(PyList_Append(value.ptr(), n.empty() ? Py_None : tensor_of(ev.read_logical(n), p.buffer(n)).ptr()));
    } else {
      value = constant_of(arg.constant);
    }
    if (arg.name.empty()) check_status(PyList_Append(args.ptr(), value.ptr()));
    else check_status(PyDict_SetItemString(kwargs.ptr(), arg.name.c_str(), value.ptr()));
  }
  std::string op = call.op.substr(call.op.find("::") + 2);
  std::string ns = call.op.substr(0, call.op.find("::"));
  Ref packet = check(PyObject_GetAttrString(check(PyObject_GetAttrString(import_attr("torch", "ops").ptr(), ns.c_str())).ptr(), op.c_str()));
  Ref overload = check(PyObject_GetAttrString(packet.ptr(), call.overload.c_str()));
  Ref arg_tuple = check(PyList_AsTuple(args.ptr()));
  Ref result = check(PyObject_Call(overload.ptr(), arg_tuple.ptr(), kwargs.ptr()));
  std::vector<Ref> items;
  if (PyTuple_Check(result.ptr()) || PyList_Check(result.ptr())) {
    Ref seq = check(PySequence_Tuple(result.ptr()));
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(seq.ptr()); ++k) items.push_back(Ref::borrow(PyTuple_GET_ITEM(seq.ptr(), k)));
  } else {
    items.push_back(result);
  }
  for (size_t k = 0; k < call.outputs.size() && k < items.size(); ++k) {
    if (call.outputs[k].empty()) continue;
    const ir::Buffer& b = p.buffer(call.outputs[k]);
    ev.write_logical(b.name, numbers_of(items[k], b.dtype));
  }
}

// Ownership contract: borrows its arguments; returns a new (outputs, inputs_after) tuple of
// lists, or NULL with an exception set.
PyObject* testing_run_ir(PyObject*, PyObject* args) {
  CDYNAMO_BOUNDARY_BEGIN
  PyObject *graph_module = nullptr, *inputs = nullptr, *options = nullptr;
  int fused = 1;
  if (!PyArg_ParseTuple(args, "OO|pO", &graph_module, &inputs, &fused, &options)) throw PythonError();
  lower::LowerOptions lower_options;
  sched::ScheduleOptions schedule_options;
  read_options(options, lower_options, schedule_options);
  lower::LoweredGraph graph = lower::lower_graph(graph_module, lower_options);
  ir::Program unfused = sched::unfused_program(graph);
  ir::verify(unfused);
  std::vector<std::pair<std::string, Ref>> constants = graph.constants;
  ir::Program program = fused ? sched::schedule(std::move(graph), nullptr, schedule_options) : std::move(unfused);
  ir::verify(program);
  ir::Evaluator ev(program);
  Ref input_seq = check(PySequence_Tuple(inputs));
  if (PyTuple_GET_SIZE(input_seq.ptr()) != static_cast<Py_ssize_t>(program.inputs.size()))
    throw UserError("run_ir: wrong number of inputs", PyExc_TypeError);
  for (size_t k = 0; k < program.inputs.size(); ++k) {
    const ir::Buffer& b = program.buffer(program.inputs[k]);
    ev.write_logical(b.name, numbers_of(PyTuple_GET_ITEM(input_seq.ptr(), k), b.dtype));
  }
  for (const auto& [name, tensor] : constants) {
    bool used = false;
    for (const ir::Buffer& b : program.buffers) used = used || b.name == name;
    if (used) ev.write_logical(name, numbers_of(tensor, program.buffer(name).dtype));
  }
  ev.run(call_extern);
  Ref outputs = check(PyList_New(0)), after = check(PyList_New(0));
  for (const std::string& name : program.outputs)
    check_status(PyList_Append(outputs.ptr(), tensor_of(ev.read_logical(name), program.buffer(name)).ptr()));
  for (const std::string& name : program.inputs)
    check_status(PyList_Append(after.ptr(), tensor_of(ev.read_logical(name), program.buffer(name)).ptr()));
  return PyTuple_Pack(2, outputs.ptr(), after.ptr());
  CDYNAMO_BOUNDARY_END(nullptr)
}

PyMethodDef eval_methods[] = {
    {"run_ir", testing_run_ir, METH_VARARGS,
     "run_ir(aten_gm, inputs, fused=True, options=None) -> (outputs, inputs_after): the lowered (and scheduled) "
     "program run by the reference IR evaluator"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

void init_lower_eval(PyObject* testing) { add_functions(testing, eval_methods); }

}  // namespace cdynamo
