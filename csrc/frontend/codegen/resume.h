// Graph breaks in bytecode: the transformed code of a frame cut at an unsupported instruction,
// and the resume functions that continue the original code after it.
#pragma once
#include <vector>
#include "common/py_ref.h"
#include "frontend/bytecode/instruction.h"
#include "frontend/codegen/made_resume.h"
#include "frontend/graph/graph_builder.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::codegen {

// What a resume function's prologue rebuilds before it jumps to its target, besides the
// passed locals and stack values.
struct ResumeEntry {
  std::vector<int> null_stack;      // stack positions that hold NULL (pushed; no argument)
  std::vector<int> iterator_stack;  // stack positions that arrive as tuples of an iterator's items
  std::vector<int> iterator_slots;  // locals that arrive so
  // A nested graph break: the continuation of the frame this one was calling, called with the
  // last `inner_arguments` arguments; its result is the top stack entry at the target.
  Handle inner_function;
  int inner_arguments = 0;
};

// A code object running `original` from instruction `target` on: its arguments are the locals
// of `passed_slots` (slots of `original`, ascending), then the `stack_count` values on the
// stack there (bottom first; NULLs and an inner call's result are not arguments), then the
// inner call's arguments. Loop iterators arrive as tuples of their remaining items: the
// prologue turns them back into iterators (so a trace of the resume function sees the items).
// Refuses code with cell variables.
Ref resume_code(PyCodeObject* original, const bytecode::InstructionList& instructions, int target,
                int stack_count, const std::vector<int>& passed_slots, const ResumeEntry& entry = {});

// Whether instruction `index` lies inside a loop: a later backward jump lands at or before it.
bool inside_loop(const bytecode::InstructionList& instructions, int index);

// The transformed code of a frame traced up to a graph break: run the graph (if any), rebuild
// the traced locals and stack, run the break instruction, and return the result of the resume
// function(s) called with the stack and locals after it, each listed in `made`. Throws
// Unsupported when that state cannot be rebuilt (iterators, NULLs left on the stack, ...).
Ref transformed_code_at_break(PyCodeObject* original, const bytecode::InstructionList& instructions,
                              Handle compiled_graph, const std::vector<graph::GraphInput>& inputs,
                              const interp::BreakState& state, const std::vector<interp::ValuePtr>& outputs,
                              const std::vector<interp::SideEffect>& side_effects, std::vector<MadeResume>& made);

// Throws Unsupported when the state at the break cannot be carried into a resume function.
void check_break_state(PyCodeObject* original, const bytecode::InstructionList& instructions,
                       const interp::BreakState& state);

// Every traced value a break carries over: the stacks and locals of the root and inlined frames.
std::vector<interp::ValuePtr> break_values(const interp::BreakState& state);

// The values a graph must return for a break: tensors in the stack, locals and attribute
// writes, each once.
std::vector<interp::ValuePtr> break_outputs(const interp::BreakState& state,
                                            const std::vector<interp::SideEffect>& side_effects);

}  // namespace cdynamo::codegen
