// Turns scalar value graphs (ir::Scalar) into C++ statements, one value per const variable, in
// scalar or vector (CD_VLEN lanes) width. Assumes the kernel emitter owns loops and scopes.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>
#include "backend/codegen/cpp/code_writer.h"
#include "backend/ir/ir.h"

namespace cdynamo::codegen::cpp {

enum class Width { Scalar, Vector };

// C++ spellings of a dtype: in memory, in a scalar register, in a vector register.
std::string storage_type(ir::DType dtype);
std::string compute_type(ir::DType dtype);
std::string vector_type(ir::DType dtype);

struct Value {
  std::string name;  // a C++ expression, usually a variable
  ir::DType dtype = ir::DType::Float32;
  Width width = Width::Scalar;
};

class ValueEmitter {
 public:
  // pointers: buffer name -> the C++ pointer variable holding its storage (typed by storage_type).
  ValueEmitter(CodeWriter& w, std::map<std::string, std::string> pointers, std::map<std::string, ir::DType> dtypes)
      : w_(w), pointers_(std::move(pointers)), dtypes_(std::move(dtypes)) {}

  // A C++ block: values defined inside are forgotten when it closes. In Vector width, vec_var is
  // the loop variable that runs CD_VLEN lanes; it holds lane 0's index.
  void push_scope(Width width, const std::string& vec_var = "");
  void pop_scope();
  Width width() const { return scopes_.back().width; }

  Value emit(const ir::Scalar& s);
  Value cast(const Value& v, ir::DType to);
  // A scalar value as a vector when the current scope is vector-wide (broadcast), else itself.
  Value widen(const Value& v);
  // Defines a value under a fresh name.
  Value define(const std::string& expr, ir::DType dtype, Width width);

  void store(const std::string& buffer, const ir::Expr& index, const Value& v);
  // Later loads of buffer[index] in this scope (and inner ones) read v instead of memory.
  void produced(const std::string& buffer, const ir::Expr& index, const Value& v);

  // Later emits of node n in this scope (and inner ones) yield v: a value computed elsewhere.
  void bind(const ir::ScalarNode* n, const Value& v) { scopes_.back().memo[n] = v; }
  // A literal of dtype (compute type) for a double / int64 / bool payload.
  static std::string literal(ir::DType dtype, const std::variant<double, int64_t, bool>& payload);
  CodeWriter& writer() { return w_; }

 private:
  struct Scope {
    Width width;
    std::string vec_var;
    std::unordered_map<const ir::ScalarNode*, Value> memo;
    std::map<std::string, std::pair<ir::Expr, Value>> produced;
  };
  std::optional<Value> lookup(const ir::ScalarNode* n);
  std::optional<Value> lookup_produced(const std::string& buffer, const ir::Expr& index);
  Value emit_load(const ir::ScalarNode& n);
  // A direct load of `buffer` at `index` (free of ind variables) in the current width.
  Value load_at(const std::string& buffer, const ir::Expr& index);
  Value emit_indirect_load(const ir::ScalarNode& n);
  // Whether s has one value for all lanes of the vector loop (it does not depend on vec_var).
  bool uniform(const ir::Scalar& s);
  Value emit_masked_load(const ir::ScalarNode& n);
  Value emit_index(const ir::ScalarNode& n);
  Value emit_op(const ir::ScalarNode& n, std::vector<Value> args);
  // Statements computing `scalar_expr` lane by lane into a new vector (ops without a vector form).
  Value lanes(ir::DType dtype, const std::vector<Value>& args,
              const std::function<std::string(const std::vector<std::string>&)>& scalar_expr);
  std::string pointer(const std::string& buffer) const;
  std::string scalar_load(const std::string& buffer, const std::string& index) const;
  const std::string& vec_var() const { return scopes_.back().vec_var; }

  CodeWriter& w_;
  std::map<std::string, std::string> pointers_;
  std::map<std::string, ir::DType> dtypes_;
  std::vector<Scope> scopes_;
  std::map<std::pair<const ir::ScalarNode*, std::string>, bool> uniform_memo_;
};

// The kernel's error flag (an int declared by the kernel emitter, returned by cd_kernel): set by
// a load at an out-of-range indirect position, which reads element 0 of its dimension instead.
inline constexpr const char* kErrorFlag = "cd_error";

}  // namespace cdynamo::codegen::cpp
