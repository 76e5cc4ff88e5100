// The stable text form of the IR: expressions, scalar bodies as SSA lines, buffers, nodes,
// kernels and programs. Assumes output is compared verbatim by golden tests: change with care.
#include "backend/ir/recursion_guard.h"
#include <charconv>
#include <cmath>
#include <map>
#include <sstream>
#include "backend/ir/ir.h"

namespace cdynamo::ir {
namespace {

// Python-like syntax without the outermost parentheses: "8*i0 + i1", "i1 // 4".
std::string expr_text(const Expr& e) {
  std::string text = e.py_str();
  if (text.size() >= 2 && text.front() == '(' && text.back() == ')') {
    int depth = 0;
    bool outer_pair = true;
    for (size_t i = 0; i < text.size(); ++i) {
      depth += text[i] == '(' ? 1 : text[i] == ')' ? -1 : 0;
      if (depth == 0 && i + 1 < text.size()) outer_pair = false;
    }
    if (outer_pair) return text.substr(1, text.size() - 2);
  }
  return text;
}

std::string list_text(const std::vector<Expr>& exprs) {
  std::string out = "[";
  for (size_t i = 0; i < exprs.size(); ++i) out += (i ? ", " : "") + expr_text(exprs[i]);
  return out + "]";
}

std::string names_text(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

// Shortest round-tripping decimal for doubles; inf/nan spelled like Python.
std::string double_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), v);
  std::string text(buffer, result.ptr);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

std::string constant_text(const ScalarNode& node) {
  if (auto* d = std::get_if<double>(&node.constant)) return double_text(*d);
  if (auto* i = std::get_if<int64_t>(&node.constant)) return std::to_string(*i);
  return std::get<bool>(node.constant) ? "True" : "False";
}

// Numbers the distinct nodes of a scalar DAG in dependency order and prints one line each.
class ScalarPrinter {
 public:
  explicit ScalarPrinter(std::string indent) : indent_(std::move(indent)) {}

  std::string print(const Scalar& root) {
    visit(root);
    return out_.str();
  }
  int id_of(const Scalar& s) const { return ids_.at(s.get()); }

 private:
  void visit(const Scalar& s) {
    if (ids_.count(s.get())) return;
    RecursionGuard recursion("a scalar graph to print");
    for (const Scalar& arg : s->args) visit(arg);
    for (const Scalar& position : s->indirect) visit(position);
    int id = static_cast<int>(ids_.size());
    ids_[s.get()] = id;
    out_ << indent_ << "%" << id << " = " << line(*s) << " : " << dtype_name(s->dtype) << "\n";
  }

  std::string ref(const Scalar& s) const { return "%" + std::to_string(ids_.at(s.get())); }

  std::string line(const ScalarNode& s) const {
    std::string text;
    switch (s.op) {
      case ScalarOp::Constant: return "const " + constant_text(s);
      case ScalarOp::Index: return "index " + expr_text(s.index);
      case ScalarOp::Load:
      case ScalarOp::MaskedLoad: {
        text = s.op == ScalarOp::Load ? "load " : "masked_load ";
        if (s.op == ScalarOp::MaskedLoad) text += ref(s.args[0]) + " ? ";
        text += s.buffer + "[" + expr_text(s.index) + "]";
        if (s.op == ScalarOp::MaskedLoad) text += " : " + ref(s.args[1]);
        for (size_t k = 0; k < s.indirect.size(); ++k)
          text += (k ? ", " : " with ") + indirect_var(k) + "=" + ref(s.indirect[k]) +
                  (k < s.indirect_sizes.size() ? " < " + expr_text(s.indirect_sizes[k]) : "");
        return text;
      }
      default: {
        text = scalar_op_name(s.op);
        for (size_t k = 0; k < s.args.size(); ++k) text += (k ? ", " : " ") + ref(s.args[k]);
        return text;
      }
    }
  }

  std::string indent_;
  std::map<const ScalarNode*, int> ids_;
  std::ostringstream out_;
};

const char* kind_name(Buffer::Kind kind) {
  switch (kind) {
    case Buffer::Kind::Input: return "input";
    case Buffer::Kind::Constant: return "constant";
    case Buffer::Kind::Intermediate: return "buffer";
    case Buffer::Kind::Output: return "output";
  }
  return "?";
}

std::string node_text(const Node& node, const std::string& indent) {
  std::ostringstream out;
  if (auto* p = std::get_if<Pointwise>(&node)) {
    ScalarPrinter printer(indent + "  ");
    std::string body = printer.print(p->body);
    out << indent << p->output << " = pointwise " << list_text(p->ranges) << " {\n"
        << body << indent << "  store %" << printer.id_of(p->body) << "\n" << indent << "}\n";
  } else if (auto* r = std::get_if<Reduction>(&node)) {
    ScalarPrinter printer(indent + "  ");
    std::string body = printer.print(r->body);
    out << indent << r->output << " = reduce " << reduction_type_name(r->type) << " " << list_text(r->ranges)
        << " over " << list_text(r->reduction_ranges) << " {\n"
        << body << indent << "  reduce %" << printer.id_of(r->body) << "\n" << indent << "}\n";
  } else {
    const Extern& e = std::get<Extern>(node);
    out << indent << names_text(e.outputs) << " = extern " << e.op << "." << e.overload << "(";
    for (size_t k = 0; k < e.args.size(); ++k) {
      const ExternArg& arg = e.args[k];
      out << (k ? ", " : "") << (arg.name.empty() ? "" : arg.name + "=");
      if (auto* buffer = std::get_if<std::string>(&arg.tensor)) {
        out << *buffer;
      } else if (auto* buffers = std::get_if<std::vector<std::string>>(&arg.tensor)) {
        out << "[";
        for (size_t b = 0; b < buffers->size(); ++b) out << (b ? ", " : "") << ((*buffers)[b].empty() ? "None" : (*buffers)[b]);
        out << "]";
      } else {
        out << arg.constant;
      }
    }
    out << ")\n";
  }
  return out.str();
}

}  // namespace

std::string to_string(const Expr& e) { return expr_text(e); }

std::string to_string(const Scalar& s) { return ScalarPrinter("").print(s); }

std::string to_string(const Buffer& b) {
  std::string text = b.name + ": " + kind_name(b.kind) + " " + dtype_name(b.dtype) + " " + list_text(b.sizes) +
                     " strides " + list_text(b.strides);
  if (!b.offset.is_const(0)) text += " offset " + expr_text(b.offset);
  if (!b.reuses.empty()) text += " reuses " + b.reuses;
  if (b.device != "cpu") text += " on " + b.device;
  if (b.cached) text += " cached";
  return text;
}

std::string to_string(const Node& n) { return node_text(n, ""); }

std::string to_string(const Kernel& k) {
  std::ostringstream out;
  out << k.name << " " << list_text(k.ranges);
  if (!k.reduction_ranges.empty()) out << " reduce " << list_text(k.reduction_ranges);
  out << " (inputs: " << names_text(k.inputs) << "; outputs: " << names_text(k.outputs);
  if (!k.locals.empty()) out << "; locals: " << names_text(k.locals);
  out << ")\n";
  for (const Node& node : k.nodes) out << node_text(node, "  ");
  return out.str();
}

std::string to_string(const Program& p) {
  std::ostringstream out;
  out << "inputs: " << names_text(p.inputs) << "\n";
  out << "outputs: " << names_text(p.outputs) << "\n";
  for (const Buffer& b : p.buffers) out << "  " << to_string(b) << "\n";
  for (size_t k = 0; k < p.steps.size(); ++k) {
    if (auto* kernel = std::get_if<Kernel>(&p.steps[k])) out << to_string(*kernel);
    else out << node_text(std::get<Extern>(p.steps[k]), "");
    if (k < p.frees.size() && !p.frees[k].empty()) out << "free " << names_text(p.frees[k]) << "\n";
  }
  return out.str();
}

}  // namespace cdynamo::ir
