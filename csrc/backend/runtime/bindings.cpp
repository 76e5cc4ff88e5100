// Stage-test surface of the C++ back end in cdynamo._C._testing: programs from plain dicts, the
// generated C++, compiling and running them, cache counters. Assumes registration from PyInit__C.
#include "backend/cache/kernel_cache.h"
#include "backend/codegen/cpp/prelude.h"
#include "backend/runtime/compiled_program.h"
#include "backend/runtime/cuda_driver.h"
#include "backend/ir/expr_parser.h"
#include "backend/runtime/gil.h"
#include "backend/runtime/program_dict.h"
#include "backend/runtime/triton_launch.h"
#include "common/error.h"
#include "common/py_import.h"
#include "module.h"

namespace cdynamo {
namespace {

using runtime::program_from_dict;

void expect_args(Py_ssize_t nargs, Py_ssize_t lo, Py_ssize_t hi, const char* name) {
  if (nargs < lo || nargs > hi) throw UserError(std::string(name) + ": wrong number of arguments", PyExc_TypeError);
}

std::vector<std::pair<std::string, Ref>> constants_from(Handle dict) {
  std::vector<std::pair<std::string, Ref>> out;
  if (!dict || dict.ptr() == Py_None) return out;
  if (!PyDict_Check(dict.ptr())) throw UserError("constants must be a dict {buffer name: tensor}", PyExc_TypeError);
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (PyDict_Next(dict.ptr(), &pos, &key, &value)) out.emplace_back(to_std_string(key), Ref::borrow(value));
  return out;
}

Ref string_list(const std::vector<std::string>& v) {
  Ref list = check(PyList_New(static_cast<Py_ssize_t>(v.size())));
  for (size_t k = 0; k < v.size(); ++k) PyList_SET_ITEM(list.ptr(), static_cast<Py_ssize_t>(k), check(PyUnicode_FromString(v[k].c_str())).release());
  return list;
}

// program_from_dict(d) -> str: the IR text of the described program.
// Ownership contract: args borrowed; returns a new reference or NULL with an error.
PyObject* py_program_from_dict(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  CDYNAMO_BOUNDARY_BEGIN
  expect_args(nargs, 1, 1, "program_from_dict");
  return PyUnicode_FromString(ir::to_string(program_from_dict(args[0])).c_str());
  CDYNAMO_BOUNDARY_END(nullptr)
}

// generate_cpp(d) -> {kernel name: C++ source}.
// Ownership contract: args borrowed; returns a new reference or NULL with an error.
PyObject* py_generate_cpp(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  CDYNAMO_BOUNDARY_BEGIN
  expect_args(nargs, 1, 1, "generate_cpp");
  Ref out = check(PyDict_New());
  for (auto& [name, source] : runtime::generate_sources(program_from_dict(args[0])))
    check_status(PyDict_SetItemString(out.ptr(), name.c_str(), check(PyUnicode_FromString(source.c_str())).ptr()));
  return out.release();
  CDYNAMO_BOUNDARY_END(nullptr)
}

// generate_triton(d) -> {kernel name: Triton module source}.
// Ownership contract: args borrowed; returns a new reference or NULL with an error.
PyObject* py_generate_triton(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  CDYNAMO_BOUNDARY_BEGIN
  expect_args(nargs, 1, 1, "generate_triton");
  Ref out = check(PyDict_New());
  for (auto& [name, source] : runtime::generate_sources(program_from_dict(args[0]), "triton"))
    check_status(PyDict_SetItemString(out.ptr(), name.c_str(), check(PyUnicode_FromString(source.c_str())).ptr()));
  return out.release();
  CDYNAMO_BOUNDARY_END(nullptr)
}

std::string target_arg(PyObject* const* args, Py_ssize_t nargs, Py_ssize_t at) {
  if (nargs <= at || args[at] == Py_None) return "cpp";
  return to_std_string(Handle(args[at]));
}

// compile_program(d, constants=None, eager_fallback=None, target="cpp") -> callable
// (see compiled_program.h).
// Ownership contract: args borrowed; returns a new reference or NULL with an error.
PyObject* py_compile_program(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  CDYNAMO_BOUNDARY_BEGIN
  expect_args(nargs, 1, 4, "compile_program");
  Handle constants = nargs > 1 ? args[1] : nullptr;
  Handle fallback = nargs > 2 ? args[2] : nullptr;
  return runtime::compile_program(program_from_dict(args[0]), constants_from(constants), fallback, nullptr,
                                  target_arg(args, nargs, 3))
      .release();
  CDYNAMO_BOUNDARY_END(nullptr)
}

// run_program(d, inputs, constants=None, target="cpp") -> tuple of outputs: compile (cached) and
// call once.
// Ownership contract: args borrowed; returns a new reference or NULL with an error.
PyObject* py_run_program(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  CDYNAMO_BOUNDARY_BEGIN
  expect_args(nargs, 2, 4, "run_program");
  Ref fn = runtime::compile_program(program_from_dict(args[0]), constants_from(nargs > 2 ? args[2] : nullptr), nullptr,
                                    nullptr, target_arg(args, nargs, 3));
  Ref inputs = check(PySequence_Tuple(args[1]));
  return check(PyObject_Call(fn.ptr(), inputs.ptr(), nullptr)).release();
  CDYNAMO_BOUNDARY_END(nullptr)
}

// kernel_cache_stats() -> {"compiled": n, "disk_hits": n, "memory_hits": n}.
// Ownership contract: returns a new reference or NULL with an error.
PyObject* py_kernel_cache_stats(PyObject*, PyObject*) {
  CDYNAMO_BOUNDARY_BEGIN
  cache::CacheStats s = cache::cache_stats();
  return Py_BuildValue("{sLsLsL}", "compiled", static_cast<long long>(s.compiled), "disk_hits",
                       static_cast<long long>(s.disk_hits), "memory_hits", static_cast<long long>(s.memory_hits));
  CDYNAMO_BOUNDARY_END(nullptr)
}

// Ownership contract: returns a new reference to None.
PyObject* py_reset_kernel_cache_stats(PyObject*, PyObject*) {
  cache::reset_cache_stats();
  Py_RETURN_NONE;
}

// Ownership contract: returns a new reference to None.
PyObject* py_clear_kernel_memory_cache(PyObject*, PyObject*) {
  cache::clear_memory_cache();
  Py_RETURN_NONE;
}

// cpp_prelude() -> str: the text of cd_prelude.h.
// Ownership contract: returns a new reference or NULL with an error.
PyObject* py_cpp_prelude(PyObject*, PyObject*) {
  return PyUnicode_FromString(codegen::cpp::prelude_source().c_str());
}

// cpp_compile_command() -> (flags, libraries): the compiler argv before the source, and after -o.
// Ownership contract: returns a new reference or NULL with an error.
PyObject* py_cpp_compile_command(PyObject*, PyObject*) {
  CDYNAMO_BOUNDARY_BEGIN
  return Py_BuildValue("(NN)", string_list(cache::compile_flags(runtime::cache_options_from_config())).release(), string_list(cache::link_libraries()).release());
  CDYNAMO_BOUNDARY_END(nullptr)
}

// parse_index(text) -> str: the simplified expression in Python syntax.
// Ownership contract: args borrowed; returns a new reference or NULL with an error.
PyObject* py_parse_index(PyObject*, PyObject* arg) {
  CDYNAMO_BOUNDARY_BEGIN
  if (!PyUnicode_Check(arg)) throw UserError("parse_index takes a str", PyExc_TypeError);
  return PyUnicode_FromString(ir::parse_expr(PyUnicode_AsUTF8(arg)).py_str().c_str());
  CDYNAMO_BOUNDARY_END(nullptr)
}

#define CDYNAMO_FASTCALL(fn) reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fn))

// _triton_time_kernel(result, pointers, scalars, (grid_x, grid_y), stream) -> ms per launch:
// result is a build result dict (cdynamo.inductor.triton_runtime), pointers device addresses
// (ints), scalars [(value, is_int64), ...], stream a CUstream as an int. For max-autotune.
// Ownership contract: args borrowed; returns a new reference or NULL with an error.
PyObject* py_triton_time_kernel(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  CDYNAMO_BOUNDARY_BEGIN
  expect_args(nargs, 5, 5, "_triton_time_kernel");
  std::vector<uint64_t> pointers;
  Ref pointer_list = check(PySequence_Fast(args[1], "pointers must be a list of ints"));
  for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(pointer_list.ptr()); ++k) {
    unsigned long long p = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(pointer_list.ptr(), k));
    if (PyErr_Occurred()) throw PythonError();
    pointers.push_back(p);
  }
  std::vector<std::pair<int64_t, bool>> scalars;
  Ref scalar_list = check(PySequence_Fast(args[2], "scalars must be a list of (value, is_int64)"));
  for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(scalar_list.ptr()); ++k) {
    long long value = 0;
    int wide = 0;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(scalar_list.ptr(), k), "Lp", &value, &wide)) throw PythonError();
    scalars.emplace_back(value, wide != 0);
  }
  long long grid = 0, grid_y = 1;
  if (!PyArg_ParseTuple(args[3], "LL", &grid, &grid_y)) throw PythonError();
  void* stream = PyLong_AsVoidPtr(args[4]);
  if (!stream && PyErr_Occurred()) throw PythonError();
  runtime::CubinKernel binary = runtime::cubin_from_result(Handle(args[0]));
  double ms = 0;
  {
    runtime::GilRelease nogil;
    ms = runtime::time_triton_kernel(binary, pointers, scalars, grid, grid_y, stream);
  }
  return PyFloat_FromDouble(ms);
  CDYNAMO_BOUNDARY_END(nullptr)
}

// cuda_launch_cost(cubin, symbol, pointer_args, stream, launches=50, repeats=20) -> CPU µs per
// launch of the kernel (one program, null pointer arguments) through the runtime's launch path:
// the floor under each generated kernel's launch. The kernel must not dereference its arguments.
// Ownership contract: args borrowed; returns a new reference or NULL with an error.
PyObject* py_cuda_launch_cost(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  CDYNAMO_BOUNDARY_BEGIN
  expect_args(nargs, 4, 6, "cuda_launch_cost");
  if (!PyBytes_Check(args[0])) throw UserError("cuda_launch_cost: cubin must be bytes", PyExc_TypeError);
  std::string cubin(PyBytes_AS_STRING(args[0]), static_cast<size_t>(PyBytes_GET_SIZE(args[0])));
  std::string symbol = to_std_string(Handle(args[1]));
  long pointer_args = PyLong_AsLong(args[2]);
  void* stream = PyLong_AsVoidPtr(args[3]);
  long launches = nargs > 4 ? PyLong_AsLong(args[4]) : 50;
  long repeats = nargs > 5 ? PyLong_AsLong(args[5]) : 20;
  if (PyErr_Occurred()) throw PythonError();
  if (pointer_args < 0 || pointer_args > 64 || launches < 1 || repeats < 1)
    throw UserError("cuda_launch_cost: 0..64 pointer arguments, at least one launch and one repeat", PyExc_ValueError);
  std::vector<void*> values(static_cast<size_t>(pointer_args), nullptr);
  std::vector<void*> params;
  for (void*& v : values) params.push_back(&v);
  double us = 0;
  {
    runtime::GilRelease nogil;
    runtime::cuda::Kernel kernel(cubin, symbol, 0, 1, 0);
    us = kernel.cpu_us_per_launch(1, stream, params.data(), static_cast<int>(launches), static_cast<int>(repeats));
  }
  return PyFloat_FromDouble(us);
  CDYNAMO_BOUNDARY_END(nullptr)
}

PyMethodDef module_methods[] = {
    {"_triton_time_kernel", CDYNAMO_FASTCALL(py_triton_time_kernel), METH_FASTCALL,
     "_triton_time_kernel(result, pointers, scalars, (grid_x, grid_y), stream) -> ms per launch (max-autotune)"},
    {nullptr, nullptr, 0, nullptr}};

PyMethodDef testing_methods[] = {
    {"program_from_dict", CDYNAMO_FASTCALL(py_program_from_dict), METH_FASTCALL, "program_from_dict(d) -> IR text"},
    {"generate_cpp", CDYNAMO_FASTCALL(py_generate_cpp), METH_FASTCALL, "generate_cpp(d) -> {kernel: C++ source}"},
    {"generate_triton", CDYNAMO_FASTCALL(py_generate_triton), METH_FASTCALL, "generate_triton(d) -> {kernel: Triton source}"},
    {"compile_program", CDYNAMO_FASTCALL(py_compile_program), METH_FASTCALL,
     "compile_program(d, constants=None, eager_fallback=None, target='cpp') -> callable"},
    {"run_program", CDYNAMO_FASTCALL(py_run_program), METH_FASTCALL,
     "run_program(d, inputs, constants=None, target='cpp') -> outputs"},
    {"kernel_cache_stats", py_kernel_cache_stats, METH_NOARGS, "counters of the kernel cache"},
    {"reset_kernel_cache_stats", py_reset_kernel_cache_stats, METH_NOARGS, "zero the kernel cache counters"},
    {"clear_kernel_memory_cache", py_clear_kernel_memory_cache, METH_NOARGS, "forget loaded kernels (disk stays)"},
    {"cpp_prelude", py_cpp_prelude, METH_NOARGS, "the text of cd_prelude.h"},
    {"cpp_compile_command", py_cpp_compile_command, METH_NOARGS, "(compiler flags, link libraries)"},
    {"parse_index", py_parse_index, METH_O, "parse_index(text) -> simplified expression"},
    {"cuda_launch_cost", CDYNAMO_FASTCALL(py_cuda_launch_cost), METH_FASTCALL,
     "cuda_launch_cost(cubin, symbol, pointer_args, stream, launches=50, repeats=20) -> CPU us per launch"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

void init_backend_runtime(PyObject* module, PyObject* testing) {
  add_functions(module, module_methods);
  add_functions(testing, testing_methods);
}

}  // namespace cdynamo
