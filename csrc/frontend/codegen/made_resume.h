// What a graph break's transformed code hands the hook about the resume functions it calls.
// Assumes nothing beyond owned Python references.
#pragma once
#include "common/py_ref.h"

namespace cdynamo::codegen {

// A resume function's code made for a break: the code it continues (the compiled frame's, or
// an inlined frame's, which may itself be a resume function) and whether the break lies inside
// a loop there (each iteration would then make another; the hook bounds the chain).
// continues_root: the root frame's continuation (else an inlined frame's, which the root's
// continuation calls first).
struct MadeResume {
  Ref code;
  Ref continues;
  bool in_loop = false;
  bool continues_root = true;
};

}  // namespace cdynamo::codegen
