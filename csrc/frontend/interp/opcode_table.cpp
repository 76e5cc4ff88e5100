// Which handler runs each opcode, as rows of data: opcodes by name, each row marked with the
// CPython versions that have it. Assumes the GIL is held (names resolve through `opcode`).
#include <array>
#include "common/error.h"
#include "frontend/bytecode/bytecode.h"
#include "frontend/interp/tracer.h"

namespace cdynamo::interp {
namespace {

enum class Versions { Both, Py311, Py312 };

struct OpcodeRow {
  const char* opcode;
  Tracer::OpcodeHandler handler;
  Versions versions = Versions::Both;
};

bool running(Versions versions) {
  if (versions == Versions::Both) return true;
  return (versions == Versions::Py312) == static_cast<bool>(CD_PY312);
}

}  // namespace

const Tracer::OpcodeTable& Tracer::opcode_table() {
  static const OpcodeRow rows[] = {
      // ops_stack.cpp
      {"NOP", &Tracer::op_nothing},
      {"RESUME", &Tracer::op_nothing},
      {"COPY_FREE_VARS", &Tracer::op_nothing},  // free variables are read from the closure on first use
      {"PRECALL", &Tracer::op_nothing, Versions::Py311},
      {"PUSH_NULL", &Tracer::op_push_null},
      {"POP_TOP", &Tracer::op_pop_top},
      {"END_FOR", &Tracer::op_end_for, Versions::Py312},
      {"COPY", &Tracer::op_copy},
      {"SWAP", &Tracer::op_swap},
      {"LOAD_CONST", &Tracer::op_load_const},
      {"LOAD_FAST", &Tracer::op_load_fast},
      {"LOAD_FAST_CHECK", &Tracer::op_load_fast, Versions::Py312},
      {"LOAD_FAST_AND_CLEAR", &Tracer::op_load_fast_and_clear, Versions::Py312},
      {"STORE_FAST", &Tracer::op_store_fast},
      {"DELETE_FAST", &Tracer::op_delete_fast},
      {"MAKE_CELL", &Tracer::op_make_cell},
      {"LOAD_DEREF", &Tracer::op_load_deref},
      {"LOAD_CLOSURE", &Tracer::op_load_closure},
      {"STORE_DEREF", &Tracer::op_store_deref},
      {"DELETE_DEREF", &Tracer::op_delete_deref},
      // ops_names.cpp
      {"LOAD_GLOBAL", &Tracer::op_load_global},
      {"STORE_GLOBAL", &Tracer::op_store_global},
      {"LOAD_ATTR", &Tracer::op_load_attr},
      {"LOAD_METHOD", &Tracer::op_load_method, Versions::Py311},
      {"LOAD_SUPER_ATTR", &Tracer::op_load_super_attr, Versions::Py312},
      {"STORE_ATTR", &Tracer::op_store_attr},
      {"DELETE_ATTR", &Tracer::op_delete_attr},
      {"IMPORT_NAME", &Tracer::op_import_name},
      {"IMPORT_FROM", &Tracer::op_import_from},
      // ops_calls.cpp
      {"KW_NAMES", &Tracer::op_kw_names},
      {"CALL", &Tracer::op_call},
      {"CALL_FUNCTION_EX", &Tracer::op_call_function_ex},
      {"MAKE_FUNCTION", &Tracer::op_make_function},
      // ops_operators.cpp
      {"BINARY_OP", &Tracer::op_binary_op},
      {"COMPARE_OP", &Tracer::op_compare_op},
      {"UNARY_NEGATIVE", &Tracer::op_unary_negative},
      {"UNARY_INVERT", &Tracer::op_unary_invert},
      {"UNARY_POSITIVE", &Tracer::op_unary_positive, Versions::Py311},
      {"UNARY_NOT", &Tracer::op_unary_not},
      {"IS_OP", &Tracer::op_is_op},
      {"CONTAINS_OP", &Tracer::op_contains_op},
      {"CALL_INTRINSIC_1", &Tracer::op_call_intrinsic_1, Versions::Py312},
      {"FORMAT_VALUE", &Tracer::op_format_value},
      {"BUILD_STRING", &Tracer::op_build_string},
      // ops_containers.cpp
      {"BINARY_SUBSCR", &Tracer::op_binary_subscr},
      {"STORE_SUBSCR", &Tracer::op_store_subscr},
      {"DELETE_SUBSCR", &Tracer::op_delete_subscr},
      {"BINARY_SLICE", &Tracer::op_binary_slice, Versions::Py312},
      {"STORE_SLICE", &Tracer::op_store_slice, Versions::Py312},
      {"BUILD_SLICE", &Tracer::op_build_slice},
      {"BUILD_TUPLE", &Tracer::op_build_tuple},
      {"BUILD_LIST", &Tracer::op_build_list},
      {"BUILD_SET", &Tracer::op_build_set},
      {"BUILD_MAP", &Tracer::op_build_map},
      {"BUILD_CONST_KEY_MAP", &Tracer::op_build_const_key_map},
      {"LIST_APPEND", &Tracer::op_list_append},
      {"LIST_EXTEND", &Tracer::op_list_extend},
      {"LIST_TO_TUPLE", &Tracer::op_list_to_tuple, Versions::Py311},
      {"SET_ADD", &Tracer::op_set_add},
      {"SET_UPDATE", &Tracer::op_set_add},
      {"DICT_MERGE", &Tracer::op_dict_update},
      {"DICT_UPDATE", &Tracer::op_dict_update},
      {"MAP_ADD", &Tracer::op_map_add},
      {"UNPACK_SEQUENCE", &Tracer::op_unpack_sequence},
      {"UNPACK_EX", &Tracer::op_unpack_ex},
      // ops_control.cpp
      {"JUMP_FORWARD", &Tracer::op_jump},
      {"JUMP_BACKWARD", &Tracer::op_jump},
      {"JUMP_BACKWARD_NO_INTERRUPT", &Tracer::op_jump},
      {"POP_JUMP_IF_FALSE", &Tracer::op_pop_jump_if_false, Versions::Py312},
      {"POP_JUMP_IF_TRUE", &Tracer::op_pop_jump_if_true, Versions::Py312},
      {"POP_JUMP_IF_NONE", &Tracer::op_pop_jump_if_none, Versions::Py312},
      {"POP_JUMP_IF_NOT_NONE", &Tracer::op_pop_jump_if_not_none, Versions::Py312},
      {"POP_JUMP_FORWARD_IF_FALSE", &Tracer::op_pop_jump_if_false, Versions::Py311},
      {"POP_JUMP_BACKWARD_IF_FALSE", &Tracer::op_pop_jump_if_false, Versions::Py311},
      {"POP_JUMP_FORWARD_IF_TRUE", &Tracer::op_pop_jump_if_true, Versions::Py311},
      {"POP_JUMP_BACKWARD_IF_TRUE", &Tracer::op_pop_jump_if_true, Versions::Py311},
      {"POP_JUMP_FORWARD_IF_NONE", &Tracer::op_pop_jump_if_none, Versions::Py311},
      {"POP_JUMP_BACKWARD_IF_NONE", &Tracer::op_pop_jump_if_none, Versions::Py311},
      {"POP_JUMP_FORWARD_IF_NOT_NONE", &Tracer::op_pop_jump_if_not_none, Versions::Py311},
      {"POP_JUMP_BACKWARD_IF_NOT_NONE", &Tracer::op_pop_jump_if_not_none, Versions::Py311},
      {"JUMP_IF_FALSE_OR_POP", &Tracer::op_jump_if_false_or_pop, Versions::Py311},
      {"JUMP_IF_TRUE_OR_POP", &Tracer::op_jump_if_true_or_pop, Versions::Py311},
      {"GET_ITER", &Tracer::op_get_iter},
      {"GET_YIELD_FROM_ITER", &Tracer::op_get_iter},
      {"FOR_ITER", &Tracer::op_for_iter},
      {"SEND", &Tracer::op_send},
      {"END_SEND", &Tracer::op_end_send, Versions::Py312},
      {"RETURN_VALUE", &Tracer::op_return_value},
      {"RETURN_CONST", &Tracer::op_return_const, Versions::Py312},
      {"YIELD_VALUE", &Tracer::op_yield_value},
      {"RETURN_GENERATOR", &Tracer::op_return_generator},
      {"BEFORE_WITH", &Tracer::op_before_with},
      // exceptions.cpp
      {"PUSH_EXC_INFO", &Tracer::op_push_exc_info},
      {"POP_EXCEPT", &Tracer::op_pop_except},
      {"CHECK_EXC_MATCH", &Tracer::op_check_exc_match},
      {"WITH_EXCEPT_START", &Tracer::op_with_except_start},
      {"RERAISE", &Tracer::op_reraise},
      {"RAISE_VARARGS", &Tracer::op_raise_varargs},
      // ops_match.cpp
      {"MATCH_SEQUENCE", &Tracer::op_match_sequence},
      {"MATCH_MAPPING", &Tracer::op_match_mapping},
      {"MATCH_KEYS", &Tracer::op_match_keys},
      {"MATCH_CLASS", &Tracer::op_match_class},
      {"GET_LEN", &Tracer::op_get_len},
      {"LOAD_ASSERTION_ERROR", &Tracer::op_load_assertion_error},
      // class_bodies.cpp
      {"LOAD_BUILD_CLASS", &Tracer::op_load_build_class},
      {"LOAD_NAME", &Tracer::op_load_name},
      {"STORE_NAME", &Tracer::op_store_name},
      {"SETUP_ANNOTATIONS", &Tracer::op_setup_annotations},
      {"LOAD_CLASSDEREF", &Tracer::op_load_classderef, Versions::Py311},
      {"LOAD_LOCALS", &Tracer::op_load_locals, Versions::Py312},
      {"LOAD_FROM_DICT_OR_DEREF", &Tracer::op_load_from_dict_or_deref, Versions::Py312},
  };
  static const OpcodeTable table = [] {
    OpcodeTable built{};
    for (const OpcodeRow& row : rows) {
      if (!running(row.versions)) continue;
      int opcode = bytecode::opcode_from_name(row.opcode);
      if (opcode < 0 || opcode >= static_cast<int>(built.size()))
        throw InternalError(std::string("opcode table: this Python has no ") + row.opcode);
      built[opcode] = row.handler;
    }
    return built;
  }();
  return table;
}

}  // namespace cdynamo::interp
