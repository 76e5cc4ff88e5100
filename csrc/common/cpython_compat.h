// Everything that differs between CPython 3.11 and 3.12 for a frame-evaluation hook, one function
// per concept. Implemented in C (cpython_compat.c) because CPython's internal headers are C-only.
#pragma once
#include <Python.h>

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030D0000
#error "cdynamo supports CPython 3.11 and 3.12: audit cpython_compat.c before adding a version"
#endif

// Bytecode differences (opcodes, instruction forms) are decided at compile time with this flag.
#if PY_VERSION_HEX >= 0x030C0000
#define CD_PY312 1
#else
#define CD_PY312 0
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct _PyInterpreterFrame;
typedef struct _PyInterpreterFrame CdFrame;
typedef PyObject* (*CdEvalFrameFunc)(PyThreadState*, CdFrame*, int throwflag);

// The code object being evaluated (borrowed).
PyCodeObject* cd_frame_code(CdFrame* frame);
// The function object being evaluated (borrowed; NULL for module or class bodies).
PyObject* cd_frame_function(CdFrame* frame);
PyObject* cd_frame_globals(CdFrame* frame);   // borrowed
PyObject* cd_frame_builtins(CdFrame* frame);  // borrowed
// The fast-locals array [args | locals | cells | frees] (borrowed slots; may hold NULL).
PyObject** cd_frame_localsplus(CdFrame* frame);
// True while nothing but the evaluator knows the frame: no frame object was materialised for it.
int cd_frame_is_private(CdFrame* frame);
// True for frames that belong to a generator or coroutine object.
int cd_frame_owned_by_generator(CdFrame* frame);

// The code of the Python frame that is running the call being evaluated (borrowed; NULL when
// C code called it with no Python frame below).
PyCodeObject* cd_caller_code(PyThreadState* tstate);

// Runs the frame with CPython's own evaluator (which on 3.12 also clears and pops it).
PyObject* cd_eval_frame_default(PyThreadState* tstate, CdFrame* frame, int throwflag);
// Called when the hook answers a frame without evaluating it: on 3.12 the evaluator owns the
// frame and must clear and pop it; on 3.11 the caller does, so this does nothing.
// Requires cd_frame_is_private(frame).
void cd_frame_clear_and_pop_unevaluated(PyThreadState* tstate, CdFrame* frame);

void cd_set_eval_frame(CdEvalFrameFunc func);  // NULL restores the default evaluator

// co_extra access (renamed PyUnstable_Code_* in 3.12).
int cd_code_get_extra(PyObject* code, Py_ssize_t index, void** extra);
int cd_code_set_extra(PyObject* code, Py_ssize_t index, void* extra);
Py_ssize_t cd_request_code_extra_index(freefunc free_extra);

#ifdef __cplusplus
}
#endif
