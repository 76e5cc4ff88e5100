// Generates the transformed code of a compiled frame: load the graph's inputs from their
// sources, call the compiled graph, rebuild the frame's return value from the graph's outputs.
#pragma once
#include <vector>
#include "common/py_ref.h"
#include "frontend/graph/graph_builder.h"
#include "frontend/interp/tracer.h"
#include "frontend/interp/value.h"

namespace cdynamo::codegen {

// A code object with the original's locals layout that takes every argument slot positionally.
// `outputs` are the tensors of `return_value` in the order the compiled graph returns them.
Ref transformed_code(PyCodeObject* original, Handle compiled_graph,
                     const std::vector<graph::GraphInput>& inputs, const interp::ValuePtr& return_value,
                     const std::vector<interp::ValuePtr>& outputs,
                     const std::vector<interp::SideEffect>& side_effects);

}  // namespace cdynamo::codegen
