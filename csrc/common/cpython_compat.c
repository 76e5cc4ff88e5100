// Version-specific access to CPython 3.11/3.12 interpreter frames, through the internal headers.
// Assumes the GIL is held; every function here is a thin accessor, one per concept.
#define Py_BUILD_CORE 1
#include <Python.h>
#if PY_VERSION_HEX >= 0x030C0000
#undef _PyGC_FINALIZED
#endif
#include <internal/pycore_frame.h>
#include "common/cpython_compat.h"

#if PY_VERSION_HEX >= 0x030C0000
#define CD_IS_312 1
#else
#define CD_IS_312 0
#endif

PyCodeObject* cd_frame_code(CdFrame* frame) { return frame->f_code; }

PyObject* cd_frame_function(CdFrame* frame) {
#if CD_IS_312
  return frame->f_funcobj;
#else
  return (PyObject*)frame->f_func;
#endif
}

PyObject* cd_frame_globals(CdFrame* frame) { return frame->f_globals; }
PyObject* cd_frame_builtins(CdFrame* frame) { return frame->f_builtins; }
PyObject** cd_frame_localsplus(CdFrame* frame) { return frame->localsplus; }
int cd_frame_is_private(CdFrame* frame) { return frame->frame_obj == NULL; }
int cd_frame_owned_by_generator(CdFrame* frame) { return frame->owner == FRAME_OWNED_BY_GENERATOR; }

PyCodeObject* cd_caller_code(PyThreadState* tstate) {
  // The hook runs before the evaluator enters the new frame: the thread's current frame is the caller's.
  _PyInterpreterFrame* caller = tstate->cframe->current_frame;
#if CD_IS_312
  while (caller && caller->owner == FRAME_OWNED_BY_CSTACK) caller = caller->previous;  // 3.12's entry frames
#endif
  return caller ? caller->f_code : NULL;
}

PyObject* cd_eval_frame_default(PyThreadState* tstate, CdFrame* frame, int throwflag) {
  return _PyEval_EvalFrameDefault(tstate, frame, throwflag);
}

#if CD_IS_312
// Mirrors what 3.12's evaluator does when a frame returns (clear_thread_frame): release the
// frame's references, then give its slots back to the thread's data stack.
static void pop_from_data_stack(PyThreadState* tstate, CdFrame* frame) {
  PyObject** base = (PyObject**)frame;
  _PyStackChunk* chunk = tstate->datastack_chunk;
  if (base == &chunk->data[0]) {
    _PyStackChunk* previous = chunk->previous;
    tstate->datastack_top = &previous->data[previous->top];
    tstate->datastack_chunk = previous;
    tstate->datastack_limit = (PyObject**)(((char*)previous) + previous->size);
    PyObjectArenaAllocator arena;
    PyObject_GetArenaAllocator(&arena);
    arena.free(arena.ctx, chunk, chunk->size);
  } else {
    tstate->datastack_top = base;
  }
}
#endif

void cd_frame_clear_and_pop_unevaluated(PyThreadState* tstate, CdFrame* frame) {
#if CD_IS_312
  for (int i = 0; i < frame->stacktop; i++) Py_XDECREF(frame->localsplus[i]);
  frame->stacktop = 0;
  Py_XDECREF(frame->f_locals);
  Py_DECREF(frame->f_funcobj);
  Py_DECREF(frame->f_code);
  pop_from_data_stack(tstate, frame);
#else
  (void)tstate;
  (void)frame;
#endif
}

void cd_set_eval_frame(CdEvalFrameFunc func) {
  PyInterpreterState* interp = PyInterpreterState_Get();
  _PyInterpreterState_SetEvalFrameFunc(interp, func ? (_PyFrameEvalFunction)func : _PyEval_EvalFrameDefault);
}

int cd_code_get_extra(PyObject* code, Py_ssize_t index, void** extra) {
#if CD_IS_312
  return PyUnstable_Code_GetExtra(code, index, extra);
#else
  return _PyCode_GetExtra(code, index, extra);
#endif
}

int cd_code_set_extra(PyObject* code, Py_ssize_t index, void* extra) {
#if CD_IS_312
  return PyUnstable_Code_SetExtra(code, index, extra);
#else
  return _PyCode_SetExtra(code, index, extra);
#endif
}

Py_ssize_t cd_request_code_extra_index(freefunc free_extra) {
#if CD_IS_312
  return PyUnstable_Eval_RequestCodeExtraIndex(free_extra);
#else
  return _PyEval_RequestCodeExtraIndex(free_extra);
#endif
}
