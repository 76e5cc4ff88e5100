// The lowering driver: walks the aten graph in order, turning placeholders and constants into
// buffers, call_function nodes into values through the op registry (extern as the fallback),
// trailing copy_ nodes into input mutations, and the output node into returned buffers.
// Assumes a functional aten graph whose only mutations are trailing aten.copy_(input, value).
#include "backend/lower/lower.h"
#include <algorithm>
#include <sstream>
#include "backend/lower/lowering.h"
#include "common/error.h"
#include "common/py_import.h"

namespace cdynamo::lower {
namespace {

using ir::Buffer;

// How many consumers read a node's value, looking through views (a view's readers read the
// viewed storage) and getitem.
int effective_users(const FxGraph& graph, int index, std::map<int, int>& memo) {
  auto it = memo.find(index);
  if (it != memo.end()) return it->second;
  int count = 0;
  for (int user : graph.nodes[index].users) {
    const FxNode& u = graph.nodes[user];
    if (u.target == "getitem" || is_view_op(u.target)) count += effective_users(graph, user, memo);
    else ++count;
  }
  memo[index] = count;
  return count;
}

class Driver {
 public:
  Driver(FxGraph graph, const LowerOptions& options) : ctx_(std::move(graph), options) {}

  LoweredGraph run() {
    const FxGraph& graph = ctx_.graph();
    read_symbol_hints();
    for (const FxNode& node : graph.nodes) {
      require_device(node);
      if (node.op == "placeholder") lower_placeholder(node);
      else if (node.op == "get_attr") lower_constant(node);
      else if (node.op == "call_function") lower_call(node);
      else if (node.op == "output") lower_output(node);
      else throw UserError("the inductor backend does not support fx '" + node.op + "' nodes (" + node.name + ")");
    }
    finish_symbols();
    return std::move(ctx_.out());
  }

 private:
  // Kernels dereference raw pointers of one kind of device: a tensor elsewhere (CUDA for the C++
  // target, meta) would be a crash, not an error. cdynamo.inductor.targets routes such graphs
  // to aten first.
  bool on_target_device(const std::string& device) const {
    return device.compare(0, ctx_.options().device_type.size(), ctx_.options().device_type) == 0;
  }
  void require_device(const FxNode& node) const {
    for (const std::optional<TensorMeta>& meta : node.meta)
      if (meta && !on_target_device(meta->device))
        throw UserError("the inductor backend's target for " + ctx_.options().device_type + " tensors cannot compile " +
                        node.name + ", which is on " + meta->device);
  }

  // ---- symbolic sizes: where each symbol is read from on each call ----
  void read_symbol_hints() {
    auto symbolic = [](const std::vector<Expr>& list) {
      return std::any_of(list.begin(), list.end(), [](const Expr& e) { return !e.is_const(); });
    };
    bool any = false;
    for (const FxNode& node : ctx_.graph().nodes) {
      any = any || (node.symint && !node.symint->is_const());
      for (const auto& meta : node.meta) any = any || (meta && (symbolic(meta->sizes) || symbolic(meta->strides)));
    }
    if (!any) return;
    Ref hints = call_helper("cdynamo.inductor.symbolic", "symbol_hints", {ctx_.graph().module});
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(hints.ptr(), &pos, &key, &value)) {
      const char* name = PyUnicode_AsUTF8(key);
      int64_t hint = PyLong_AsLongLong(value);
      if (!name || (hint == -1 && PyErr_Occurred())) throw PythonError();
      hints_[name] = Expr(hint);
    }
  }

  void add_symbol(const Expr& e, ir::Symbol::Source source, int argument, int dim) {
    if (e.kind() != ir::ExprKind::Var) return;  // a constant, or an expression of symbols read elsewhere
    for (const ir::Symbol& known : ctx_.out().symbols)
      if (known.name == e.var_name()) return;
    auto hint = hints_.find(e.var_name());
    if (hint == hints_.end()) symbolic_unsupported("a size " + e.var_name() + " whose value is not known while compiling");
    ctx_.out().symbols.push_back({e.var_name(), source, argument, dim, hint->second.const_value()});
  }

  void add_symbol_sources(const TensorMeta& meta, int argument) {
    for (size_t d = 0; d < meta.sizes.size(); ++d) add_symbol(meta.sizes[d], ir::Symbol::Source::Size, argument, static_cast<int>(d));
    for (size_t d = 0; d < meta.strides.size(); ++d)
      add_symbol(meta.strides[d], ir::Symbol::Source::Stride, argument, static_cast<int>(d));
    add_symbol(meta.storage_offset, ir::Symbol::Source::StorageOffset, argument, 0);
  }

  // Every symbol a layout uses must be read from an argument (an unbacked size from .item() is not).
  void finish_symbols() {
    LoweredGraph& out = ctx_.out();
    if (arguments_ == static_cast<int>(out.inputs.size())) {
      out.input_arguments.clear();  // argument k is input k
    } else {
      out.arguments = arguments_;  // numbers are passed too (each a symbol, or one the guards fixed)
    }
    std::set<std::string> known;
    for (const ir::Symbol& s : out.symbols) known.insert(s.name);
    for (const Buffer& b : out.buffers)
      for (const auto* list : {&b.sizes, &b.strides})
        for (const Expr& e : *list)
          for (const std::string& v : e.free_vars())
            if (!known.count(v)) symbolic_unsupported("buffer " + b.name + ", whose size " + e.py_str() + " no input gives");
  }

  void lower_placeholder(const FxNode& node) {
    const int argument = arguments_++;
    if (node.symint) {  // a number argument: its symbol is read from it
      add_symbol(*node.symint, ir::Symbol::Source::Scalar, argument, 0);
      return;
    }
    if (node.meta.size() != 1 || !node.meta[0] || node.meta_is_sequence)
      throw UserError("graph input " + node.name + " is not a tensor; the inductor backend needs tensor inputs");
    const TensorMeta& meta = *node.meta[0];
    if (ctx_.out().inputs.empty()) ctx_.set_device(meta.device);
    Buffer b;
    b.name = node.name;
    b.kind = Buffer::Kind::Input;
    b.dtype = meta.dtype;
    b.sizes = meta.sizes;
    b.strides = meta.strides;
    b.device = meta.device;
    ctx_.add_buffer(b);
    ctx_.out().inputs.push_back(b.name);
    ctx_.out().input_arguments.push_back(argument);
    add_symbol_sources(meta, argument);
    Value v = ctx_.from_buffer(b.name);
    v.storage->origin = meta.storage_offset;
    ctx_.set_lowered(node.index, Lowered::one(v));
  }

  void lower_constant(const FxNode& node) {
    Ref tensor = ctx_.graph().module;
    // Targets may be dotted paths into submodules.
    std::string path = node.target;
    size_t start = 0;
    while (start <= path.size()) {
      size_t dot = path.find('.', start);
      std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      tensor = check(PyObject_GetAttrString(tensor.ptr(), part.c_str()));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    Ref tensor_type = check(PyObject_GetAttrString(check(PyImport_ImportModule("torch")).ptr(), "Tensor"));
    if (PyObject_IsInstance(tensor.ptr(), tensor_type.ptr()) != 1)
      throw UserError("get_attr " + node.target + " is not a tensor");
    TensorMeta meta = tensor_meta_of(tensor.ptr());
    if (!on_target_device(meta.device))
      throw UserError("the inductor backend's target for " + ctx_.options().device_type + " tensors cannot compile " +
                      node.target + ", which is on " + meta.device);
    Buffer b;
    b.name = node.name;
    b.kind = Buffer::Kind::Constant;
    b.dtype = meta.dtype;
    b.sizes = meta.sizes;
    b.strides = meta.strides;
    b.device = meta.device;
    ctx_.add_buffer(b);
    ctx_.out().constants.emplace_back(b.name, tensor);
    Value v = ctx_.from_buffer(b.name);
    v.storage->origin = meta.storage_offset;
    ctx_.set_lowered(node.index, Lowered::one(v));
  }

  void lower_call(const FxNode& node) {
    if (node.symint) return;  // size arithmetic: its users read its expression (FxArg::SymInt)
    if (node.target == "getitem") {
      const Lowered& sequence = ctx_.lowered(node.param(0).node);
      int64_t k = node.param(1).as_int();
      if (k < 0) k += static_cast<int64_t>(sequence.values.size());
      if (k < 0 || k >= static_cast<int64_t>(sequence.values.size())) throw InternalError("getitem out of range");
      const auto& item = sequence.values[k];
      ctx_.set_lowered(node.index, item ? Lowered::one(*item) : Lowered{});
      return;
    }
    if (node.target == "aten::copy_.default") {
      lower_input_mutation(node);
      return;
    }
    Lowered result;
    auto it = registry().find(node.target);
    bool lowered = false;
    set_layout_hint(node);
    if (it != registry().end()) {
      try {
        result = it->second(ctx_, node);
        lowered = true;
      } catch (const NotLowered&) {
        // The lowering does not handle this variant: the extern call below is always correct.
      } catch (const UserError&) {
        // Arguments it cannot read statically (symbolic sizes, ...): the same fallback.
      }
    }
    if (!lowered) result = lower_as_extern(ctx_, node);
    ctx_.set_layout_hint({}, {});
    adopt_eager_layout(node, result);
    apply_reuse_heuristic(node, result);
    ctx_.set_lowered(node.index, std::move(result));
  }

  // The strides eager gives a value when they are a dense permutation other than contiguous
  // (channels-last); empty otherwise.
  std::vector<Expr> permuted_layout(const TensorMeta& meta) const {
    if (!is_dense_layout(meta.sizes, meta.strides, hints_) || meta.strides == ir::contiguous_strides(meta.sizes)) return {};
    return meta.strides;
  }

  void set_layout_hint(const FxNode& node) {
    ctx_.set_layout_hint({}, {});
    if (node.meta.empty() || !node.meta[0]) return;
    std::vector<Expr> strides = permuted_layout(*node.meta[0]);
    if (!strides.empty()) ctx_.set_layout_hint(node.meta[0]->sizes, std::move(strides));
  }

  // A value this node computes (not a view, not an argument passed through) is stored, if it
  // ever is, in the layout eager gives it: channels-last stays channels-last.
  void adopt_eager_layout(const FxNode& node, Lowered& result) {
    for (size_t k = 0; k < result.values.size() && k < node.meta.size(); ++k) {
      auto& value = result.values[k];
      if (!value || value->is_view() || value->storage->realized() || !node.meta[k]) continue;
      const TensorMeta& meta = *node.meta[k];
      std::vector<Expr> strides = permuted_layout(meta);
      if (!(meta.sizes == value->sizes) || strides.empty()) continue;
      bool passed_through = false;
      for (const FxArg& param : node.params) {
        const std::vector<FxArg>& items = param.kind == FxArg::Kind::List ? param.items : std::vector<FxArg>{param};
        for (const FxArg& arg : items)
          passed_through = passed_through || (arg.is_node() && ctx_.has_lowered(arg.node) && shares_storage(ctx_.lowered(arg.node), *value));
      }
      if (!passed_through) value->storage->layout = std::move(strides);
    }
  }

  static bool shares_storage(const Lowered& lowered, const Value& v) {
    for (const auto& other : lowered.values)
      if (other && other->storage == v.storage) return true;
    return false;
  }

  // A lazy value read by several consumers is recomputed in each unless it is expensive.
  void apply_reuse_heuristic(const FxNode& node, Lowered& result) {
    int users = effective_users(ctx_.graph(), node.index, users_memo_);
    for (auto& value : result.values) {
      if (!value || value->storage->realized()) continue;
      Storage& st = *value->storage;
      // A view's readers were already counted on its base (effective_users looks through views).
      if (is_view_op(node.target)) continue;
      st.users = std::max(st.users, users);
      if (st.users > 1 && (st.cost > kReuseCost || static_cast<int>(st.reads.size()) > kReuseReads)) ctx_.realize(st);
    }
  }

  // copy_(input, value): store value into the input buffer, after every other read of it.
  void lower_input_mutation(const FxNode& node) {
    const FxArg& dst_arg = node.param(0);
    const FxNode& dst_node = ctx_.graph().nodes.at(dst_arg.node);
    if (dst_node.op != "placeholder") {
      // Mutating a constant (module state) or an intermediate: the extern copy_ is correct.
      ctx_.set_lowered(node.index, lower_as_extern(ctx_, node));
      return;
    }
    const std::string& dst = dst_node.name;
    realize_live_readers(dst, node.index);
    Value dst_value = ctx_.tensor(dst_arg);
    Value src = broadcast_to(ctx_.tensor(node.param(1)), dst_value.sizes);
    if (!reads_only_at_store_point(src, dst)) ctx_.realize(*src.storage);
    if (!reads_only_at_store_point(src, dst)) src = ctx_.from_buffer(ctx_.buffer_for(src, false));
    ctx_.store_into(src, dst);
    ctx_.set_lowered(node.index, Lowered::one(dst_value));
  }

  // Lazy values that read `dst` and are still needed after node `at` are stored now, before
  // the input is overwritten.
  void realize_live_readers(const std::string& dst, int at) {
    const FxGraph& graph = ctx_.graph();
    for (int k = 0; k < at; ++k) {
      bool live = false;
      for (int user : graph.nodes[k].users) live = live || user > at;  // the copy itself is checked apart
      if (!live) continue;
      if (!ctx_.has_lowered(k)) continue;
      for (const auto& value : ctx_.lowered(k).values) {
        if (value && !value->storage->realized() && value->storage->reads.count(dst)) ctx_.realize(*value->storage);
      }
      if (graph.nodes[k].op != "placeholder") snapshot_values_of(k, dst);
    }
  }

  // Values of node k that are dst's storage itself (a functional copy of the input, which the
  // graph may share with it) get their own copy before dst is overwritten: they hold the
  // input's old contents. (Returned views of the input that eager aliases are made from the
  // input buffer itself, see eager_alias_buffer.)
  void snapshot_values_of(int k, const std::string& dst) {
    Lowered lowered = ctx_.lowered(k);
    bool changed = false;
    for (auto& value : lowered.values) {
      if (!value || !value->storage->realized() || root_of(value->storage->buffer) != root_of(dst)) continue;
      value = ctx_.from_buffer(ctx_.store(*value, eager_strides(*value, ctx_.graph().nodes[k]), Buffer::Kind::Intermediate));
      changed = true;
    }
    if (changed) ctx_.set_lowered(k, std::move(lowered));
  }


  // True when every load of `dst` in src's body is at the element the store writes.
  bool reads_only_at_store_point(const Value& src, const std::string& dst) {
    const Buffer& b = ctx_.buffer(dst);
    Index vars = make_vars('i', src.rank());
    ir::VarRanges ranges = ranges_of(vars, src.sizes);
    Scalar body = simplify_body(src.load(vars), ranges);
    Expr store_at = ir::simplify(ir::linear_index(vars, b.strides, b.offset), ranges);
    bool ok = true;
    std::vector<const ir::ScalarNode*> stack{body.get()};
    std::set<const ir::ScalarNode*> seen;
    while (!stack.empty()) {
      const ir::ScalarNode* s = stack.back();
      stack.pop_back();
      if (!seen.insert(s).second) continue;
      if ((s->op == ir::ScalarOp::Load || s->op == ir::ScalarOp::MaskedLoad) && s->buffer == dst)
        ok = ok && s->indirect.empty() && s->index == store_at;
      for (const Scalar& a : s->args) stack.push_back(a.get());
      for (const Scalar& a : s->indirect) stack.push_back(a.get());
    }
    return ok;
  }

  // Each returned value's buffer, then the aliasing eager gives the outputs among themselves.
  void lower_output(const FxNode& node) {
    const FxArg& returned = node.param(0);
    std::vector<FxArg> items = returned.kind == FxArg::Kind::List ? returned.items : std::vector<FxArg>{returned};
    const std::vector<EagerAlias>& aliases = ctx_.graph().output_aliases;
    const bool known = aliases.size() == items.size();
    std::vector<std::string>& outputs = ctx_.out().outputs;
    for (size_t k = 0; k < items.size(); ++k) {
      if (!items[k].is_node()) throw UserError("the inductor backend only returns tensors; the graph returns " + items[k].text);
      outputs.push_back(returned_buffer(items, k, known ? &aliases[k] : nullptr));
    }
    if (!known) return;
    // Views in eager of another output's storage that the functional graph stored apart.
    for (size_t k = 0; k < items.size(); ++k) {
      const EagerAlias& eager = aliases[k];
      if (eager.kind != EagerAlias::Kind::Fresh || eager.base < 0 || eager.base >= static_cast<int>(items.size())) continue;
      const std::string& base = outputs[eager.base];
      if (root_of(base) == root_of(outputs[k])) continue;
      if (std::string view = view_of_output(base, ctx_.tensor(items[k]), eager); !view.empty()) outputs[k] = view;
    }
    for (size_t k = 0; k < items.size(); ++k)  // after the views: still one object
      if (aliases[k].kind == EagerAlias::Kind::SameOutput && aliases[k].input >= 0 && aliases[k].input < static_cast<int>(k))
        outputs[k] = outputs[aliases[k].input];
  }

  // The buffer of output k (the outputs before it are placed), as eager aliases it.
  std::string returned_buffer(const std::vector<FxArg>& items, size_t k, const EagerAlias* eager) {
    const std::vector<std::string>& outputs = ctx_.out().outputs;
    const FxNode& producer = ctx_.graph().nodes.at(items[k].node);
    const Value v = ctx_.tensor(items[k]);
    if (eager && eager->kind == EagerAlias::Kind::SameOutput && eager->input >= 0 && eager->input < static_cast<int>(k))
      return outputs[eager->input];  // one object, as eager returns it twice
    std::string aliased = eager ? eager_alias_buffer(v, *eager) : "";
    std::string name = aliased.empty() ? output_buffer(v, producer, eager) : aliased;
    // A tensor of its own in eager (a clone of an intermediate) that the functional graph
    // computed into an earlier output's storage is stored anew: a write into one of them must
    // not show in the other.
    if (eager && eager->kind == EagerAlias::Kind::Fresh && eager->input == static_cast<int>(k))
      for (size_t j = 0; j < k; ++j)
        if (root_of(outputs[j]) == root_of(name)) return ctx_.store(v, eager_strides(v, producer), Buffer::Kind::Output);
    // Values of two different nodes are two tensor objects in eager even where they share
    // storage and layout (a split of one piece): a buffer returned again becomes an alias.
    for (size_t j = 0; j < k; ++j)
      if (outputs[j] == name && items[j].node != items[k].node && !(eager && eager->kind == EagerAlias::Kind::Same))
        return alias_of(name);
    return name;
  }

  // v as a view of output buffer `base`, laid out as eager's is relative to base's first
  // element; "" when base's buffer is not laid out as eager's (the view would be elsewhere).
  std::string view_of_output(const std::string& base_name, const Value& v, const EagerAlias& eager) {
    const Buffer& base = ctx_.buffer(base_name);
    if (eager.base_strides.empty() || base.dtype != v.dtype || base.strides.size() != eager.base_strides.size() ||
        eager.sizes.size() != v.sizes.size())
      return "";
    for (size_t d = 0; d < base.strides.size(); ++d)
      if (!(base.strides[d] == ir::Expr(eager.base_strides[d]))) return "";
    return output_view(base, eager, base.offset + ir::Expr(eager.offset));
  }

  // An Output buffer over the storage of `over` (or of its root) with eager's sizes and strides.
  std::string output_view(const Buffer& over, const EagerAlias& eager, ir::Expr offset) {
    Buffer alias;
    alias.name = ctx_.fresh_name();
    alias.kind = Buffer::Kind::Output;
    alias.dtype = over.dtype;
    for (size_t d = 0; d < eager.sizes.size(); ++d) {
      alias.sizes.push_back(ir::Expr(eager.sizes[d]));
      alias.strides.push_back(ir::Expr(eager.strides[d]));
    }
    alias.offset = offset;
    alias.reuses = over.reuses.empty() ? over.name : over.reuses;
    alias.device = over.device;
    return ctx_.add_buffer(alias).name;
  }

  std::string root_of(const std::string& name) {
    const Buffer& b = ctx_.buffer(name);
    return b.reuses.empty() ? b.name : b.reuses;
  }

  std::string alias_of(const std::string& name) {
    Buffer alias = ctx_.buffer(name);
    alias.reuses = alias.reuses.empty() ? alias.name : alias.reuses;
    alias.name = ctx_.fresh_name();
    alias.kind = Buffer::Kind::Output;
    alias.cached = false;
    return ctx_.add_buffer(alias).name;
  }

  // The output as eager aliases it: input k itself, or a view of input k's storage (made after
  // the graph's trailing copy_ into k, so it sees what the graph wrote). "" when eager's result
  // is not an input's alias, or when the view cannot be expressed (another dtype or shape).
  std::string eager_alias_buffer(const Value& v, const EagerAlias& eager) {
    // eager.input counts the graph's arguments; number arguments (a symbolic program's) have no
    // buffer.
    const std::vector<std::string>& inputs = ctx_.out().inputs;
    const std::vector<int>& arguments = ctx_.out().input_arguments;
    int position = eager.input;
    if (!arguments.empty()) {
      auto found = std::find(arguments.begin(), arguments.end(), eager.input);
      position = found == arguments.end() ? -1 : static_cast<int>(found - arguments.begin());
    }
    if (position < 0 || position >= static_cast<int>(inputs.size())) return "";
    const Buffer& base = ctx_.buffer(inputs[position]);
    if (eager.kind == EagerAlias::Kind::Same) return base.name;
    if (eager.kind != EagerAlias::Kind::View || base.dtype != v.dtype || eager.sizes.size() != v.sizes.size()) return "";
    return output_view(base, eager, ir::Expr(eager.offset));
  }

  // Whether v's storage is a graph input's or a constant's (directly or as a view of one).
  bool reads_given_storage(const Value& v) {
    if (!v.storage->realized()) return false;
    Buffer::Kind kind = ctx_.buffer(root_of(v.storage->buffer)).kind;
    return kind == Buffer::Kind::Input || kind == Buffer::Kind::Constant;
  }

  // A buffer holding a returned value: the value's own buffer, an alias of it (views keep
  // their strides, like eager), or a new Output buffer laid out like the eager result.
  // A tensor eager makes anew (clone, contiguous of a contiguous input) is stored anew, never
  // handed back as the input it equals: the caller may write into either.
  std::string output_buffer(const Value& v, const FxNode& producer, const EagerAlias* eager) {
    const bool fresh = eager && eager->kind == EagerAlias::Kind::Fresh;
    if (fresh && reads_given_storage(v)) return ctx_.store(v, eager_strides(v, producer), Buffer::Kind::Output);
    if (v.storage->realized()) {
      Buffer& base = ctx_.buffer(v.storage->buffer);
      if (!v.is_view() && v.storage->strides == base.strides && v.storage->offset == base.offset) {
        if (base.kind == Buffer::Kind::Intermediate) base.kind = Buffer::Kind::Output;
        return base.name;
      }
      if (strided_layout(v)) return ctx_.buffer_for(v, true, Buffer::Kind::Output);
    }
    std::vector<ir::Expr> strides = eager_strides(v, producer);
    if (!v.is_view()) {
      // Realize the storage itself, so a value returned twice is stored once.
      ctx_.realize(*v.storage, strides, Buffer::Kind::Output);
      return v.storage->buffer;
    }
    return ctx_.store(v, strides, Buffer::Kind::Output);
  }

  // The strides eager gives the producer's result when they are dense, else contiguous ones.
  std::vector<ir::Expr> eager_strides(const Value& v, const FxNode& producer) const {
    if (producer.meta.size() == 1 && producer.meta[0] && producer.meta[0]->sizes == v.sizes &&
        is_dense_layout(v.sizes, producer.meta[0]->strides, hints_))
      return producer.meta[0]->strides;
    return ir::contiguous_strides(v.sizes);
  }

  LoweringContext ctx_;
  std::map<int, int> users_memo_;
  std::map<std::string, Expr> hints_;  // symbol -> its value while compiling (a constant)
  int arguments_ = 0;  // placeholders met: the call argument of the next one
};

}  // namespace

LoweredGraph lower_graph(PyObject* aten_graph_module, const LowerOptions& options) {
  return Driver(read_fx_graph(aten_graph_module), options).run();
}

std::string to_string(const LoweredGraph& graph) {
  std::ostringstream out;
  out << "inputs: ";
  for (size_t k = 0; k < graph.inputs.size(); ++k) out << (k ? ", " : "") << graph.inputs[k];
  out << "\noutputs: ";
  for (size_t k = 0; k < graph.outputs.size(); ++k) out << (k ? ", " : "") << graph.outputs[k];
  out << "\n";
  for (const ir::Buffer& b : graph.buffers) out << "  " << ir::to_string(b) << "\n";
  for (const ir::Node& n : graph.nodes) out << ir::to_string(n);
  return out.str();
}

}  // namespace cdynamo::lower
