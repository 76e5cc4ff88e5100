// The loop-level IR of the inductor backend, shared by the C++/OpenMP and Triton generators:
// buffers with layouts, pointwise and reduction computations whose bodies are scalar value
// graphs over index expressions, extern calls of aten ops, and the scheduled program.
// Target-neutral: nothing here knows about CPUs, vectors or threads. All node lists are X-macros.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>
#include "backend/ir/expr.h"

namespace cdynamo::ir {

// ---------------------------------------------------------------------------------------------
// Element types: name, C++ type in generated code, torch dtype name.
#define CDYNAMO_DTYPES(X)                       \
  X(Bool, bool, "torch.bool")                   \
  X(UInt8, uint8_t, "torch.uint8")              \
  X(Int8, int8_t, "torch.int8")                 \
  X(Int16, int16_t, "torch.int16")              \
  X(Int32, int32_t, "torch.int32")              \
  X(Int64, int64_t, "torch.int64")              \
  X(Float16, cd_half, "torch.float16")          \
  X(BFloat16, cd_bfloat16, "torch.bfloat16")    \
  X(Float32, float, "torch.float32")            \
  X(Float64, double, "torch.float64")

enum class DType {
#define CDYNAMO_DTYPE_ENUM(name, ctype, torch_name) name,
  CDYNAMO_DTYPES(CDYNAMO_DTYPE_ENUM)
#undef CDYNAMO_DTYPE_ENUM
};
const char* dtype_name(DType dtype);        // "Float32"
const char* dtype_torch_name(DType dtype);  // "torch.float32"
DType dtype_from_torch_name(const std::string& name);  // throws for unknown names
bool is_floating(DType dtype);
bool is_integral(DType dtype);  // includes Bool
int dtype_size(DType dtype);    // bytes

// ---------------------------------------------------------------------------------------------
// Scalar value graphs: the body of a pointwise or reduction computation, evaluated once per
// index point. Leaves read buffers at index expressions over the loop variables.
//
//   name,        arity, meaning
#define CDYNAMO_SCALAR_OPS(X)                                                        \
  /* leaves */                                                                       \
  X(Load, 0, "buffer[index]")                                                        \
  X(Constant, 0, "a literal (double or int64 payload) of the node's dtype")          \
  X(Index, 0, "the value of an index expression (arange, iota)")                     \
  /* type conversion */                                                              \
  X(Cast, 1, "convert args[0] to the node's dtype (torch semantics)")                \
  /* unary math */                                                                   \
  X(Neg, 1, "-x") X(Abs, 1, "|x|") X(Sign, 1, "sign(x)")                             \
  X(Exp, 1, "e^x") X(Exp2, 1, "2^x") X(Expm1, 1, "e^x - 1") X(Log, 1, "ln x")        \
  X(Log2, 1, "log2 x") X(Log10, 1, "log10 x") X(Log1p, 1, "ln(1+x)")                 \
  X(Sqrt, 1, "sqrt x") X(Rsqrt, 1, "1/sqrt x") X(Reciprocal, 1, "1/x")               \
  X(Sin, 1, "sin") X(Cos, 1, "cos") X(Tan, 1, "tan") X(Asin, 1, "asin")              \
  X(Acos, 1, "acos") X(Atan, 1, "atan") X(Sinh, 1, "sinh") X(Cosh, 1, "cosh")        \
  X(Tanh, 1, "tanh") X(Asinh, 1, "asinh") X(Acosh, 1, "acosh") X(Atanh, 1, "atanh") \
  X(Erf, 1, "erf") X(Erfc, 1, "erfc") X(Sigmoid, 1, "1/(1+e^-x)")                    \
  X(Floor, 1, "floor") X(Ceil, 1, "ceil") X(Round, 1, "round half to even")          \
  X(Trunc, 1, "trunc") X(IsNan, 1, "x != x") X(IsInf, 1, "|x| == inf")               \
  X(LogicalNot, 1, "!x") X(BitwiseNot, 1, "~x")                                      \
  /* binary math (operands already promoted to a common dtype, except Pow) */        \
  X(Add, 2, "a + b") X(Sub, 2, "a - b") X(Mul, 2, "a * b") X(Div, 2, "a / b (true)") \
  X(FloorDiv, 2, "floor(a / b)") X(Remainder, 2, "Python-style a mod b")             \
  X(Fmod, 2, "C fmod") X(Pow, 2, "a ** b") X(Atan2, 2, "atan2(a, b)")                \
  X(Maximum, 2, "max, NaN-propagating") X(Minimum, 2, "min, NaN-propagating")        \
  X(Eq, 2, "==") X(Ne, 2, "!=") X(Lt, 2, "<") X(Le, 2, "<=") X(Gt, 2, ">")           \
  X(Ge, 2, ">=") X(LogicalAnd, 2, "&&") X(LogicalOr, 2, "||")                        \
  X(LogicalXor, 2, "!= of truth") X(BitwiseAnd, 2, "&") X(BitwiseOr, 2, "|")         \
  X(BitwiseXor, 2, "^") X(ShiftLeft, 2, "<<") X(ShiftRight, 2, ">>")                 \
  /* selection */                                                                    \
  X(Where, 3, "args[0] ? args[1] : args[2]")                                         \
  /* a load guarded by a mask (padding, cat): mask ? buffer[index] : args[1] */      \
  X(MaskedLoad, 2, "args[0] ? buffer[index] : args[1]")

enum class ScalarOp {
#define CDYNAMO_SCALAR_ENUM(name, arity, doc) name,
  CDYNAMO_SCALAR_OPS(CDYNAMO_SCALAR_ENUM)
#undef CDYNAMO_SCALAR_ENUM
};
const char* scalar_op_name(ScalarOp op);
int scalar_op_arity(ScalarOp op);

// Ops that cost far more than a load or an add (transcendentals, pow): worth computing once and
// reusing where two nodes of a kernel compute the same value (softmax's exp(x - max)).
#define CDYNAMO_EXPENSIVE_SCALAR_OPS(X) \
  X(Exp) X(Exp2) X(Expm1) X(Log) X(Log2) X(Log10) X(Log1p) X(Tanh) X(Sigmoid) X(Erf) X(Sin) X(Cos) X(Pow)
bool is_expensive(ScalarOp op);

// Type rules of scalar ops, shared by the code generators.
bool is_reduced_float(DType dtype);  // Float16, BFloat16: stored narrow, computed in Float32
bool is_comparison(ScalarOp op);     // Eq .. Ge
bool is_logical(ScalarOp op);        // LogicalAnd, LogicalOr, LogicalXor
// The dtype both operands of a comparison are brought to.
DType comparison_dtype(DType a, DType b);

struct ScalarNode;
using Scalar = std::shared_ptr<const ScalarNode>;

struct ScalarNode {
  ScalarOp op;
  DType dtype;                // the result's dtype
  std::vector<Scalar> args;
  std::string buffer;         // Load, MaskedLoad: the buffer read
  Expr index;                 // Load, MaskedLoad: flat element offset; Index: the value
  std::variant<double, int64_t, bool> constant;  // Constant (inf and nan allowed)
  // Load, MaskedLoad: indirect indexing (gather, index, embedding). `index` may use the
  // variables ind0, ind1, ... whose values are these Int64 scalars, evaluated at the same
  // point before the load (negative positions already wrapped). Empty for direct loads.
  std::vector<Scalar> indirect;
  // indirect_sizes[k]: the extent position k indexes (the size of the gathered dimension), one
  // per position. A position outside [0, size) is out of range: eager raises IndexError, so
  // generated code must never read at it (the C++ kernels report it, see codegen/cpp/README).
  std::vector<Expr> indirect_sizes;
};

// The dtype operand k of n is converted to before the op, given the operands' dtypes (IR
// operands are mostly promoted already; this makes generated code correct where they are not).
DType operand_dtype(const ScalarNode& n, size_t k, const std::vector<DType>& operand_dtypes);

// Builders (no simplification beyond constant folding of casts of constants).
Scalar load(const std::string& buffer, DType dtype, Expr index);
Scalar masked_load(Scalar mask, const std::string& buffer, DType dtype, Expr index, Scalar other);
Scalar constant(double value, DType dtype);
Scalar constant_int(int64_t value, DType dtype);
Scalar index_value(Expr index, DType dtype);
Scalar cast(Scalar value, DType dtype);
Scalar unary(ScalarOp op, Scalar x, DType dtype);
Scalar binary(ScalarOp op, Scalar a, Scalar b, DType dtype);
Scalar where(Scalar condition, Scalar a, Scalar b);
// A load whose index uses ind0..ind{n-1} bound to `positions` (Int64 scalars), each in
// [0, sizes[k]).
Scalar indirect_load(const std::string& buffer, DType dtype, Expr index, std::vector<Scalar> positions,
                     std::vector<Expr> sizes);
// The name of the k-th indirect index variable: "ind0", ...
std::string indirect_var(size_t k);

// ---------------------------------------------------------------------------------------------
// Buffers: named storage with a strided layout. Graph inputs and constants (parameters) are
// given; everything else is allocated by the runtime (Intermediate) or returned (Output).
//
// Layout: element (k0, k1, ..) lives at offset + sum(k_j * strides[j]) elements from the
// buffer's base pointer. For Input and Constant buffers and the outputs of extern calls the
// base pointer is the tensor's data_ptr() (so their offset is 0); for others it is the start
// of their own allocation.
//
// Aliases (`reuses` non-empty): the buffer owns no memory; it is a view of the storage of the
// buffer named by `reuses` (always a root: a buffer without `reuses` itself), with its own
// sizes/strides/offset measured from the root's base pointer: as a tensor,
// root.as_strided(sizes, strides, root.storage_offset() + offset), with this buffer's dtype
// (equal to the root's). Two producers make aliases:
//  - lowering: a view of an input, constant or computed buffer that is passed to an extern call
//    or returned from the graph (kind Output for returned views);
//  - the scheduler's in-place reuse: a buffer written by a kernel into the storage of a buffer
//    whose last use is that same kernel (same sizes, strides, offset and dtype).
// The memory plan keeps a root alive as long as any alias of it is used, and never frees the
// root of an Output alias, so the runtime may create an alias whenever it first needs it.
struct Buffer {
  enum class Kind { Input, Constant, Intermediate, Output };
  std::string name;
  Kind kind = Kind::Intermediate;
  DType dtype = DType::Float32;
  std::vector<Expr> sizes;
  std::vector<Expr> strides;
  Expr offset = 0;               // element offset into the storage
  std::string reuses;            // alias of this root buffer's storage (see above); "" = owns memory
  std::string device = "cpu";    // "cpu" or "cuda:N"
  // Computed by a kernel from Constant buffers only (directly or through other cached buffers),
  // never written otherwise, never aliased or returned: a runtime may keep its value across calls
  // while those constants keep their storage and version (a weight's channels-last copy).
  bool cached = false;
  // The result of an extern op that may share memory with its arguments (a view op run as an
  // extern): memory the plan does not see, so never given to another buffer in place.
  bool extern_view = false;
};

// Elements from element 0 of a buffer's offset space to one past the last it can hold:
// offset + sum((size - 1) * |stride|) + 1, or 0 when a size is 0; nullopt for symbolic layouts.
std::optional<int64_t> element_extent(const Buffer& b);
// The same as an expression (strides taken as non-negative, as torch's are; no 0-size case):
// an upper bound for symbolic layouts.
Expr element_extent_expr(const Buffer& b);

// ---------------------------------------------------------------------------------------------
// Computations, one per realized buffer.
#define CDYNAMO_REDUCTION_TYPES(X) \
  X(Sum) X(Prod) X(Max) X(Min) X(ArgMax) X(ArgMin) X(Any) X(All) X(XorSum)

enum class ReductionType {
#define CDYNAMO_REDUCTION_ENUM(name) name,
  CDYNAMO_REDUCTION_TYPES(CDYNAMO_REDUCTION_ENUM)
#undef CDYNAMO_REDUCTION_ENUM
};
const char* reduction_type_name(ReductionType type);

// out[index(i0..)] = body(i0..) for every point of `ranges`.
// Index variables: i0, i1, ... in `ranges` order; the store goes to `output` at
// linear_index({i...}, output strides, output offset). The output buffer's sizes equal
// `ranges`, and body->dtype equals the output buffer's dtype (Float16/BFloat16 results are
// computed in Float32 and rounded by an explicit Cast at the root of the body).
// The output may be an Input buffer: that is a graph input mutation (x.add_(1)), always the
// last writer of that input; the body reads the input only at the point it writes.
struct Pointwise {
  std::string output;
  std::vector<Expr> ranges;
  Scalar body;
};

// out[index(i0..)] = reduce over (r0..) in `reduction_ranges` of body(i0.., r0..).
// ArgMax/ArgMin store the int64 position of the extreme along the flattened reduction index
// (first occurrence wins; NaN counts as the maximum, like torch). Sum/Prod accumulate in the
// output dtype, except Float16/BFloat16 bodies, which accumulate in Float32.
// Body and output dtypes: Sum/Prod/Max/Min/XorSum: the body's dtype is the accumulator's and
// the output buffer has the same dtype, or Float16/BFloat16 for a Float32 body (rounded on
// store). ArgMax/ArgMin: Int64 output. Any/All: Bool body and output.
// Variables: i0.. over `ranges` (output sizes equal `ranges`), r0.. over `reduction_ranges`.
// An empty reduction yields the identity (0, 1, -inf/+inf, false/true).
struct Reduction {
  std::string output;
  std::vector<Expr> ranges;
  std::vector<Expr> reduction_ranges;
  ReductionType type;
  Scalar body;
};

// A call of an aten operator the backend does not generate code for (matmul, convolution,
// and every op without a lowering). Arguments follow the op's schema.
struct ExternArg {
  // A buffer (tensor argument), a list of buffers (Tensor[] / Tensor?[]: "" stands for None),
  // or a constant encoded as text the runtime parses against the schema: "3", "2.5", "inf",
  // "True", "None", "[1, 2]", "torch.float32", "cpu" (devices as str(device)),
  // "torch.contiguous_format", "torch.strided", "'tanh'" (strings quoted like Python's repr).
  std::variant<std::string /*buffer*/, std::vector<std::string> /*buffers*/, std::monostate> tensor;
  std::string constant;  // used when tensor holds std::monostate
  std::string name;      // keyword name for keyword-only arguments, else ""
};
struct Extern {
  std::string op;        // "aten::mm"
  std::string overload;  // "default", "out", "Tensor", ...
  std::vector<ExternArg> args;
  std::vector<std::string> outputs;  // buffers bound to the op's returns, in order
};

#define CDYNAMO_NODE_KINDS(X) X(Pointwise) X(Reduction) X(Extern)
using Node = std::variant<Pointwise, Reduction, Extern>;

// ---------------------------------------------------------------------------------------------
// The scheduled program: kernels (fused groups of pointwise/reduction nodes sharing one
// iteration space) and extern calls, in execution order.
struct Kernel {
  std::string name;                      // unique within the program: "kernel0", ...
  std::vector<Expr> ranges;              // the shared outer iteration space (i0..)
  std::vector<Expr> reduction_ranges;    // empty for pure pointwise kernels (r0..)
  // Nodes in dependency order; each is a Pointwise over `ranges` or a Reduction over
  // `ranges` x `reduction_ranges`. A Pointwise after a Reduction in the same kernel may read
  // the reduction's output at the same i-point (an epilogue).
  //
  // In a reduction kernel a Pointwise may also range over `ranges` ++ `reduction_ranges` (a
  // "full" pointwise, e.g. layer norm's normalising step): its variables i0..i{n-1} are the
  // kernel's outer variables and i{n+j} is the kernel's r{j}. Execution model: for each outer
  // point, the nodes run in order, each Reduction and each full Pointwise as its own loop over
  // the reduction ranges. The scheduler only groups nodes such that every read of a buffer
  // produced inside the kernel touches exactly the element that the producer wrote at the same
  // kernel point (outer point for reductions and outer pointwise, outer+inner for full ones),
  // so any execution order of the points that keeps per-point node order is correct.
  std::vector<Node> nodes;
  std::vector<std::string> inputs;   // buffers read (not produced inside the kernel)
  std::vector<std::string> outputs;  // buffers written that someone reads later or returns
  std::vector<std::string> locals;   // buffers produced and consumed inside the kernel only
  // (a generator may keep a local in registers: every read of it is at the producing point)
};

using Step = std::variant<Kernel, Extern>;

// A size symbol of a program compiled for symbolic sizes (dynamic shapes): where each call's
// value is read from, and its value at compile time (the hint heuristics choose by).
struct Symbol {
  enum class Source { Size, Stride, StorageOffset, Scalar };
  std::string name;  // as Exprs name it: "s0"
  Source source = Source::Size;
  int argument = 0;  // the call argument it is read from
  int dim = 0;       // Size, Stride: the dimension
  int64_t hint = 0;
};
// An expression's value with every symbol at its hint (heuristics only; never a kernel's size).
int64_t size_hint(const Expr& e, const std::vector<Symbol>& symbols);

struct Program {
  std::vector<Buffer> buffers;
  std::vector<std::string> inputs;   // graph placeholders, in call order (Input buffers)
  // Symbolic programs: the size symbols, and the call argument of each input (scalar symbols
  // are call arguments too, so inputs[k] is argument input_arguments[k]; empty: argument k).
  std::vector<Symbol> symbols;
  std::vector<int> input_arguments;
  int arguments = -1;  // call arguments; -1: inputs.size()
  std::vector<std::string> outputs;  // returned buffers, in return order (may repeat, may be inputs)
  std::vector<Step> steps;
  // Buffers whose storage can be freed after step k: frees[k]. Never inputs, constants,
  // outputs or roots of output aliases; a root outlives every alias of it.
  std::vector<std::vector<std::string>> frees;

  const Buffer& buffer(const std::string& name) const;  // throws if missing
  Buffer& buffer(const std::string& name);
};

// A stable, human-readable text form (golden tests, debug logs).
// Scalars print as SSA lines ("%0 = load x[8*i0 + i1] : Float32", one per distinct node).
std::string to_string(const Expr& e);
std::string to_string(const Buffer& b);
std::string to_string(const Kernel& k);
std::string to_string(const Scalar& s);
std::string to_string(const Node& n);
std::string to_string(const Program& p);

// Checks structural invariants (names defined before use, arities, dtypes consistent,
// index variables in range, every buffer read is produced earlier or an input); throws
// InternalError naming the first violation. Run after each pass in tests.
void verify(const Program& p);

}  // namespace cdynamo::ir
