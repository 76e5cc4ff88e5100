// The marker objects of cdynamo._trace_objects: stand-ins the interpreter puts where no Python
// object of the program fits, which the code generator recognises. Assumes they live forever.
#pragma once

#include "common/py_import.h"

namespace cdynamo::interp::markers {

// A default of a def the trace made that only the trace holds (a tensor the graph computes).
inline const Ref& traced_default() {
  static Ref& found = *new Ref(import_attr("cdynamo._trace_objects", "TRACED_DEFAULT"));  // never freed: outlives the interpreter
  return found;
}
// The grad_fn of a tensor the graph computes with gradients (told only from None).
inline const Ref& graph_grad_fn() {
  static Ref& found = *new Ref(import_attr("cdynamo._trace_objects", "GRAPH_GRAD_FN"));  // never freed: outlives the interpreter
  return found;
}
// The value a pending write of a deleted attribute holds (the replay deletes it).
inline const Ref& deleted_attribute() {
  static Ref& found = *new Ref(import_attr("cdynamo._trace_objects", "DELETED_ATTRIBUTE"));  // never freed: outlives the interpreter
  return found;
}
// A cell of a function the trace made where nothing was stored.
inline const Ref& empty_cell() {
  static Ref& found = *new Ref(import_attr("cdynamo._trace_objects", "EMPTY_CELL"));  // never freed: outlives the interpreter
  return found;
}

}  // namespace cdynamo::interp::markers
