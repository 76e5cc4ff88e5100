// Constants of extern calls: IR text ("3", "[1, 2]", "torch.float32", "None") parsed against the
// argument types of an aten schema. Torch headers: one of the runtime's two torch translation units.
#include "backend/runtime/extern_args.h"
#include "backend/ir/expr_parser.h"
#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <stdexcept>
#include "backend/ir/ir.h"

namespace cdynamo::runtime {
namespace {

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  return s.substr(start);
}

std::string unquote(const std::string& s) {
  if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front()) return s.substr(1, s.size() - 2);
  return s;
}

}  // namespace

at::ScalarType scalar_type_of(ir::DType d) {
  using ir::DType;
  switch (d) {
    case DType::Bool: return at::kBool;
    case DType::UInt8: return at::kByte;
    case DType::Int8: return at::kChar;
    case DType::Int16: return at::kShort;
    case DType::Int32: return at::kInt;
    case DType::Int64: return at::kLong;
    case DType::Float16: return at::kHalf;
    case DType::BFloat16: return at::kBFloat16;
    case DType::Float32: return at::kFloat;
    case DType::Float64: return at::kDouble;
  }
  return at::kFloat;
}

namespace {

at::ScalarType parse_dtype(const std::string& text) {
  static const std::map<std::string, at::ScalarType> aliases = {
      {"torch.float", at::kFloat},         {"torch.double", at::kDouble},       {"torch.half", at::kHalf},
      {"torch.long", at::kLong},           {"torch.int", at::kInt},             {"torch.short", at::kShort},
      {"torch.complex64", at::kComplexFloat}, {"torch.complex128", at::kComplexDouble}, {"torch.cfloat", at::kComplexFloat},
      {"torch.cdouble", at::kComplexDouble}};
  std::string name = unquote(text);
  if (name.rfind("torch.", 0) != 0) name = "torch." + name;
  auto it = aliases.find(name);
  if (it != aliases.end()) return it->second;
  return scalar_type_of(ir::dtype_from_torch_name(name));
}

double parse_float(const std::string& s) {
  if (s == "inf" || s == "math.inf" || s == "float('inf')") return std::numeric_limits<double>::infinity();
  if (s == "-inf" || s == "-math.inf" || s == "float('-inf')") return -std::numeric_limits<double>::infinity();
  if (s == "nan" || s == "math.nan" || s == "float('nan')") return std::numeric_limits<double>::quiet_NaN();
  size_t used = 0;
  double v = std::stod(s, &used);
  if (used != s.size()) throw std::invalid_argument(s);
  return v;
}

int64_t parse_int(const std::string& s) {
  if (s == "True") return 1;
  if (s == "False") return 0;
  size_t used = 0;
  long long v = std::stoll(s, &used);
  if (used != s.size()) throw std::invalid_argument(s);
  return v;
}

bool parse_bool(const std::string& s) {
  if (s == "True" || s == "true" || s == "1") return true;
  if (s == "False" || s == "false" || s == "0") return false;
  throw std::invalid_argument(s);
}

std::vector<std::string> parse_list(const std::string& text) {
  std::string s = trim(text);
  if (!s.empty() && (s.front() == '[' || s.front() == '(')) s = s.substr(1, s.size() - 2);
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    std::string item = trim(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (!item.empty()) items.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

c10::MemoryFormat parse_memory_format(const std::string& s) {
  std::string name = unquote(s);
  if (name == "torch.contiguous_format") return c10::MemoryFormat::Contiguous;
  if (name == "torch.channels_last") return c10::MemoryFormat::ChannelsLast;
  if (name == "torch.channels_last_3d") return c10::MemoryFormat::ChannelsLast3d;
  if (name == "torch.preserve_format") return c10::MemoryFormat::Preserve;
  throw std::invalid_argument(s);
}

c10::Device parse_device(const std::string& s) {
  std::string name = unquote(s);
  // device(type='cuda', index=0) as repr() prints it
  if (name.rfind("device(", 0) == 0) {
    size_t t = name.find("type='");
    std::string type = name.substr(t + 6, name.find('\'', t + 6) - t - 6);
    size_t i = name.find("index=");
    if (i != std::string::npos) type += ":" + trim(name.substr(i + 6, name.find(')', i) - i - 6));
    name = type;
  }
  return c10::Device(name);
}

}  // namespace

c10::IValue parse_constant(const std::string& raw, const c10::TypePtr& type, std::optional<int32_t> n) {
  const std::string s = trim(raw);
  switch (type->kind()) {
    case c10::TypeKind::OptionalType:
      if (s == "None") return c10::IValue();
      return parse_constant(s, type->expectRef<c10::OptionalType>().getElementType(), n);
    case c10::TypeKind::NoneType: return c10::IValue();
    case c10::TypeKind::IntType:
    case c10::TypeKind::SymIntType: return c10::IValue(parse_int(s));
    case c10::TypeKind::FloatType:
    case c10::TypeKind::SymFloatType: return c10::IValue(parse_float(s));
    case c10::TypeKind::BoolType:
    case c10::TypeKind::SymBoolType: return c10::IValue(parse_bool(s));
    case c10::TypeKind::NumberType: {
      if (s == "True" || s == "False") return c10::IValue(at::Scalar(s == "True"));
      bool floating = s.find_first_of(".eEn") != std::string::npos;  // 1.5, 1e3, inf, nan
      return floating ? c10::IValue(at::Scalar(parse_float(s))) : c10::IValue(at::Scalar(parse_int(s)));
    }
    case c10::TypeKind::StringType: return c10::IValue(unquote(s));
    case c10::TypeKind::ScalarTypeType: return c10::IValue(parse_dtype(s));
    case c10::TypeKind::LayoutType: {
      std::string name = unquote(s);
      if (name == "torch.strided") return c10::IValue(at::kStrided);
      if (name == "torch.sparse_coo") return c10::IValue(at::kSparse);
      throw std::invalid_argument(s);
    }
    case c10::TypeKind::MemoryFormatType: return c10::IValue(parse_memory_format(s));
    case c10::TypeKind::DeviceObjType: return c10::IValue(parse_device(s));
    case c10::TypeKind::ListType: {
      const c10::TypePtr& elem = type->expectRef<c10::ListType>().getElementType();
      std::vector<std::string> items = parse_list(s);
      // int[2] stride=1 means [1, 1], as Python callers may write it.
      if (n && items.size() == 1 && s.front() != '[' && s.front() != '(') items.assign(static_cast<size_t>(*n), items[0]);
      switch (elem->kind()) {
        case c10::TypeKind::IntType:
        case c10::TypeKind::SymIntType: {
          std::vector<int64_t> v;
          for (const std::string& item : items) v.push_back(parse_int(item));
          return c10::IValue(v);
        }
        case c10::TypeKind::FloatType: {
          std::vector<double> v;
          for (const std::string& item : items) v.push_back(parse_float(item));
          return c10::IValue(v);
        }
        case c10::TypeKind::BoolType: {
          c10::List<bool> v;
          for (const std::string& item : items) v.push_back(parse_bool(item));
          return c10::IValue(v);
        }
        case c10::TypeKind::NumberType: {
          c10::List<at::Scalar> v;
          for (const std::string& item : items) v.push_back(parse_constant(item, elem, std::nullopt).toScalar());
          return c10::IValue(v);
        }
        case c10::TypeKind::OptionalType: {  // Scalar?[] (oneDNN post-op scalars)
          const c10::TypePtr& inner = elem->expectRef<c10::OptionalType>().getElementType();
          if (inner->kind() != c10::TypeKind::NumberType) break;
          c10::List<std::optional<at::Scalar>> v;
          for (const std::string& item : items)
            v.push_back(trim(item) == "None" ? std::optional<at::Scalar>() : parse_constant(item, inner, std::nullopt).toScalar());
          return c10::IValue(v);
        }
        default: break;
      }
      break;
    }
    default: break;
  }
  throw std::invalid_argument("no constant form for type " + type->str());
}

// An extern's int or int[] argument that names size symbols ("[s0, 768]"): its expressions.
std::optional<std::vector<ir::Expr>> symbolic_ints(const std::string& text, const c10::TypePtr& type, bool& is_list) {
  if (text == "None" || std::none_of(text.begin(), text.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); }))
    return std::nullopt;
  c10::TypePtr t = type->kind() == c10::TypeKind::OptionalType ? type->expectRef<c10::OptionalType>().getElementType() : type;
  is_list = t->kind() == c10::TypeKind::ListType;
  c10::TypePtr item = is_list ? t->expectRef<c10::ListType>().getElementType() : t;
  if (item->kind() != c10::TypeKind::IntType && item->kind() != c10::TypeKind::SymIntType) return std::nullopt;
  std::string inner = text;
  if (is_list) {
    if (inner.size() < 2 || inner.front() != '[' || inner.back() != ']') return std::nullopt;
    inner = inner.substr(1, inner.size() - 2);
  }
  std::vector<ir::Expr> out;  // items split at commas outside parentheses
  int depth = 0;
  size_t start = 0;
  for (size_t k = 0; k <= inner.size(); ++k) {
    if (k < inner.size() && inner[k] == '(') ++depth;
    if (k < inner.size() && inner[k] == ')') --depth;
    if (k == inner.size() || (inner[k] == ',' && depth == 0)) {
      std::string item_text = inner.substr(start, k - start);
      if (item_text.find_first_not_of(' ') != std::string::npos) out.push_back(ir::parse_expr(item_text));
      start = k + 1;
    }
  }
  return out;
}

}  // namespace cdynamo::runtime
