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
  replay_side_effects(code, side_effects, outputs, 1);
  rebuild(code, return_value, outputs, 1);
  code.emit(SWAP, 2);
  code.emit(POP_TOP);
  code.emit(RETURN_VALUE);
  return code.finish();
}

}  // namespace cdynamo::codegen
