// Decoding and assembling code objects for CPython 3.11/3.12, and per-opcode facts.
// Assumes the GIL is held; every function works on the running interpreter's bytecode version.
#pragma once
#include <string>
#include "common/py_ref.h"
#include "frontend/bytecode/instruction.h"

namespace cdynamo::bytecode {

// Decodes code.co_code, co_exceptiontable and co_linetable into instructions.
InstructionList decode(PyCodeObject* code);

// Builds a new code object: co_code, co_exceptiontable, co_linetable and co_stacksize come from
// `insts` (jump args from targets, EXTENDED_ARG and CACHE entries inserted as needed); every other
// field comes from `model`, overridden by `replace_kwargs` (a dict of code.replace() keywords, may
// be NULL). Decoding a compiler-made code object and assembling it unchanged gives identical bytes.
Ref assemble(const InstructionList& insts, PyCodeObject* model, PyObject* replace_kwargs);

// Maximum stack depth reached by `insts`, exception handlers included.
int stack_depth(const InstructionList& insts);

// Per fast-local slot (co_nlocals of them): whether the code may read it at or after
// instruction `at` before writing it (all true when the code can see its own frame).
std::vector<bool> live_locals(PyCodeObject* code, const InstructionList& insts, int at);

const char* opcode_name(int opcode);
int opcode_from_name(const std::string& name);  // the running interpreter's opcode, or -1
int inline_cache_entries(int opcode);  // CACHE code units that follow the opcode
bool has_jump_target(int opcode);
bool is_backward_jump(int opcode);
// True for instructions after which execution does not fall through (returns, raises, jumps).
bool is_terminator(int opcode);

}  // namespace cdynamo::bytecode
