// A slow reference evaluator of ir::Program, point by point in the execution model of ir.h
// (per outer point, nodes in order). For tests: it checks lowering and scheduling against eager.
// Assumes a verified Program; extern calls are delegated to a callback.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>
#include "backend/ir/ir.h"

namespace cdynamo::ir {

// One element: integral dtypes (and Bool) use `i`, floating dtypes use `f`.
struct EvalNumber {
  double f = 0.0;
  int64_t i = 0;
};

class Evaluator {
 public:
  // Called for each Extern step: read its argument buffers with read_logical(), write its
  // outputs with write_logical().
  using ExternFn = std::function<void(const Extern&, Evaluator&)>;

  explicit Evaluator(const Program& program);

  // Logical (row-major over sizes) element values of a buffer, through its layout.
  std::vector<EvalNumber> read_logical(const std::string& buffer) const;
  void write_logical(const std::string& buffer, const std::vector<EvalNumber>& values);
  // Runs every step; frees are honoured (a later use of a freed buffer throws).
  void run(const ExternFn& call_extern);

  const Program& program() const { return program_; }

 private:
  struct Storage {
    std::vector<EvalNumber> data;
  };
  Storage& storage_of(const std::string& buffer);
  const Storage& storage_of(const std::string& buffer) const;
  EvalNumber load(const std::string& buffer, int64_t flat) const;
  void store(const std::string& buffer, int64_t flat, EvalNumber value);
  void run_kernel(const Kernel& kernel);
  void run_pointwise(const Pointwise& node, std::map<std::string, int64_t> env);
  void run_reduction(const Reduction& node, std::map<std::string, int64_t> env);
  EvalNumber eval(const Scalar& s, const std::map<std::string, int64_t>& env,
                  std::map<const ScalarNode*, EvalNumber>& memo) const;

  const Program& program_;
  std::map<std::string, std::string> root_;
  std::map<std::string, std::shared_ptr<Storage>> storages_;  // by root name
  std::set<std::string> freed_;
};

// Rounds a value to what a buffer of `dtype` holds (float32/half rounding, integer wrap, bool).
EvalNumber eval_convert(EvalNumber value, DType from, DType to);

}  // namespace cdynamo::ir
