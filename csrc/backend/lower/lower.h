// Lowering: an aten-level torch.fx.GraphModule to loop-level IR nodes over buffers.
// Assumes the graph came from make_fx(functionalize(gm), decompositions.table(), "fake").
#pragma once
#include <Python.h>
#include <string>
#include <utility>
#include <vector>
#include "backend/ir/ir.h"
#include "common/py_ref.h"

namespace cdynamo::lower {

// The lowered graph, before scheduling: every computed buffer has exactly one node producing
// it (Pointwise, Reduction or Extern), in a valid execution order.
struct LoweredGraph {
  std::vector<ir::Buffer> buffers;
  std::vector<ir::Node> nodes;
  std::vector<std::string> inputs;   // Input buffers, in placeholder order
  std::vector<std::string> outputs;  // returned buffers, in return order (inputs and aliases allowed)
  std::vector<std::pair<std::string, Ref>> constants;  // Constant buffer name -> the real tensor
  // Symbolic sizes: as ir::Program's.
  std::vector<ir::Symbol> symbols;
  std::vector<int> input_arguments;
  int arguments = -1;
};

// Switches for what a code generator may not support yet; everything defaults to on.
struct LowerOptions {
  // gather / index / index_select / embedding as indirect loads (ScalarNode::indirect);
  // off: they run as extern calls.
  bool indirect_loads = true;
  // The device type the target's kernels run on ("cpu", or "cuda" for the Triton target on a
  // GPU): a tensor elsewhere would be dereferenced as the wrong kind of pointer.
  std::string device_type = "cpu";
};

// Lowers an aten-level GraphModule (see the file comment). Ops without a lowering become
// ir::Extern calls of the aten op. Throws UserError for graphs it cannot represent at all
// (non-tensor outputs, unsupported dtypes), PythonError when reading the graph fails.
LoweredGraph lower_graph(PyObject* aten_graph_module, const LowerOptions& options = {});

// The IR text of a lowered graph: buffers, then nodes in order.
std::string to_string(const LoweredGraph& graph);

}  // namespace cdynamo::lower
