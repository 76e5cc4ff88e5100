// Graph breaks in bytecode: the transformed code of a frame cut at an unsupported instruction,
// and the resume functions that continue the original code after it.
#pragma once
#include <vector>
#include "common/py_ref.h"
#include "frontend/bytecode/instruction.h"
#include "frontend/graph/graph_builder.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::codegen {

// A code object running `original` from instruction `target` on: its arguments are the locals
// of `passed_slots` (slots of `original`, ascending), then the `stack_count` values on the
// stack there (bottom first). Loop iterators arrive as tuples of their remaining items: the
// prologue turns the stack positions `iterator_stack` and the slots `iterator_slots` back into
// iterators (so a trace of the resume function sees the items). Refuses code with cell variables.
Ref resume_code(PyCodeObject* original, const bytecode::InstructionList& instructions, int target,
                int stack_count, const std::vector<int>& passed_slots, const std::vector<int>& iterator_stack = {},
                const std::vector<int>& iterator_slots = {});

// The transformed code of a frame traced up to a graph break: run the graph (if any), rebuild
// the traced locals and stack, run the break instruction, and return the result of the resume
// function(s) called with the stack and locals after it. Throws Unsupported when that state
// cannot be rebuilt (iterators, NULLs left on the stack, ...).
Ref transformed_code_at_break(PyCodeObject* original, const bytecode::InstructionList& instructions,
                              Handle compiled_graph, const std::vector<graph::GraphInput>& inputs,
                              const interp::BreakState& state, const std::vector<interp::ValuePtr>& outputs,
                              const std::vector<interp::SideEffect>& side_effects);

// Throws Unsupported when the state at the break cannot be carried into a resume function.
void check_break_state(PyCodeObject* original, const bytecode::InstructionList& instructions,
                       const interp::BreakState& state);

// The values a graph must return for a break: tensors in the stack, locals and attribute
// writes, each once.
std::vector<interp::ValuePtr> break_outputs(const interp::BreakState& state,
                                            const std::vector<interp::SideEffect>& side_effects);

}  // namespace cdynamo::codegen
