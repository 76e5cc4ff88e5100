// Triton kernel launchers: the CUDA driver with a parameter block per launch, and the
// interpreter through Python with tensors over the raw buffers. Assumes triton_launch.h.
#include "backend/runtime/triton_launch.h"
#include <ATen/ATen.h>
#include <torch/csrc/autograd/python_variable.h>
#include "backend/runtime/cuda_driver.h"
#include "common/error.h"
#include "common/py_import.h"
#include <map>
#include <memory>
#include <mutex>

namespace cdynamo::runtime {
namespace {

at::ScalarType scalar_type(ir::DType d) {
  switch (d) {
    case ir::DType::Bool: return at::kBool;
    case ir::DType::UInt8: return at::kByte;
    case ir::DType::Int8: return at::kChar;
    case ir::DType::Int16: return at::kShort;
    case ir::DType::Int32: return at::kInt;
    case ir::DType::Int64: return at::kLong;
    case ir::DType::Float16: return at::kHalf;
    case ir::DType::BFloat16: return at::kBFloat16;
    case ir::DType::Float32: return at::kFloat;
    case ir::DType::Float64: return at::kDouble;
  }
  return at::kFloat;
}

int int_item(Handle dict, const char* key) {
  PyObject* v = PyDict_GetItemString(dict.ptr(), key);
  if (!v) throw InternalError(std::string("triton build result without '") + key + "'");
  long long value = PyLong_AsLongLong(v);
  if (value == -1 && PyErr_Occurred()) throw PythonError();
  return static_cast<int>(value);
}

class CudaTritonLauncher final : public KernelLauncher {
 public:
  CudaTritonLauncher(const CubinKernel& binary, TritonLaunchShape shape, Handle rebuild_unaligned)
      : kernel_(binary.cubin, binary.symbol, binary.device, binary.num_warps, binary.shared_bytes),
        shape_(std::move(shape)),
        rebuild_unaligned_(Ref::borrow(rebuild_unaligned)) {
    if (shape_.error_flag)  // one int32 on the device; out-of-range positions read element 0 (never outside)
      error_ = at::zeros({1}, at::TensorOptions().dtype(at::kInt).device(at::Device(at::kCUDA, static_cast<int8_t>(binary.device))));
    symbolic_ = shape_.symbolic();
    if (!symbolic_) {  // the values every launch passes, in both widths
      static_values_ = launch_values(shape_, nullptr);
      for (const auto& [value, wide] : static_values_.scalars) {
        fixed64_.push_back(value);
        fixed32_.push_back(static_cast<int32_t>(value));
      }
    }
  }

  ~CudaTritonLauncher() override {
    if (!rebuild_unaligned_) return;
    PyGILState_STATE gil = PyGILState_Ensure();
    rebuild_unaligned_.reset();
    PyGILState_Release(gil);
  }

  int launch(char** buffers, const int64_t* symbols, void* stream) const override {
    constexpr size_t kMaxParams = 256;
    if (shape_.pointer_count + shape_.scalars.size() + 4 > kMaxParams) throw UserError("a Triton kernel with too many arguments");
    // Each scalar in the width the kernel takes it: a static shape's from the values computed
    // once, a symbolic one's evaluated for this call.
    int64_t call64[kMaxParams];
    int32_t call32[kMaxParams];
    const int64_t* values64 = fixed64_.data();
    const int32_t* values32 = fixed32_.data();
    int64_t grid = static_values_.grid, grid_y = static_values_.grid_y;
    if (symbolic_) {
      evaluate_launch(shape_, symbols, call64, grid, grid_y);
      for (size_t k = 0; k < shape_.scalars.size(); ++k) call32[k] = static_cast<int32_t>(call64[k]);
      values64 = call64;
      values32 = call32;
    }
    if (grid == 0 || grid_y == 0) return 0;
    bool aligned = true;
    for (size_t k = 0; k < shape_.pointer_count; ++k) aligned = aligned && reinterpret_cast<uintptr_t>(buffers[k]) % 16 == 0;
    const cuda::Kernel& kernel = aligned ? kernel_ : unaligned_kernel();
    // The parameter block: each entry points at one parameter's value.
    void* values[kMaxParams];
    void* params[kMaxParams];
    size_t n = 0;
    auto push_pointer = [&](void* p) {
      values[n] = p;
      params[n] = &values[n];
      ++n;
    };
    for (size_t k = 0; k < shape_.pointer_count; ++k) push_pointer(buffers[k]);
    if (shape_.error_flag) push_pointer(error_.data_ptr());
    for (size_t k = 0; k < shape_.scalars.size(); ++k)
      params[n++] = const_cast<void*>(shape_.scalars[k].second ? static_cast<const void*>(values64 + k) : static_cast<const void*>(values32 + k));
    for (int k = 0; k < shape_.implicit_params; ++k) push_pointer(nullptr);
    std::string error = kernel.launch(static_cast<uint32_t>(grid), static_cast<uint32_t>(grid_y), stream, params);
    if (!error.empty()) throw UserError("cdynamo: launching a Triton kernel failed: " + error);
    return 0;
  }
  int cuda_device() const override { return kernel_.device(); }
  const std::vector<SizeExpr>* narrow_limits() const override { return &shape_.narrow_limits; }

 private:
  // The kernel compiled without alignment assumptions, built (with the GIL) on first need.
  const cuda::Kernel& unaligned_kernel() const {
    std::lock_guard<std::mutex> lock(unaligned_mutex_);
    if (unaligned_) return *unaligned_;
    if (!rebuild_unaligned_) throw InternalError("a Triton kernel got a misaligned pointer and has no unaligned variant");
    PyGILState_STATE gil = PyGILState_Ensure();
    try {
      Ref result = check(PyObject_CallNoArgs(rebuild_unaligned_.ptr()));
      CubinKernel binary = cubin_from_result(result);
      unaligned_ = std::make_unique<cuda::Kernel>(binary.cubin, binary.symbol, binary.device, binary.num_warps, binary.shared_bytes);
    } catch (...) {
      PyGILState_Release(gil);
      throw;
    }
    PyGILState_Release(gil);
    return *unaligned_;
  }

  cuda::Kernel kernel_;
  TritonLaunchShape shape_;
  Ref rebuild_unaligned_;
  mutable std::mutex unaligned_mutex_;
  mutable std::unique_ptr<cuda::Kernel> unaligned_;
  at::Tensor error_;
  bool symbolic_ = false;
  LaunchValues static_values_;  // a static shape's grid, computed once
  std::vector<int64_t> fixed64_;  // and its scalars, in both widths
  std::vector<int32_t> fixed32_;
};

class InterpretedTritonLauncher final : public KernelLauncher {
 public:
  InterpretedTritonLauncher(Handle launch, std::vector<BufferView> views, TritonLaunchShape shape,
                            std::vector<std::string> scalar_names)
      : launch_(Ref::borrow(launch)), views_(std::move(views)), shape_(std::move(shape)), scalar_names_(std::move(scalar_names)) {}
  ~InterpretedTritonLauncher() override {
    PyGILState_STATE gil = PyGILState_Ensure();
    launch_.reset();
    PyGILState_Release(gil);
  }

  const std::vector<SizeExpr>* narrow_limits() const override { return &shape_.narrow_limits; }
  int launch(char** buffers, const int64_t* symbols, void*) const override {
    LaunchValues values = launch_values(shape_, symbols);
    if (values.grid == 0 || values.grid_y == 0) return 0;
    PyGILState_STATE gil = PyGILState_Ensure();
    int status = 0;
    try {
      status = call(buffers, symbols);
    } catch (...) {
      PyGILState_Release(gil);
      throw;
    }
    PyGILState_Release(gil);
    return status;
  }

 private:
  int call(char** buffers, const int64_t* symbols) const {
    size_t count = views_.size() + (shape_.error_flag ? 1 : 0);
    Ref args = check(PyTuple_New(static_cast<Py_ssize_t>(count)));
    // Buffers at one address (an alias and its root) share one storage of the largest extent:
    // the interpreter keys its copies of the arguments by storage address.
    std::vector<int64_t> extents;
    for (const BufferView& v : views_) extents.push_back(std::max<int64_t>(v.extent(symbols), 1));
    std::map<char*, int64_t> bytes_at;
    for (size_t k = 0; k < views_.size(); ++k) {
      int64_t bytes = extents[k] * ir::dtype_size(views_[k].dtype);
      bytes_at[buffers[k]] = std::max(bytes_at[buffers[k]], bytes);
    }
    std::map<char*, at::Storage> storage_at;
    for (const auto& [address, bytes] : bytes_at)  // an empty buffer has no address: it gets bytes nobody reads
      storage_at[address] = address ? at::from_blob(address, {bytes}, at::TensorOptions().dtype(at::kByte)).storage()
                                    : at::zeros({bytes}, at::TensorOptions().dtype(at::kByte)).storage();
    for (size_t k = 0; k < views_.size(); ++k) {
      at::Tensor view = at::empty({0}, at::TensorOptions().dtype(scalar_type(views_[k].dtype)));
      view.set_(storage_at[buffers[k]], 0, {extents[k]}, {1});
      PyTuple_SET_ITEM(args.ptr(), static_cast<Py_ssize_t>(k), check(THPVariable_Wrap(view)).release());
    }
    at::Tensor error;
    if (shape_.error_flag) {
      error = at::zeros({1}, at::TensorOptions().dtype(at::kInt));
      PyTuple_SET_ITEM(args.ptr(), static_cast<Py_ssize_t>(views_.size()), check(THPVariable_Wrap(error)).release());
    }
    Ref kwargs;  // a symbolic program's per-call numels and size symbols, by parameter name
    if (shape_.symbolic()) {
      kwargs = check(PyDict_New());
      LaunchValues values = launch_values(shape_, symbols);
      for (size_t k = 0; k < values.scalars.size() && k < scalar_names_.size(); ++k)
        check_status(PyDict_SetItemString(kwargs.ptr(), scalar_names_[k].c_str(), Ref(check(PyLong_FromLongLong(values.scalars[k].first))).ptr()));
      check_status(PyDict_SetItemString(kwargs.ptr(), "cd_grid", Ref(check(Py_BuildValue("(LL)", static_cast<long long>(values.grid), static_cast<long long>(values.grid_y)))).ptr()));
    }
    Ref result = check(PyObject_Call(launch_.ptr(), args.ptr(), kwargs.ptr()));
    return shape_.error_flag && error.item<int32_t>() != 0 ? 1 : 0;
  }

  Ref launch_;
  std::vector<BufferView> views_;
  TritonLaunchShape shape_;
  std::vector<std::string> scalar_names_;  // the kernel's parameter name of each scalar
};

}  // namespace

bool TritonLaunchShape::symbolic() const {
  bool any = !grid.is_const() || !grid_y.is_const();
  for (const auto& [value, wide] : scalars) any = any || !value.is_const();
  return any;
}

TritonLaunchShape launch_shape(const codegen::triton::GeneratedTritonKernel& k, const codegen::triton::LaunchConfig& config,
                               const std::vector<ir::Symbol>& symbols) {
  TritonLaunchShape shape;
  for (const codegen::triton::TritonArg& arg : k.args)
    if (!arg.buffer.empty()) ++shape.pointer_count;
  shape.error_flag = k.error_flag;
  auto size = [&](const ir::Expr& e) { return SizeExpr(e, symbols, "kernel " + k.name); };
  shape.scalars.emplace_back(size(k.xnumel), k.index64);
  if (k.reduction) shape.scalars.emplace_back(size(k.rnumel), k.index64);
  for (const std::string& symbol : k.symbol_params) shape.scalars.emplace_back(size(ir::Expr::var(symbol)), k.index64);
  shape.grid = size(codegen::triton::grid_size(k, config));
  shape.grid_y = size(codegen::triton::grid_columns(k, config));
  shape.narrow_limits = size_exprs(k.narrow_limits, symbols, "kernel " + k.name);
  if (!shape.symbolic()) launch_values(shape, nullptr);  // a static kernel's limits fail at compile time
  return shape;
}

void evaluate_launch(const TritonLaunchShape& shape, const int64_t* symbols, int64_t* scalars, int64_t& grid, int64_t& grid_y) {
  constexpr int64_t kLimit = int64_t{1} << 31;
  for (size_t k = 0; k < shape.scalars.size(); ++k) scalars[k] = shape.scalars[k].first(symbols);
  grid = shape.grid(symbols);
  grid_y = shape.grid_y(symbols);
  // narrow_limits: the executor checks them before a call's first step (Executor::begin_call).
  if (grid >= kLimit) throw UserError("a Triton kernel with more than 2^31 programs");
  if (grid_y > 65535) throw UserError("a tiled Triton kernel with more than 65535 column blocks");
}

LaunchValues launch_values(const TritonLaunchShape& shape, const int64_t* symbols) {
  LaunchValues values;
  std::vector<int64_t> scalars(shape.scalars.size());
  evaluate_launch(shape, symbols, scalars.data(), values.grid, values.grid_y);
  for (size_t k = 0; k < scalars.size(); ++k) values.scalars.emplace_back(scalars[k], shape.scalars[k].second);
  return values;
}

CubinKernel cubin_from_result(Handle result) {
  if (!PyDict_Check(result.ptr())) throw InternalError("a Triton build result is not a dict");
  CubinKernel binary;
  PyObject* cubin = PyDict_GetItemString(result.ptr(), "cubin");
  PyObject* symbol = PyDict_GetItemString(result.ptr(), "symbol");
  if (!cubin || !PyBytes_Check(cubin) || !symbol) throw InternalError("a Triton build result without cubin or symbol");
  binary.cubin.assign(PyBytes_AS_STRING(cubin), static_cast<size_t>(PyBytes_GET_SIZE(cubin)));
  binary.symbol = to_std_string(Handle(symbol));
  binary.num_warps = int_item(result, "num_warps");
  binary.shared_bytes = int_item(result, "shared");
  binary.implicit_params = int_item(result, "implicit_params");
  binary.device = int_item(result, "device_index");
  return binary;
}

double time_triton_kernel(const CubinKernel& binary, const std::vector<uint64_t>& pointers,
                          const std::vector<std::pair<int64_t, bool>>& scalars, int64_t grid, int64_t grid_y,
                          void* stream) {
  cuda::Kernel kernel(binary.cubin, binary.symbol, binary.device, binary.num_warps, binary.shared_bytes);
  std::vector<uint64_t> values(pointers);
  std::vector<int64_t> wide;
  std::vector<int32_t> narrow;
  wide.reserve(scalars.size());
  narrow.reserve(scalars.size());
  std::vector<void*> params;
  for (uint64_t& p : values) params.push_back(&p);
  for (const auto& [value, is64] : scalars) {
    if (is64) params.push_back(&wide.emplace_back(value));
    else params.push_back(&narrow.emplace_back(static_cast<int32_t>(value)));
  }
  uint64_t null_pointer[8] = {};
  for (int k = 0; k < binary.implicit_params && k < 8; ++k) params.push_back(&null_pointer[k]);
  return kernel.time_launches(static_cast<uint32_t>(grid), static_cast<uint32_t>(grid_y), stream, params.data(), 10, 5);
}

Launcher cuda_triton_launcher(const CubinKernel& binary, TritonLaunchShape shape, Handle rebuild_unaligned) {
  shape.implicit_params = binary.implicit_params;
  return std::make_shared<CudaTritonLauncher>(binary, std::move(shape), rebuild_unaligned);
}

Launcher interpreted_triton_launcher(Handle launch, std::vector<BufferView> views, TritonLaunchShape shape,
                                     std::vector<std::string> scalar_names) {
  return std::make_shared<InterpretedTritonLauncher>(launch, std::move(views), std::move(shape), std::move(scalar_names));
}

}  // namespace cdynamo::runtime
