// The extern fallback: an aten op without a lowering becomes an ir::Extern call with its
// arguments encoded per ExternArg and realized output buffers laid out as node.meta["val"].
// Assumes the node's target is an OpOverload (schema-normalised params) with tensor results.
#include "backend/lower/lowering.h"
#include "common/error.h"

namespace cdynamo::lower {
namespace {

std::string repr_of(const FxArg& arg) {
  if (!arg.object) return "None";
  Ref text = check(PyObject_Repr(arg.object.ptr()));
  const char* utf8 = PyUnicode_AsUTF8(text.ptr());
  if (!utf8) throw PythonError();
  return utf8;
}

// A non-tensor argument as text (see ExternArg in ir.h).
std::string constant_text(const FxArg& arg) {
  switch (arg.kind) {
    case FxArg::Kind::None: return "None";
    case FxArg::Kind::Bool: return arg.b ? "True" : "False";
    case FxArg::Kind::Int: return std::to_string(arg.i);
    case FxArg::Kind::SymInt: return arg.expr.py_str();  // evaluated per call by the runtime
    case FxArg::Kind::Float: return repr_of(arg);
    case FxArg::Kind::String: return repr_of(arg);
    case FxArg::Kind::List: {
      std::string out = "[";
      for (size_t k = 0; k < arg.items.size(); ++k) out += (k ? ", " : "") + constant_text(arg.items[k]);
      return out + "]";
    }
    case FxArg::Kind::Dtype:
    case FxArg::Kind::Device:
    case FxArg::Kind::Other: return arg.text;
    case FxArg::Kind::Node: break;
  }
  throw InternalError("tensor argument where a constant was expected");
}

bool holds_tensors(const FxArg& arg) {
  if (arg.is_node()) return true;
  if (arg.kind != FxArg::Kind::List) return false;
  for (const FxArg& item : arg.items)
    if (item.is_node()) return true;
  return false;
}

ir::ExternArg encode(LoweringContext& ctx, const FxArg& arg) {
  ir::ExternArg out;
  if (arg.is_node()) {
    out.tensor = ctx.buffer_for(ctx.tensor(arg), /*allow_alias=*/true);
  } else if (holds_tensors(arg)) {
    std::vector<std::string> buffers;
    for (const FxArg& item : arg.items) {
      if (item.is_none()) buffers.emplace_back();
      else if (item.is_node()) buffers.push_back(ctx.buffer_for(ctx.tensor(item), true));
      else throw UserError("extern call with a list mixing tensors and constants");
    }
    out.tensor = std::move(buffers);
  } else {
    out.tensor = std::monostate{};
    out.constant = constant_text(arg);
  }
  return out;
}

}  // namespace

Lowered lower_as_extern(LoweringContext& ctx, const FxNode& node) {
  if (node.schema_name.empty())
    throw UserError("the inductor backend cannot run " + node.target + " (not an aten operator)");
  ir::Extern call;
  call.op = node.schema_name;
  call.overload = node.overload;
  for (size_t k = 0; k < node.params.size(); ++k) {
    ir::ExternArg arg = encode(ctx, node.params[k]);
    if (node.param_kwarg_only[k]) arg.name = node.param_names[k];
    call.args.push_back(std::move(arg));
  }
  std::vector<std::optional<Value>> results;
  for (const std::optional<TensorMeta>& meta : node.meta) {
    if (!meta) {
      call.outputs.emplace_back();  // a non-tensor or None return
      results.push_back(std::nullopt);
      continue;
    }
    ir::Buffer b;
    b.name = ctx.fresh_name();
    b.dtype = meta->dtype;
    b.sizes = meta->sizes;
    b.strides = meta->strides;
    b.device = meta->device;
    b.extern_view = node.returns_alias;
    ctx.add_buffer(b);
    call.outputs.push_back(b.name);
    results.push_back(ctx.from_buffer(b.name));
  }
  if (node.meta.empty()) throw UserError(node.target + " has no tensor metadata (meta['val']); cannot call it as an extern");
  ctx.add_node(std::move(call));
  if (!node.meta_is_sequence) return Lowered::one(*results[0]);
  return Lowered::many(std::move(results));
}

}  // namespace cdynamo::lower
