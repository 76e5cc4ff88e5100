// Reading the constant arguments of extern aten calls: IR text parsed against schema types, and
// the IR's dtypes as torch scalar types. Assumes torch headers (runtime translation units only).
#pragma once
#include <ATen/core/ivalue.h>
#include <ATen/core/jit_type.h>
#include <optional>
#include <string>
#include <vector>
#include "backend/ir/ir.h"

namespace cdynamo::runtime {

// The value of `text` as an argument of `type` (the schema argument's real_type(): int, float,
// bool, Scalar, str, dtype, layout, device, memory format, lists of int/float/bool, optionals).
// n: the declared length of a fixed-size list (int[2]), so "1" means [1, 1].
// Throws std::invalid_argument when the text does not fit the type.
c10::IValue parse_constant(const std::string& text, const c10::TypePtr& type, std::optional<int32_t> n);

at::ScalarType scalar_type_of(ir::DType dtype);

// An int or int[] argument whose text names size symbols ("[s0, 768]", a symbolic program's):
// its expressions, and whether it is a list; nullopt for any other argument or text.
std::optional<std::vector<ir::Expr>> symbolic_ints(const std::string& text, const c10::TypePtr& type, bool& is_list);

}  // namespace cdynamo::runtime
