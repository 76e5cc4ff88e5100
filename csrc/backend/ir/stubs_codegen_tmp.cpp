// TEMPORARY (codegen branch only): minimal ir::to_string and ir::verify until the IR engineer's
// ir_printer/ir_verify land. The lead deletes this file at merge; nothing else depends on its text.
#include "backend/ir/ir.h"

namespace cdynamo::ir {

std::string to_string(const Expr& e) { return e.py_str(); }

std::string to_string(const Scalar& s) {
  std::string out = std::string(scalar_op_name(s->op)) + "[" + dtype_name(s->dtype) + "](";
  if (!s->buffer.empty()) out += s->buffer + ", ";
  if (s->op == ScalarOp::Load || s->op == ScalarOp::MaskedLoad || s->op == ScalarOp::Index) out += s->index.py_str();
  if (s->op == ScalarOp::Constant) out += std::visit([](auto v) { return std::to_string(v); }, s->constant);
  for (size_t k = 0; k < s->args.size(); ++k) out += (k || !s->buffer.empty() ? ", " : "") + to_string(s->args[k]);
  return out + ")";
}

std::string to_string(const Node& n) {
  if (const auto* p = std::get_if<Pointwise>(&n)) return p->output + " = pointwise " + to_string(p->body);
  if (const auto* r = std::get_if<Reduction>(&n))
    return r->output + " = " + reduction_type_name(r->type) + " " + to_string(r->body);
  const auto& x = std::get<Extern>(n);
  return "extern " + x.op + "." + x.overload;
}

std::string to_string(const Program& p) {
  std::string out;
  for (const Buffer& b : p.buffers) {
    out += "buffer " + b.name + " " + dtype_name(b.dtype) + " [";
    for (size_t k = 0; k < b.sizes.size(); ++k) out += (k ? ", " : "") + b.sizes[k].py_str();
    out += "]\n";
  }
  for (const Step& s : p.steps) {
    if (const auto* k = std::get_if<Kernel>(&s)) {
      out += "kernel " + k->name + "\n";
      for (const Node& n : k->nodes) out += "  " + to_string(n) + "\n";
    } else {
      out += to_string(Node(std::get<Extern>(s))) + "\n";
    }
  }
  return out;
}

void verify(const Program&) {}

}  // namespace cdynamo::ir
