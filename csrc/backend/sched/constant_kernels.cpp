// Marks the outputs of kernels that read nothing but constants (parameters, buffers) as cached:
// a channels-last copy of a weight computes the same values on every call until the weight
// changes, so the runtime may keep it. Assumes kernel IO is assigned and runs before reuse.
#include "backend/sched/sched_internal.h"

namespace cdynamo::sched {

void mark_cached_buffers(ir::Program& program) {
  // Constants the program itself writes (an extern copy_ into module state) change during a
  // call: nothing computed from them is kept.
  std::set<std::string> written;
  std::map<std::string, std::string> roots = alias_roots(program.buffers);
  for (const ir::Step& step : program.steps) {
    if (const auto* e = std::get_if<ir::Extern>(&step)) {
      for (const std::string& w : e->outputs) written.insert(roots[w]);
      // An in-place or out= call may write any tensor it is given.
      if (e->op.back() == '_' || e->overload.find("out") != std::string::npos)
        for (const ir::ExternArg& a : e->args) {
          if (const auto* name = std::get_if<std::string>(&a.tensor)) written.insert(roots[*name]);
          if (const auto* names = std::get_if<std::vector<std::string>>(&a.tensor))
            for (const std::string& n : *names) written.insert(roots[n]);
        }
    } else {
      for (const std::string& w : std::get<ir::Kernel>(step).outputs) written.insert(roots[w]);
    }
  }
  std::set<std::string> returned;
  for (const std::string& name : program.outputs) returned.insert(roots[name]);

  std::set<std::string> constant_valued;
  for (const ir::Buffer& b : program.buffers)
    if (b.kind == ir::Buffer::Kind::Constant && b.reuses.empty() && !written.count(b.name)) constant_valued.insert(b.name);
  for (const ir::Step& step : program.steps) {
    const auto* kernel = std::get_if<ir::Kernel>(&step);
    if (!kernel || kernel->inputs.empty()) continue;
    bool only_constants = true;
    for (const std::string& in : kernel->inputs) only_constants = only_constants && constant_valued.count(in) > 0;
    for (const std::string& out : kernel->outputs) {
      const ir::Buffer& b = program.buffer(out);
      only_constants = only_constants && b.kind == ir::Buffer::Kind::Intermediate && b.reuses.empty() && !returned.count(out);
    }
    if (!only_constants) continue;
    for (const std::string& out : kernel->outputs) {
      program.buffer(out).cached = true;
      constant_valued.insert(out);
    }
  }
  // A returned view of a cached buffer would hand the kept tensor to the caller: then it is not
  // kept. (Views passed to extern calls are fine: the runtime checks that no such op returns an
  // alias of its input.)
  for (const ir::Buffer& b : program.buffers)
    if (!b.reuses.empty() && program.buffer(b.reuses).cached && (b.kind == ir::Buffer::Kind::Output || returned.count(b.name)))
      program.buffer(b.reuses).cached = false;
}

}  // namespace cdynamo::sched
