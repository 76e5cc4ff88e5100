// What a graph break's transformed code hands the hook about the resume functions it calls.
// Assumes nothing beyond owned Python references.
#pragma once
#include "common/py_ref.h"

namespace cdynamo::codegen {

// A resume function's code made for a break, and whether that break lies inside a loop of the
// code it continues (each iteration would then make another; the hook bounds the chain).
// continues_root: the root frame's continuation (else an inlined frame's, a chain of its own).
struct MadeResume {
  Ref code;
  bool in_loop = false;
  bool continues_root = true;
};

}  // namespace cdynamo::codegen
