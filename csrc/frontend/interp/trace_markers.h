// The marker objects of cdynamo._trace_objects: stand-ins the interpreter puts where no Python
// object of the program fits, which the code generator recognises. Assumes they live forever.
#pragma once

#include <array>
#include "common/py_import.h"

namespace cdynamo::interp::markers {

enum class Marker {
  TracedDefault,     // a default of a def the trace made that only the trace holds (a graph tensor)
  GraphGradFn,       // the grad_fn of a tensor the graph computes with gradients (told only from None)
  DeletedAttribute,  // what a pending write of a deleted attribute holds (the replay deletes it)
  EmptyCell,         // a cell of a function the trace made where nothing was stored
};

// The marker's object, imported at its first use.
inline const Ref& marker(Marker which) {
  static constexpr std::array<const char*, 4> kNames = {"TRACED_DEFAULT", "GRAPH_GRAD_FN", "DELETED_ATTRIBUTE", "EMPTY_CELL"};
  static std::array<Ref, 4>& found = *new std::array<Ref, 4>();  // never freed: outlives the interpreter
  Ref& slot = found[static_cast<size_t>(which)];
  if (!slot) slot = import_attr("cdynamo._trace_objects", kNames[static_cast<size_t>(which)]);
  return slot;
}

}  // namespace cdynamo::interp::markers
