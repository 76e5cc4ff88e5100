// IR tables (names, arities, dtype facts), scalar-graph builders and Program lookups.
// Assumes the X-macro lists in ir.h are the single source of every per-kind table.
#include "backend/ir/ir.h"
#include <cstdlib>
#include <map>
#include "common/error.h"

namespace cdynamo::ir {

const char* dtype_name(DType dtype) {
  switch (dtype) {
#define CDYNAMO_DTYPE_NAME(name, ctype, torch_name) \
  case DType::name: return #name;
    CDYNAMO_DTYPES(CDYNAMO_DTYPE_NAME)
#undef CDYNAMO_DTYPE_NAME
  }
  return "?";
}

const char* dtype_torch_name(DType dtype) {
  switch (dtype) {
#define CDYNAMO_DTYPE_TORCH(name, ctype, torch_name) \
  case DType::name: return torch_name;
    CDYNAMO_DTYPES(CDYNAMO_DTYPE_TORCH)
#undef CDYNAMO_DTYPE_TORCH
  }
  return "?";
}

DType dtype_from_torch_name(const std::string& name) {
#define CDYNAMO_DTYPE_PARSE(dname, ctype, torch_name) \
  if (name == torch_name) return DType::dname;
  CDYNAMO_DTYPES(CDYNAMO_DTYPE_PARSE)
#undef CDYNAMO_DTYPE_PARSE
  throw UserError("the inductor backend does not support tensors of dtype " + name);
}

bool is_floating(DType dtype) {
  return dtype == DType::Float16 || dtype == DType::BFloat16 || dtype == DType::Float32 || dtype == DType::Float64;
}
bool is_integral(DType dtype) { return !is_floating(dtype); }

int dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Bool:
    case DType::UInt8:
    case DType::Int8: return 1;
    case DType::Int16:
    case DType::Float16:
    case DType::BFloat16: return 2;
    case DType::Int32:
    case DType::Float32: return 4;
    case DType::Int64:
    case DType::Float64: return 8;
  }
  return 0;
}

const char* scalar_op_name(ScalarOp op) {
  switch (op) {
#define CDYNAMO_SCALAR_NAME(name, arity, doc) \
  case ScalarOp::name: return #name;
    CDYNAMO_SCALAR_OPS(CDYNAMO_SCALAR_NAME)
#undef CDYNAMO_SCALAR_NAME
  }
  return "?";
}

int scalar_op_arity(ScalarOp op) {
  switch (op) {
#define CDYNAMO_SCALAR_ARITY(name, arity, doc) \
  case ScalarOp::name: return arity;
    CDYNAMO_SCALAR_OPS(CDYNAMO_SCALAR_ARITY)
#undef CDYNAMO_SCALAR_ARITY
  }
  return -1;
}

bool is_expensive(ScalarOp op) {
  switch (op) {
#define CDYNAMO_EXPENSIVE_CASE(name) case ScalarOp::name:
    CDYNAMO_EXPENSIVE_SCALAR_OPS(CDYNAMO_EXPENSIVE_CASE)
#undef CDYNAMO_EXPENSIVE_CASE
    return true;
    default: return false;
  }
}

int64_t size_hint(const Expr& e, const std::vector<Symbol>& symbols) {
  if (e.is_const()) return e.const_value();
  std::map<std::string, int64_t> values;
  for (const Symbol& s : symbols) values[s.name] = s.hint;
  return e.evaluate(values);
}

Expr element_extent_expr(const Buffer& b) {
  if (std::optional<int64_t> extent = element_extent(b)) return *extent;
  Expr last = b.offset;
  for (size_t d = 0; d < b.sizes.size(); ++d) last = last + (b.sizes[d] - Expr(1)) * b.strides[d];
  return last + Expr(1);
}

std::optional<int64_t> element_extent(const Buffer& b) {
  if (!b.offset.is_const()) return std::nullopt;
  int64_t last = b.offset.const_value();
  for (size_t d = 0; d < b.sizes.size(); ++d) {
    if (!b.sizes[d].is_const() || !b.strides[d].is_const()) return std::nullopt;
    if (b.sizes[d].const_value() == 0) return int64_t{0};
    last += (b.sizes[d].const_value() - 1) * std::abs(b.strides[d].const_value());
  }
  return last + 1;
}

bool is_reduced_float(DType dtype) { return dtype == DType::Float16 || dtype == DType::BFloat16; }

bool is_comparison(ScalarOp op) {
  return op == ScalarOp::Eq || op == ScalarOp::Ne || op == ScalarOp::Lt || op == ScalarOp::Le || op == ScalarOp::Gt ||
         op == ScalarOp::Ge;
}

bool is_logical(ScalarOp op) { return op == ScalarOp::LogicalAnd || op == ScalarOp::LogicalOr || op == ScalarOp::LogicalXor; }

DType comparison_dtype(DType a, DType b) {
  if (a == b) return a;
  if (is_floating(a) != is_floating(b)) return is_floating(a) ? a : b;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  if (is_reduced_float(a) && is_reduced_float(b)) return DType::Float32;
  return dtype_size(a) >= dtype_size(b) ? a : b;
}

DType operand_dtype(const ScalarNode& n, size_t k, const std::vector<DType>& operand_dtypes) {
  switch (n.op) {
    case ScalarOp::Cast:
    case ScalarOp::IsNan:
    case ScalarOp::IsInf: return operand_dtypes[k];
    case ScalarOp::LogicalNot: return DType::Bool;
    case ScalarOp::Where: return k == 0 ? DType::Bool : n.dtype;
    default: break;
  }
  if (is_comparison(n.op)) return comparison_dtype(operand_dtypes[0], operand_dtypes[1]);
  if (is_logical(n.op)) return DType::Bool;
  return n.dtype;
}

const char* reduction_type_name(ReductionType type) {
  switch (type) {
#define CDYNAMO_REDUCTION_NAME(name) \
  case ReductionType::name: return #name;
    CDYNAMO_REDUCTION_TYPES(CDYNAMO_REDUCTION_NAME)
#undef CDYNAMO_REDUCTION_NAME
  }
  return "?";
}

namespace {
Scalar make(ScalarOp op, DType dtype, std::vector<Scalar> args) {
  auto node = std::make_shared<ScalarNode>();
  node->op = op;
  node->dtype = dtype;
  node->args = std::move(args);
  if (static_cast<int>(node->args.size()) != scalar_op_arity(op))
    throw InternalError(std::string("wrong number of operands for ") + scalar_op_name(op));
  return node;
}
}  // namespace

Scalar load(const std::string& buffer, DType dtype, Expr index) {
  auto node = std::make_shared<ScalarNode>();
  node->op = ScalarOp::Load;
  node->dtype = dtype;
  node->buffer = buffer;
  node->index = std::move(index);
  return node;
}

Scalar masked_load(Scalar mask, const std::string& buffer, DType dtype, Expr index, Scalar other) {
  auto node = std::make_shared<ScalarNode>();
  node->op = ScalarOp::MaskedLoad;
  node->dtype = dtype;
  node->buffer = buffer;
  node->index = std::move(index);
  node->args = {std::move(mask), std::move(other)};
  return node;
}

Scalar indirect_load(const std::string& buffer, DType dtype, Expr index, std::vector<Scalar> positions,
                     std::vector<Expr> sizes) {
  auto node = std::make_shared<ScalarNode>();
  node->op = ScalarOp::Load;
  node->dtype = dtype;
  node->buffer = buffer;
  node->index = std::move(index);
  node->indirect = std::move(positions);
  node->indirect_sizes = std::move(sizes);
  return node;
}

std::string indirect_var(size_t k) { return "ind" + std::to_string(k); }

Scalar constant(double value, DType dtype) {
  auto node = std::make_shared<ScalarNode>();
  node->op = ScalarOp::Constant;
  node->dtype = dtype;
  if (dtype == DType::Bool) node->constant = value != 0.0;
  else if (is_integral(dtype)) node->constant = static_cast<int64_t>(value);
  else node->constant = value;
  return node;
}

Scalar constant_int(int64_t value, DType dtype) {
  if (is_floating(dtype)) return constant(static_cast<double>(value), dtype);
  auto node = std::make_shared<ScalarNode>();
  node->op = ScalarOp::Constant;
  node->dtype = dtype;
  if (dtype == DType::Bool) node->constant = value != 0;
  else node->constant = value;
  return node;
}

Scalar index_value(Expr index, DType dtype) {
  auto node = std::make_shared<ScalarNode>();
  node->op = ScalarOp::Index;
  node->dtype = dtype;
  node->index = std::move(index);
  return node;
}

Scalar cast(Scalar value, DType dtype) {
  if (value->dtype == dtype) return value;
  return make(ScalarOp::Cast, dtype, {std::move(value)});
}

Scalar unary(ScalarOp op, Scalar x, DType dtype) { return make(op, dtype, {std::move(x)}); }
Scalar binary(ScalarOp op, Scalar a, Scalar b, DType dtype) { return make(op, dtype, {std::move(a), std::move(b)}); }
Scalar where(Scalar condition, Scalar a, Scalar b) {
  DType dtype = a->dtype;
  return make(ScalarOp::Where, dtype, {std::move(condition), std::move(a), std::move(b)});
}

const Buffer& Program::buffer(const std::string& name) const {
  for (const Buffer& b : buffers)
    if (b.name == name) return b;
  throw InternalError("no buffer named " + name);
}
Buffer& Program::buffer(const std::string& name) {
  for (Buffer& b : buffers)
    if (b.name == name) return b;
  throw InternalError("no buffer named " + name);
}

}  // namespace cdynamo::ir
