// Bytecode generation for compiled frames (CPython 3.11/3.12): prologue, input loads, the graph
// call and the rebuilding of the return value. Assumes frontend/bytecode assembles the result.
#include "frontend/codegen/transformed_code.h"
#include "frontend/codegen/code_builder.h"

namespace cdynamo::codegen {
Ref transformed_code(PyCodeObject* original, Handle compiled_graph,
                     const std::vector<graph::GraphInput>& inputs, const interp::ValuePtr& return_value,
                     const std::vector<interp::ValuePtr>& outputs,
                     const std::vector<interp::SideEffect>& side_effects) {
  CodeBuilder code(original);
  code.prologue();
  code.emit(PUSH_NULL);
  code.load_const(compiled_graph);
  for (const auto& input : inputs) code.load_source(*input.source);
  code.call(static_cast<int>(inputs.size()));
  std::vector<interp::ValuePtr> roots{return_value};
  for (const auto& effect : side_effects) roots.push_back(effect.value);
  int depth = emit_object_table(code, roots, outputs, 1);
  // The return value is read as the trace read it, before any write changes what its source
  // leads to (`x = lst.pop(); return x` reloads lst[-1], which the replay then removes).
  rebuild(code, return_value, outputs, depth);
  replay_side_effects(code, side_effects, outputs, depth + 1);
  for (int below = depth; below > 0; --below) {  // drop the outputs (and object) tuples under it
    code.emit(SWAP, 2);
    code.emit(POP_TOP);
  }
  code.emit(RETURN_VALUE);
  return code.finish();
}

}  // namespace cdynamo::codegen
