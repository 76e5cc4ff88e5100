// Builds an ir::Program from a plain-Python description, so stage tests can write programs by
// hand without the lowering. Assumes the GIL is held; the format is documented below.
#pragma once
#include "backend/ir/ir.h"
#include "common/py_ref.h"

namespace cdynamo::runtime {

// The description (dict keys; [] marks optional ones, with their default):
//
//   buffers: [{name, sizes, [kind="intermediate"|"input"|"constant"|"output"], [dtype="float32"],
//              [strides=contiguous], [offset=0], [reuses=""], [device="cpu"]}, ...]
//   [inputs]: buffer names in call order (default: the "input" buffers in order)
//   outputs: buffer names returned (may repeat, may be inputs)
//   steps: a list of
//     {kernel: name, ranges: [...], [reduction_ranges=[]],
//      nodes: [{pointwise: out, body: S, [full=False]} | {reduction: out, type: "Sum"|..., body: S}, ...],
//      (a full pointwise ranges over ranges ++ reduction_ranges: i{n+j} is r{j}, see ir::Kernel)
//      [inputs], [outputs], [locals]}   (default: inferred from loads, later reads and outputs)
//     {extern: "aten::mm", [overload="default"], args: [A, ...], outputs: [names]}
//   [frees]: one list of buffer names per step
//
// Sizes, strides, offsets and indices are ints or strings in a tiny syntax (expr_parser.h).
// Dtypes are "float32", "Float32", "torch.float32" or torch.float32.
// A scalar body S is a nested tuple (op, dtype, ...):
//   ("Load", dt, buffer, index)  ("MaskedLoad", dt, buffer, index, mask_S, other_S)
//   either with a trailing list [(position_S, size), ...] binding ind0, ind1, ... (indirect loads)
//   ("Constant", dt, value)      (value: int, float, bool, or "inf" / "-inf" / "nan")
//   ("Index", dt, index)         (op, dt, S, ...) for every other ScalarOp, by its name
// The same tuple object used twice is one shared node.
// Extern arguments A: a buffer name; a list of buffer names (Tensor[]; "" is None);
// {"constant": text, [name]}, {"buffer": b, [name]}, {"buffers": [...], [name]};
// or a Python int, float, bool, None, list of ints, or torch.dtype (turned into text).
ir::Program program_from_dict(Handle description);

}  // namespace cdynamo::runtime
