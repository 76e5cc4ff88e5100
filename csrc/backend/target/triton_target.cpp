// The Triton target: codegen/triton modules, compiled by cdynamo.inductor.triton_runtime (worker
// processes, disk cache) and launched from C++ through the CUDA driver, or, for CPU tensors,
// run by Triton's interpreter. Assumes the tensors of one kernel live on one device.
#include <map>
#include "backend/codegen/triton/triton_codegen.h"
#include "backend/runtime/program_blob.h"
#include "backend/runtime/triton_launch.h"
#include "backend/target/target.h"
#include "common/error.h"
#include "common/py_import.h"

namespace cdynamo::target {
namespace {

using codegen::triton::GeneratedTritonKernel;
using codegen::triton::LaunchConfig;

Ref py_str(const std::string& s) { return check(PyUnicode_FromStringAndSize(s.data(), static_cast<Py_ssize_t>(s.size()))); }
Ref py_int(int64_t v) { return check(PyLong_FromLongLong(v)); }

// A size's value at the symbols' hints (what autotuning and the build see of a symbolic size).
int64_t hint_of(const runtime::SizeExpr& size, const std::vector<ir::Symbol>& symbols) {
  if (size.is_const()) return size.const_value();
  std::vector<int64_t> hints;
  for (const ir::Symbol& s : symbols) hints.push_back(s.hint);
  return size(hints.data());
}

void set_item(Handle dict, const char* key, const Ref& value) { check_status(PyDict_SetItemString(dict.ptr(), key, value.ptr())); }

Ref config_list(const LaunchConfig& c) {
  return check(Py_BuildValue("(LLii)", static_cast<long long>(c.xblock), static_cast<long long>(c.rblock), c.num_warps, c.num_stages));
}

LaunchConfig config_from(Handle tuple) {
  LaunchConfig c;
  long long xb = 0, rb = 0;
  if (!PyArg_ParseTuple(tuple.ptr(), "LLii", &xb, &rb, &c.num_warps, &c.num_stages)) throw PythonError();
  c.xblock = xb;
  c.rblock = rb;
  return c;
}

std::string kernel_device(const ir::Program& program, const ir::Kernel& kernel) {
  for (const auto* list : {&kernel.outputs, &kernel.inputs, &kernel.locals})
    for (const std::string& name : *list) return program.buffer(name).device;
  return "cpu";
}

// Elements from a buffer's pointer (element 0 of its offset space) that a kernel may touch.
runtime::SizeExpr extent_of(const ir::Buffer& b, const std::vector<ir::Symbol>& symbols) {
  if (std::optional<int64_t> extent = ir::element_extent(b)) return runtime::SizeExpr(*extent);
  return runtime::SizeExpr(ir::element_extent_expr(b), symbols, "buffer " + b.name);
}

// Per scalar parameter (numels, then size symbols): its name and its value, at the hints.
std::vector<std::pair<std::string, ir::Expr>> scalar_params(const GeneratedTritonKernel& k) {
  std::vector<std::pair<std::string, ir::Expr>> out = {{"xnumel", k.xnumel}};
  if (k.reduction) out.emplace_back("rnumel", k.rnumel);
  for (const std::string& symbol : k.symbol_params) out.emplace_back(symbol, ir::Expr::var(symbol));
  return out;
}

Ref describe(const GeneratedTritonKernel& k, const std::string& device, const std::vector<runtime::BufferView>& views,
             const std::vector<ir::Symbol>& symbols) {
  Ref d = check(PyDict_New());
  set_item(d, "name", py_str(k.name));
  set_item(d, "source", py_str(k.source));
  set_item(d, "function", py_str(codegen::triton::kFunctionName));
  set_item(d, "device", py_str(device));
  Ref signature = check(PyDict_New());
  Ref scalars = check(PyList_New(0));
  for (const codegen::triton::TritonArg& arg : k.args) check_status(PyDict_SetItemString(signature.ptr(), arg.name.c_str(), py_str(arg.signature).ptr()));
  set_item(d, "signature", signature);
  Ref varying = check(PyList_New(0));
  // Symbolic numels that are multiples of 16 at every size (8*s*768): Triton told so keeps
  // masked loads and stores over them vectorised, as it does for constants.
  Ref multiples_of_16 = check(PyList_New(0));
  for (const auto& [name, value] : scalar_params(k)) {
    check_status(PyList_Append(scalars.ptr(), py_int(ir::size_hint(value, symbols)).ptr()));
    if (value.is_const()) continue;
    check_status(PyList_Append(varying.ptr(), py_str(name).ptr()));
    if (ir::mod(value, 16).is_const(0)) check_status(PyList_Append(multiples_of_16.ptr(), py_str(name).ptr()));
  }
  set_item(d, "scalars", scalars);
  set_item(d, "varying", varying);
  set_item(d, "multiples_of_16", multiples_of_16);
  set_item(d, "reduction", Ref::borrow(k.reduction ? Py_True : Py_False));
  set_item(d, "tiled", Ref::borrow(k.tiled ? Py_True : Py_False));
  set_item(d, "config", config_list(k.config));
  Ref candidates = check(PyList_New(0));
  for (const LaunchConfig& c : k.candidates) check_status(PyList_Append(candidates.ptr(), config_list(c).ptr()));
  set_item(d, "candidates", candidates);
  Ref bytes = check(PyList_New(0));  // per pointer argument: what max-autotune allocates to time it
  for (const runtime::BufferView& v : views)
    check_status(PyList_Append(bytes.ptr(), py_int(std::max<int64_t>(hint_of(v.extent, symbols), 1) * ir::dtype_size(v.dtype)).ptr()));
  set_item(d, "buffer_bytes", bytes);
  return d;
}

// Compiled-graph cache entries name each Triton kernel by its whole description (source and
// launch data, as JSON): loading builds it again through the build service's caches.
constexpr const char* kBlobKeyPrefix = "triton:";

struct Item {
  GeneratedTritonKernel kernel;
  std::string device;
  std::vector<runtime::BufferView> views;
  std::vector<ir::Symbol> symbols;  // the program's
};

std::vector<runtime::BufferView> views_of(const ir::Program& program, const ir::Kernel& kernel) {
  std::vector<runtime::BufferView> views;
  for (const auto* list : {&kernel.inputs, &kernel.outputs, &kernel.locals})
    for (const std::string& name : *list) views.push_back({program.buffer(name).dtype, extent_of(program.buffer(name), program.symbols)});
  return views;
}

// What the launchers read of a generated kernel, back from its description (see describe()).
GeneratedTritonKernel kernel_from_description(Handle desc) {
  GeneratedTritonKernel k;
  auto item = [&](const char* key) {
    PyObject* v = PyDict_GetItemString(desc.ptr(), key);
    if (!v) throw UserError(std::string("a stored Triton kernel has no '") + key + "'", PyExc_ValueError);
    return Handle(v);
  };
  k.name = to_std_string(item("name"));
  k.source = to_std_string(item("source"));
  k.reduction = PyObject_IsTrue(item("reduction").ptr()) == 1;
  k.tiled = PyObject_IsTrue(item("tiled").ptr()) == 1;
  k.config = config_from(Ref(check(PySequence_Tuple(item("config").ptr()))));
  Handle signature = item("signature");
  PyObject *key, *value;
  Py_ssize_t at = 0;
  while (PyDict_Next(signature.ptr(), &at, &key, &value)) {  // insertion order: the parameters'
    std::string name = to_std_string(Handle(key)), type = to_std_string(Handle(value));
    bool pointer = !type.empty() && type[0] == '*' && name != "cd_error";
    k.error_flag = k.error_flag || name == "cd_error";
    k.index64 = k.index64 || type == "i64";
    k.args.push_back({name, type, pointer ? name : ""});
  }
  Ref scalars = check(PySequence_Fast(item("scalars").ptr(), "scalars must be a list"));
  auto scalar = [&](Py_ssize_t i) {
    long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(scalars.ptr(), i));
    if (v == -1 && PyErr_Occurred()) throw PythonError();
    return ir::Expr(static_cast<int64_t>(v));
  };
  if (PySequence_Fast_GET_SIZE(scalars.ptr()) < (k.reduction ? 2 : 1))
    throw UserError("a stored Triton kernel lacks its sizes", PyExc_ValueError);
  k.xnumel = scalar(0);
  k.rnumel = k.reduction ? scalar(1) : ir::Expr(1);
  return k;
}

std::vector<runtime::Launcher> build(const std::vector<Item>& items, const Ref& descriptions) {
  Ref results = call_helper("cdynamo.inductor.triton_runtime", "build_kernels", {descriptions});
  Ref list = check(PySequence_Fast(results.ptr(), "build_kernels must return a list"));
  if (static_cast<size_t>(PySequence_Fast_GET_SIZE(list.ptr())) != items.size())
    throw InternalError("build_kernels returned the wrong number of kernels");
  std::vector<runtime::Launcher> launchers;
  for (size_t k = 0; k < items.size(); ++k) {
    Handle result = PySequence_Fast_GET_ITEM(list.ptr(), static_cast<Py_ssize_t>(k));
    const auto& item = items[k];
    if (PyCallable_Check(result.ptr())) {  // Triton's interpreter, on CPU tensors
      runtime::TritonLaunchShape shape = runtime::launch_shape(item.kernel, item.kernel.config, item.symbols);
      std::vector<std::string> names;
      for (const auto& [name, value] : scalar_params(item.kernel)) names.push_back(name);
      launchers.push_back(runtime::interpreted_triton_launcher(result, item.views, shape, std::move(names)));
      continue;
    }
    Handle config = PyDict_GetItemString(result.ptr(), "config");
    LaunchConfig chosen = config ? config_from(config) : item.kernel.config;
    runtime::CubinKernel binary = runtime::cubin_from_result(result);
    Handle unaligned = PyDict_GetItemString(result.ptr(), "unaligned");
    launchers.push_back(runtime::cuda_triton_launcher(binary, runtime::launch_shape(item.kernel, chosen, item.symbols), unaligned));
  }
  return launchers;
}

// The compile job: the build service, with the GIL, on whatever thread runs it.
Target::CompileJob job(std::shared_ptr<std::vector<Item>> items, Ref descriptions) {
  auto shared_descriptions = std::make_shared<Ref>(std::move(descriptions));
  return [items, shared_descriptions] {
    PyGILState_STATE gil = PyGILState_Ensure();
    try {
      std::vector<runtime::Launcher> launchers = build(*items, *shared_descriptions);
      shared_descriptions->reset();
      PyGILState_Release(gil);
      return launchers;
    } catch (...) {
      shared_descriptions->reset();
      PyGILState_Release(gil);
      throw;
    }
  };
}

// The program as a compiled-graph cache value, or "" when it cannot be stored.
std::string storable(const ir::Program& program, const Ref& descriptions) {
  std::vector<std::string> keys, symbols;
  for (Py_ssize_t k = 0; k < PyList_GET_SIZE(descriptions.ptr()); ++k) {
    Ref text = call_helper("json", "dumps", {Handle(PyList_GET_ITEM(descriptions.ptr(), k))});
    keys.push_back(kBlobKeyPrefix + to_std_string(text));
    symbols.emplace_back("");
  }
  try {
    return runtime::serialize_program(program, keys, symbols);
  } catch (const UserError&) {
    return "";  // not storable: compiled, just not cached
  }
}

class TritonTarget final : public Target {
 public:
  const char* name() const override { return "triton"; }
  Capabilities capabilities() const override { return {true, true, "cuda", true}; }

  std::vector<std::pair<std::string, std::string>> generate(const ir::Program& program) const override {
    std::vector<std::pair<std::string, std::string>> out;
    for (const ir::Step& step : program.steps)
      if (const auto* k = std::get_if<ir::Kernel>(&step)) {
        GeneratedTritonKernel g = codegen::triton::generate_kernel(program, *k);
        out.emplace_back(g.name, g.source);
      }
    return out;
  }

  CompileJob prepare(const ir::Program& program, std::string* blob) const override {
    auto items = std::make_shared<std::vector<Item>>();
    Ref descriptions = check(PyList_New(0));
    for (const ir::Step& step : program.steps) {
      const auto* k = std::get_if<ir::Kernel>(&step);
      if (!k) continue;
      Item item{codegen::triton::generate_kernel(program, *k), kernel_device(program, *k), views_of(program, *k), program.symbols};
      check_status(PyList_Append(descriptions.ptr(), describe(item.kernel, item.device, item.views, program.symbols).ptr()));
      items->push_back(std::move(item));
    }
    if (blob) *blob = storable(program, descriptions);
    return job(items, std::move(descriptions));
  }
};

}  // namespace

const Target& triton_target() {
  static TritonTarget target;
  return target;
}

bool is_triton_blob_key(const std::string& key) { return key.rfind(kBlobKeyPrefix, 0) == 0; }

std::vector<runtime::Launcher> triton_launchers_from_blob(const ir::Program& program, const std::vector<std::string>& keys) {
  auto items = std::make_shared<std::vector<Item>>();
  Ref descriptions = check(PyList_New(0));
  size_t next = 0;
  for (const ir::Step& step : program.steps) {
    const auto* k = std::get_if<ir::Kernel>(&step);
    if (!k) continue;
    if (next >= keys.size() || !is_triton_blob_key(keys[next]))
      throw UserError("a stored program's Triton kernel is malformed", PyExc_ValueError);
    Ref text = py_str(keys[next++].substr(std::string(kBlobKeyPrefix).size()));
    Ref desc = call_helper("json", "loads", {text});
    if (!PyDict_Check(desc.ptr())) throw UserError("a stored program's Triton kernel is malformed", PyExc_ValueError);
    items->push_back({kernel_from_description(desc), to_std_string(Handle(PyDict_GetItemString(desc.ptr(), "device"))),
                      views_of(program, *k), program.symbols});
    check_status(PyList_Append(descriptions.ptr(), desc.ptr()));
  }
  return job(items, std::move(descriptions))();
}

}  // namespace cdynamo::target
