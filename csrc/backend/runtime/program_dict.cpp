// Parsing the plain-Python program description of program_dict.h into ir::Program.
// Assumes the GIL is held and the description outlives the call (tuples memoized by identity).
#include "backend/runtime/program_dict.h"
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include "backend/ir/expr_parser.h"
#include "common/error.h"
#include "common/py_import.h"

namespace cdynamo::runtime {
namespace {

[[noreturn]] void bad(const std::string& what) { throw UserError("program description: " + what, PyExc_ValueError); }

Handle get(Handle dict, const char* key, bool required = true) {
  if (!PyDict_Check(dict.ptr())) bad(std::string("expected a dict holding '") + key + "'");
  PyObject* v = PyDict_GetItemString(dict.ptr(), key);  // borrowed
  if (!v && required) bad(std::string("missing '") + key + "' in " + to_std_string(dict));
  return v;
}

std::string text(Handle obj) {
  if (!PyUnicode_Check(obj.ptr())) bad("expected a string, got " + to_std_string(obj));
  return PyUnicode_AsUTF8(obj.ptr());
}

std::vector<Handle> items(Handle seq) {
  if (!PyList_Check(seq.ptr()) && !PyTuple_Check(seq.ptr())) bad("expected a list, got " + to_std_string(seq));
  std::vector<Handle> out;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
  PyObject** raw = PySequence_Fast_ITEMS(seq.ptr());
  for (Py_ssize_t k = 0; k < n; ++k) out.push_back(raw[k]);
  return out;
}

std::vector<std::string> names(Handle seq) {
  std::vector<std::string> out;
  for (Handle h : items(seq)) out.push_back(text(h));
  return out;
}

ir::Expr expr(Handle obj) {
  if (PyLong_Check(obj.ptr())) {
    long long v = PyLong_AsLongLong(obj.ptr());
    if (v == -1 && PyErr_Occurred()) throw PythonError();
    return ir::Expr(static_cast<int64_t>(v));
  }
  return ir::parse_expr(text(obj));
}

std::vector<ir::Expr> exprs(Handle seq) {
  std::vector<ir::Expr> out;
  for (Handle h : items(seq)) out.push_back(expr(h));
  return out;
}

ir::DType dtype(Handle obj) {
  std::string name = to_std_string(obj);
  for (int k = 0; k <= static_cast<int>(ir::DType::Float64); ++k) {
    auto d = static_cast<ir::DType>(k);
    if (name == ir::dtype_name(d)) return d;
  }
  if (name.rfind("torch.", 0) != 0) name = "torch." + name;
  return ir::dtype_from_torch_name(name);
}

ir::ScalarOp scalar_op(const std::string& name) {
#define CDYNAMO_PARSE_OP(op, arity, doc) \
  if (name == #op) return ir::ScalarOp::op;
  CDYNAMO_SCALAR_OPS(CDYNAMO_PARSE_OP)
#undef CDYNAMO_PARSE_OP
  bad("unknown scalar op " + name);
}

ir::ReductionType reduction_type(const std::string& name) {
#define CDYNAMO_PARSE_REDUCTION(r) \
  if (name == #r) return ir::ReductionType::r;
  CDYNAMO_REDUCTION_TYPES(CDYNAMO_PARSE_REDUCTION)
#undef CDYNAMO_PARSE_REDUCTION
  bad("unknown reduction type " + name);
}

class ScalarParser {
 public:
  ir::Scalar parse(Handle obj) {
    auto it = memo_.find(obj.ptr());
    if (it != memo_.end()) return it->second;
    if (!PyTuple_Check(obj.ptr()) || PyTuple_GET_SIZE(obj.ptr()) < 2) bad("a scalar is a tuple (op, dtype, ...), got " + to_std_string(obj));
    std::vector<Handle> t = items(obj);
    std::string op_name = text(t[0]);
    ir::DType dt = dtype(t[1]);
    ir::Scalar result;
    auto need = [&](size_t n) {
      if (t.size() != n) bad(op_name + " takes " + std::to_string(n - 2) + " operands: " + to_std_string(obj));
    };
    if (op_name == "Load") {
      if (t.size() != 5) need(4);
      result = with_indirect(ir::load(text(t[2]), dt, expr(t[3])), t.size() == 5 ? t[4] : Handle());
    } else if (op_name == "MaskedLoad") {
      if (t.size() != 7) need(6);
      result = with_indirect(ir::masked_load(parse(t[4]), text(t[2]), dt, expr(t[3]), parse(t[5])),
                             t.size() == 7 ? t[6] : Handle());
    } else if (op_name == "Index") {
      need(3);
      result = ir::index_value(expr(t[2]), dt);
    } else if (op_name == "Constant") {
      need(3);
      result = constant(t[2], dt);
    } else {
      ir::ScalarOp op = scalar_op(op_name);
      need(2 + static_cast<size_t>(ir::scalar_op_arity(op)));
      std::vector<ir::Scalar> args;
      for (size_t k = 2; k < t.size(); ++k) args.push_back(parse(t[k]));
      auto node = std::make_shared<ir::ScalarNode>();
      node->op = op;
      node->dtype = dt;
      node->args = std::move(args);
      result = node;
    }
    memo_.emplace(obj.ptr(), result);
    return result;
  }

 private:
  // A load's optional trailing list of (position S, size) pairs: ind0, ind1, ... in order.
  ir::Scalar with_indirect(ir::Scalar load, Handle pairs) {
    if (!pairs) return load;
    auto node = std::make_shared<ir::ScalarNode>(*load);
    for (Handle pair : items(pairs)) {
      std::vector<Handle> ps = items(pair);
      if (ps.size() != 2) bad("an indirect position is a pair (position, size), got " + to_std_string(pair));
      node->indirect.push_back(parse(ps[0]));
      node->indirect_sizes.push_back(expr(ps[1]));
    }
    return node;
  }

  static ir::Scalar constant(Handle v, ir::DType dt) {
    if (PyBool_Check(v.ptr())) return ir::constant_int(v.ptr() == Py_True ? 1 : 0, dt);
    if (PyLong_Check(v.ptr())) {
      long long x = PyLong_AsLongLong(v.ptr());
      if (x == -1 && PyErr_Occurred()) throw PythonError();
      return ir::constant_int(x, dt);
    }
    double d = 0;
    if (PyUnicode_Check(v.ptr())) {
      std::string s = text(v);
      if (s == "inf") d = INFINITY;
      else if (s == "-inf") d = -INFINITY;
      else if (s == "nan") d = NAN;
      else bad("constant " + s);
    } else {
      d = PyFloat_AsDouble(v.ptr());
      if (d == -1 && PyErr_Occurred()) throw PythonError();
    }
    return ir::constant(d, dt);
  }

  std::unordered_map<PyObject*, ir::Scalar> memo_;
};

// Python values as the constant text the runtime parses against the schema.
std::string constant_text(Handle v) {
  if (v.ptr() == Py_None) return "None";
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True ? "True" : "False";
  if (PyList_Check(v.ptr()) || PyTuple_Check(v.ptr())) {
    std::string out = "[";
    std::vector<Handle> elems = items(v);
    for (size_t k = 0; k < elems.size(); ++k) out += (k ? ", " : "") + constant_text(elems[k]);
    return out + "]";
  }
  if (PyFloat_Check(v.ptr())) return to_std_string(check(PyObject_Repr(v.ptr())));
  return to_std_string(v);
}

ir::ExternArg extern_arg(Handle a) {
  ir::ExternArg arg;
  arg.tensor = std::monostate{};
  if (PyUnicode_Check(a.ptr())) {
    arg.tensor = text(a);
  } else if (PyList_Check(a.ptr()) && !items(a).empty() && PyUnicode_Check(items(a)[0].ptr())) {
    arg.tensor = names(a);
  } else if (PyDict_Check(a.ptr())) {
    if (Handle n = get(a, "name", false)) arg.name = text(n);
    if (Handle b = get(a, "buffer", false)) arg.tensor = text(b);
    else if (Handle bs = get(a, "buffers", false)) arg.tensor = names(bs);
    else arg.constant = constant_text(get(a, "constant"));
  } else {
    arg.constant = constant_text(a);
  }
  return arg;
}

ir::Buffer::Kind buffer_kind(const std::string& s) {
  if (s == "input") return ir::Buffer::Kind::Input;
  if (s == "constant") return ir::Buffer::Kind::Constant;
  if (s == "intermediate") return ir::Buffer::Kind::Intermediate;
  if (s == "output") return ir::Buffer::Kind::Output;
  bad("unknown buffer kind " + s);
}

// Kernel inputs/outputs/locals when the description leaves them out.
void infer_kernel_buffers(ir::Program& program, size_t step_index) {
  auto& kernel = std::get<ir::Kernel>(program.steps[step_index]);
  std::vector<std::string> produced, reads;
  for (const ir::Node& n : kernel.nodes) {
    const ir::Scalar& body = std::holds_alternative<ir::Pointwise>(n) ? std::get<ir::Pointwise>(n).body : std::get<ir::Reduction>(n).body;
    std::vector<const ir::ScalarNode*> stack{body.get()};
    std::set<const ir::ScalarNode*> seen;
    while (!stack.empty()) {
      const ir::ScalarNode* s = stack.back();
      stack.pop_back();
      if (!seen.insert(s).second) continue;
      if ((s->op == ir::ScalarOp::Load || s->op == ir::ScalarOp::MaskedLoad) &&
          std::find(reads.begin(), reads.end(), s->buffer) == reads.end() &&
          std::find(produced.begin(), produced.end(), s->buffer) == produced.end())
        reads.push_back(s->buffer);
      for (const ir::Scalar& a : s->args) stack.push_back(a.get());
      for (const ir::Scalar& a : s->indirect) stack.push_back(a.get());
    }
    produced.push_back(std::holds_alternative<ir::Pointwise>(n) ? std::get<ir::Pointwise>(n).output : std::get<ir::Reduction>(n).output);
  }
  // Read later: by a later kernel's loads, an extern's arguments, or the program's outputs.
  std::set<std::string> later(program.outputs.begin(), program.outputs.end());
  for (size_t k = step_index + 1; k < program.steps.size(); ++k) {
    if (const auto* x = std::get_if<ir::Extern>(&program.steps[k])) {
      for (const ir::ExternArg& a : x->args) {
        if (const auto* b = std::get_if<std::string>(&a.tensor)) later.insert(*b);
        if (const auto* bs = std::get_if<std::vector<std::string>>(&a.tensor)) later.insert(bs->begin(), bs->end());
      }
    } else {
      const auto& other = std::get<ir::Kernel>(program.steps[k]);
      later.insert(other.inputs.begin(), other.inputs.end());
    }
  }
  kernel.inputs = reads;
  kernel.outputs.clear();
  kernel.locals.clear();
  for (const std::string& p : produced) {
    bool out = later.count(p) || program.buffer(p).kind == ir::Buffer::Kind::Output;
    (out ? kernel.outputs : kernel.locals).push_back(p);
  }
}

}  // namespace

ir::Program program_from_dict(Handle d) {
  ir::Program program;
  for (Handle b : items(get(d, "buffers"))) {
    ir::Buffer buffer;
    buffer.name = text(get(b, "name"));
    if (Handle k = get(b, "kind", false)) buffer.kind = buffer_kind(text(k));
    if (Handle t = get(b, "dtype", false)) buffer.dtype = dtype(t);
    buffer.sizes = exprs(get(b, "sizes"));
    Handle strides = get(b, "strides", false);
    buffer.strides = strides ? exprs(strides) : ir::contiguous_strides(buffer.sizes);
    if (Handle o = get(b, "offset", false)) buffer.offset = expr(o);
    if (Handle r = get(b, "reuses", false)) buffer.reuses = text(r);
    if (Handle c = get(b, "cached", false)) buffer.cached = PyObject_IsTrue(c.ptr()) == 1;
    if (Handle dev = get(b, "device", false)) buffer.device = text(dev);
    program.buffers.push_back(std::move(buffer));
  }
  if (Handle in = get(d, "inputs", false)) {
    program.inputs = names(in);
  } else {
    for (const ir::Buffer& b : program.buffers)
      if (b.kind == ir::Buffer::Kind::Input) program.inputs.push_back(b.name);
  }
  program.outputs = names(get(d, "outputs"));

  ScalarParser scalars;
  std::vector<size_t> to_infer;
  for (Handle s : items(get(d, "steps"))) {
    if (Handle name = get(s, "kernel", false)) {
      ir::Kernel k;
      k.name = text(name);
      k.ranges = exprs(get(s, "ranges"));
      if (Handle rr = get(s, "reduction_ranges", false)) k.reduction_ranges = exprs(rr);
      for (Handle n : items(get(s, "nodes"))) {
        if (Handle out = get(n, "pointwise", false)) {
          // "full": over ranges ++ reduction_ranges (i{n+j} is r{j}), see ir::Kernel.
          std::vector<ir::Expr> ranges = k.ranges;
          Handle full = get(n, "full", false);
          if (full && PyObject_IsTrue(full.ptr()) == 1) ranges.insert(ranges.end(), k.reduction_ranges.begin(), k.reduction_ranges.end());
          k.nodes.push_back(ir::Pointwise{text(out), ranges, scalars.parse(get(n, "body"))});
        } else {
          k.nodes.push_back(ir::Reduction{text(get(n, "reduction")), k.ranges, k.reduction_ranges,
                                          reduction_type(text(get(n, "type"))), scalars.parse(get(n, "body"))});
        }
      }
      Handle ins = get(s, "inputs", false), outs = get(s, "outputs", false), locs = get(s, "locals", false);
      if (ins || outs || locs) {
        if (ins) k.inputs = names(ins);
        if (outs) k.outputs = names(outs);
        if (locs) k.locals = names(locs);
      } else {
        to_infer.push_back(program.steps.size());
      }
      program.steps.push_back(std::move(k));
    } else {
      ir::Extern x;
      x.op = text(get(s, "extern"));
      Handle overload = get(s, "overload", false);
      x.overload = overload ? text(overload) : "default";
      for (Handle a : items(get(s, "args"))) x.args.push_back(extern_arg(a));
      x.outputs = names(get(s, "outputs"));
      program.steps.push_back(std::move(x));
    }
  }
  // Later kernels first: an earlier kernel's outputs depend on what later kernels read.
  for (size_t k = to_infer.size(); k-- > 0;) infer_kernel_buffers(program, to_infer[k]);
  if (Handle frees = get(d, "frees", false)) {
    for (Handle f : items(frees)) program.frees.push_back(names(f));
  }
  program.frees.resize(program.steps.size());
  ir::verify(program);
  return program;
}

}  // namespace cdynamo::runtime
