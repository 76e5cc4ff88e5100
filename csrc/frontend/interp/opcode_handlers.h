// The interpreter's opcode handlers, listed once (Tracer declares them from this list, and
// opcode_table.cpp maps opcodes to them), and the oparg encodings that differ by CPython version.
#pragma once
#include "common/cpython_compat.h"

namespace cdynamo::interp {

// X(handler): Tracer::op_<handler>(const bytecode::Instruction&), which returns false once the
// frame returned or yielded. Grouped by the file that defines them.
#define CDYNAMO_OPCODE_HANDLERS(X)                                                               \
  /* ops_stack.cpp: the value stack, constants, fast locals and cells */                         \
  X(nothing) X(push_null) X(pop_top) X(end_for) X(copy) X(swap) X(load_const) X(load_fast)       \
  X(load_fast_and_clear) X(store_fast) X(delete_fast) X(make_cell) X(load_deref) X(load_closure) \
  X(store_deref) X(delete_deref)                                                                 \
  /* ops_names.cpp: globals, attributes, imports */                                              \
  X(load_global) X(store_global) X(load_attr) X(load_method) X(load_super_attr) X(store_attr)    \
  X(delete_attr) X(import_name) X(import_from)                                                   \
  /* ops_calls.cpp: calls and function objects */                                                \
  X(kw_names) X(call) X(call_function_ex) X(make_function)                                       \
  /* ops_operators.cpp: operators, formatting, intrinsics */                                     \
  X(binary_op) X(compare_op) X(unary_negative) X(unary_invert) X(unary_positive) X(unary_not)    \
  X(is_op) X(contains_op) X(call_intrinsic_1) X(format_value) X(build_string)                    \
  /* ops_containers.cpp: building, indexing and unpacking tuples, lists, dicts, sets, slices */   \
  X(binary_subscr) X(store_subscr) X(delete_subscr) X(binary_slice) X(store_slice)               \
  X(build_slice) X(build_tuple) X(build_list) X(build_set) X(build_map) X(build_const_key_map)   \
  X(list_append) X(list_extend) X(list_to_tuple) X(set_add) X(dict_update) X(map_add)            \
  X(unpack_sequence) X(unpack_ex)                                                                \
  /* ops_control.cpp: jumps, loops, returns, generators, with-blocks */                          \
  X(jump) X(pop_jump_if_false) X(pop_jump_if_true) X(pop_jump_if_none) X(pop_jump_if_not_none)   \
  X(jump_if_false_or_pop) X(jump_if_true_or_pop) X(get_iter) X(for_iter) X(send) X(end_send)     \
  X(return_value) X(return_const) X(yield_value) X(return_generator) X(before_with)              \
  /* exceptions.cpp: try/except and raise */                                                     \
  X(push_exc_info) X(pop_except) X(check_exc_match) X(with_except_start) X(reraise)              \
  X(raise_varargs)                                                                               \
  /* ops_match.cpp: the match statement, assert's error */                                       \
  X(match_sequence) X(match_mapping) X(match_keys) X(match_class) X(get_len)                     \
  X(load_assertion_error)                                                                        \
  /* class_bodies.cpp: class statements and the names of their bodies */                         \
  X(load_build_class) X(load_name) X(store_name) X(load_locals) X(load_classderef)               \
  X(load_from_dict_or_deref) X(setup_annotations)

// How opargs encode what the handlers read, where 3.11 and 3.12 differ.
struct OpargFormat {
  int compare_op_shift;    // COMPARE_OP: the comparison is oparg >> this (3.12 keeps flags below)
  int load_attr_shift;     // LOAD_ATTR: the name index is oparg >> this
  bool load_attr_method;   // LOAD_ATTR: oparg & 1 also pushes NULL (3.11 has LOAD_METHOD for it)
  bool for_iter_over_end_for;  // an exhausted FOR_ITER jumps past the END_FOR at its target
  bool send_result_replaces_iterator;  // SEND's end: the result takes the sub-iterator's place
};

#if CD_PY312
inline constexpr OpargFormat kOparg{4, 1, true, true, false};
#else
inline constexpr OpargFormat kOparg{0, 0, false, false, true};
#endif

}  // namespace cdynamo::interp
