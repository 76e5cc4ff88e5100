// Program <-> bytes for the compiled-graph cache: a flat stream of length-prefixed fields
// ("5:hello"), so any string (names, quoted constants) round-trips and a reader can bound-check.
// Sizes are expressions in ir::parse_expr's syntax; symbolic programs carry their symbol table.
#include "backend/runtime/program_blob.h"
#include <charconv>
#include "backend/ir/expr_parser.h"
#include "common/error.h"

namespace cdynamo::runtime {
namespace {

// Bump on any change of the layout below: an older blob is then rejected (a cache miss).
constexpr std::string_view kMagic = "cdynamo-program-v3";

class Writer {
 public:
  void str(std::string_view s) {
    out_ += std::to_string(s.size());
    out_ += ':';
    out_ += s;
  }
  void num(int64_t v) { str(std::to_string(v)); }
  // Python syntax, which parse_expr reads back (constants print as plain integers).
  void expr(const ir::Expr& e) { str(e.py_str()); }
  void exprs(const std::vector<ir::Expr>& v) {
    num(static_cast<int64_t>(v.size()));
    for (const ir::Expr& e : v) expr(e);
  }
  void strs(const std::vector<std::string>& v) {
    num(static_cast<int64_t>(v.size()));
    for (const std::string& s : v) str(s);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

[[noreturn]] void corrupt(const std::string& why) { throw UserError("corrupt compiled-graph cache entry: " + why, PyExc_ValueError); }

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  std::string_view str() {
    size_t colon = data_.find(':', pos_);
    if (colon == std::string_view::npos || colon == pos_ || colon - pos_ > 12) corrupt("bad field length");
    size_t length = 0;
    auto [end, ec] = std::from_chars(data_.data() + pos_, data_.data() + colon, length);
    if (ec != std::errc() || end != data_.data() + colon) corrupt("bad field length");
    if (length > data_.size() - colon - 1) corrupt("truncated");
    std::string_view field = data_.substr(colon + 1, length);
    pos_ = colon + 1 + length;
    return field;
  }
  int64_t num() {
    std::string_view s = str();
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) corrupt("bad number");
    return v;
  }
  // A count of following items, bounded by what the remaining bytes could hold (2 bytes each).
  size_t count() {
    int64_t n = num();
    if (n < 0 || static_cast<size_t>(n) > (data_.size() - pos_) / 2 + 1) corrupt("bad count");
    return static_cast<size_t>(n);
  }
  ir::Expr expr() {
    std::string text(str());
    try {
      return ir::parse_expr(text);
    } catch (const UserError&) {
      corrupt("bad size expression");
    }
  }
  std::vector<ir::Expr> exprs() {
    std::vector<ir::Expr> v(count(), ir::Expr(0));
    for (ir::Expr& e : v) e = expr();
    return v;
  }
  std::vector<std::string> strs() {
    std::vector<std::string> v(count());
    for (std::string& s : v) s = std::string(str());
    return v;
  }
  // An argument position or dimension: small and non-negative.
  int small_int() {
    int64_t v = num();
    if (v < 0 || v > (1 << 20)) corrupt("bad argument position");
    return static_cast<int>(v);
  }
  bool at_end() const { return pos_ == data_.size(); }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

template <class Enum>
Enum enum_in_range(int64_t v, Enum last) {
  if (v < 0 || v > static_cast<int64_t>(last)) corrupt("enum out of range");
  return static_cast<Enum>(v);
}

void write_extern(Writer& w, const ir::Extern& x) {
  w.str(x.op);
  w.str(x.overload);
  w.num(static_cast<int64_t>(x.args.size()));
  for (const ir::ExternArg& a : x.args) {
    if (const auto* buffer = std::get_if<std::string>(&a.tensor)) {
      w.str("b");
      w.str(*buffer);
    } else if (const auto* list = std::get_if<std::vector<std::string>>(&a.tensor)) {
      w.str("l");
      w.strs(*list);
    } else {
      w.str("c");
      w.str(a.constant);
    }
    w.str(a.name);
  }
  w.strs(x.outputs);
}

ir::Extern read_extern(Reader& r) {
  ir::Extern x;
  x.op = r.str();
  x.overload = r.str();
  x.args.resize(r.count());
  for (ir::ExternArg& a : x.args) {
    std::string_view tag = r.str();
    if (tag == "b") a.tensor = std::string(r.str());
    else if (tag == "l") a.tensor = r.strs();
    else if (tag == "c") {
      a.tensor = std::monostate{};
      a.constant = r.str();
    } else {
      corrupt("bad extern argument tag");
    }
    a.name = r.str();
  }
  x.outputs = r.strs();
  return x;
}

}  // namespace

std::string serialize_program(const ir::Program& program, const std::vector<std::string>& kernel_keys,
                              const std::vector<std::string>& kernel_symbols) {
  Writer w;
  w.str(kMagic);
  w.num(static_cast<int64_t>(program.buffers.size()));
  for (const ir::Buffer& b : program.buffers) {
    w.str(b.name);
    w.num(static_cast<int64_t>(b.kind));
    w.num(static_cast<int64_t>(b.dtype));
    w.exprs(b.sizes);
    w.exprs(b.strides);
    w.expr(b.offset);
    w.str(b.reuses);
    w.str(b.device);
    w.num(b.cached ? 1 : 0);
  }
  w.strs(program.inputs);
  w.num(static_cast<int64_t>(program.symbols.size()));
  for (const ir::Symbol& symbol : program.symbols) {
    w.str(symbol.name);
    w.num(static_cast<int64_t>(symbol.source));
    w.num(symbol.argument);
    w.num(symbol.dim);
    w.num(symbol.hint);
  }
  w.num(static_cast<int64_t>(program.input_arguments.size()));
  for (int argument : program.input_arguments) w.num(argument);
  w.num(program.arguments);
  w.strs(program.outputs);
  w.num(static_cast<int64_t>(program.steps.size()));
  size_t kernel = 0;
  for (const ir::Step& step : program.steps) {
    if (const auto* k = std::get_if<ir::Kernel>(&step)) {
      if (kernel >= kernel_keys.size() || kernel >= kernel_symbols.size()) throw InternalError("fewer kernel keys than kernels");
      w.str("k");
      w.str(k->name);
      w.strs(k->inputs);
      w.strs(k->outputs);
      w.strs(k->locals);
      w.str(kernel_keys[kernel]);
      w.str(kernel_symbols[kernel]);
      ++kernel;
    } else {
      w.str("x");
      write_extern(w, std::get<ir::Extern>(step));
    }
  }
  w.num(static_cast<int64_t>(program.frees.size()));
  for (const auto& names : program.frees) w.strs(names);
  return w.take();
}

ProgramBlob deserialize_program(std::string_view data) {
  Reader r(data);
  if (r.str() != kMagic) corrupt("unknown format version");
  ProgramBlob blob;
  ir::Program& p = blob.program;
  p.buffers.resize(r.count());
  for (ir::Buffer& b : p.buffers) {
    b.name = r.str();
    b.kind = enum_in_range(r.num(), ir::Buffer::Kind::Output);
    b.dtype = enum_in_range(r.num(), ir::DType::Float64);
    b.sizes = r.exprs();
    b.strides = r.exprs();
    b.offset = r.expr();
    b.reuses = r.str();
    b.device = r.str();
    b.cached = r.num() != 0;
  }
  p.inputs = r.strs();
  p.symbols.resize(r.count());
  for (ir::Symbol& symbol : p.symbols) {
    symbol.name = r.str();
    symbol.source = enum_in_range(r.num(), ir::Symbol::Source::Scalar);
    symbol.argument = r.small_int();
    symbol.dim = r.small_int();
    symbol.hint = r.num();
  }
  p.input_arguments.resize(r.count());
  for (int& argument : p.input_arguments) argument = r.small_int();
  p.arguments = static_cast<int>(r.num());
  if (p.arguments < -1 || p.arguments > (1 << 20)) corrupt("bad argument count");
  p.outputs = r.strs();
  size_t steps = r.count();
  for (size_t s = 0; s < steps; ++s) {
    std::string_view tag = r.str();
    if (tag == "k") {
      ir::Kernel k;
      k.name = r.str();
      k.inputs = r.strs();
      k.outputs = r.strs();
      k.locals = r.strs();
      blob.kernel_keys.emplace_back(r.str());
      blob.kernel_symbols.emplace_back(r.str());
      p.steps.emplace_back(std::move(k));
    } else if (tag == "x") {
      p.steps.emplace_back(read_extern(r));
    } else {
      corrupt("bad step tag");
    }
  }
  p.frees.resize(r.count());
  for (auto& names : p.frees) names = r.strs();
  if (!r.at_end()) corrupt("trailing bytes");
  return blob;
}

}  // namespace cdynamo::runtime
