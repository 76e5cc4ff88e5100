# Stage tests of the bytecode toolkit (csrc/frontend/bytecode) through cdynamo._C._testing:
# byte-identical round trips over the standard library, decoding checked against CPython's own
# views (dis, co_positions), and edited bytecode that must still run correctly.
import dis
import functools
import heapq
import json
import opcode
import os
import shlex
import statistics
import sys
import sysconfig
import textwrap
import types
import difflib
import fnmatch

import pytest

from cdynamo._C import _testing

PY312 = sys.version_info >= (3, 12)

# Pure-Python modules present in both 3.11 and 3.12 (read from source, so frozen modules count).
STDLIB_MODULES = [
    "os", "re._compiler", "re._parser", "json.decoder", "json.encoder", "collections",
    "functools", "typing", "argparse", "asyncio.tasks", "asyncio.base_events", "ast", "inspect",
    "dataclasses", "enum", "pathlib", "subprocess", "threading", "logging", "email.message",
    "http.client", "urllib.parse", "unittest.case", "fractions", "statistics", "textwrap",
    "tokenize", "contextlib", "shutil", "tarfile", "zipfile", "pickle", "pprint", "difflib",
    "string", "csv", "heapq", "random", "datetime", "calendar", "configparser", "traceback",
    "weakref", "copy", "glob", "tempfile", "concurrent.futures._base", "locale", "gettext",
    "optparse", "doctest", "pydoc", "mailbox", "codecs", "_pydecimal", "_pyio", "dis",
    "symtable", "fnmatch", "shlex", "colorsys",
]

ROUND_TRIP_FIELDS = ("co_code", "co_exceptiontable", "co_linetable", "co_stacksize")


def module_source_path(name):
    base = os.path.join(sysconfig.get_paths()["stdlib"], *name.split("."))
    return base + ".py" if os.path.exists(base + ".py") else os.path.join(base, "__init__.py")


@functools.lru_cache(maxsize=None)
def compile_module(name):
    path = module_source_path(name)
    with open(path, "rb") as f:
        return compile(f.read(), path, "exec")


def walk_code(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from walk_code(const)


def deep_roundtrip(code):
    """Re-assembles `code` and every code object nested in its constants."""
    consts = tuple(deep_roundtrip(c) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    return _testing.assemble_from(code, _testing.decode(code), {"co_consts": consts})


def rebuild_function(func, code):
    new = types.FunctionType(code, func.__globals__, func.__name__, func.__defaults__,
                             func.__closure__)
    new.__kwdefaults__ = func.__kwdefaults__
    return new


# --- opcode facts ------------------------------------------------------------------------------

def test_opcode_facts_match_the_opcode_module():
    jumps = {op for op in opcode.hasjrel + opcode.hasjabs if op < 256}
    for op in range(256):
        name, caches, has_jump, backward, _ = _testing.opcode_info(op)
        assert name == opcode.opname[op]
        assert caches == opcode._inline_cache_entries[op], name
        assert has_jump == (op in jumps), name
        # INSTRUMENTED_* opcodes (3.12) never appear in co_code; the toolkit does not classify them.
        assert backward == ("BACKWARD" in name and not name.startswith("INSTRUMENTED_")), name
    assert _testing.opcode_info(opcode.opmap["RETURN_VALUE"])[4]
    assert _testing.opcode_info(opcode.opmap["JUMP_BACKWARD"])[4]
    assert not _testing.opcode_info(opcode.opmap["FOR_ITER"])[4]


# --- round trips --------------------------------------------------------------------------------

@pytest.mark.parametrize("module", STDLIB_MODULES)
def test_stdlib_module_round_trips_byte_identical(module):
    mismatches = []
    for code in walk_code(compile_module(module)):
        again = _testing.roundtrip(code)
        diff = [f for f in ROUND_TRIP_FIELDS if getattr(again, f) != getattr(code, f)]
        if diff:
            mismatches.append((code.co_name, code.co_firstlineno, diff))
        # Every other field comes from the model unchanged.
        assert again.co_consts == code.co_consts and again.co_names == code.co_names
    assert mismatches == []


def test_round_trip_covers_thousands_of_code_objects():
    codes = [c for m in STDLIB_MODULES for c in walk_code(compile_module(m))]
    assert len(STDLIB_MODULES) >= 30
    assert len(codes) >= 3000
    # The sample must exercise the EXTENDED_ARG and exception-table paths, not just simple code.
    ext = opcode.opmap["EXTENDED_ARG"]
    assert sum(1 for c in codes if ext in c.co_code[::2]) >= 20
    assert sum(1 for c in codes if c.co_exceptiontable) >= 500


NO_DEBUG_RANGES_CHECK = """
import sys, types
sys.path.insert(0, sys.argv[1])
import test_bytecode as t
from cdynamo._C import _testing
n = 0
for module in ("argparse", "tarfile", "asyncio.tasks"):
    for code in t.walk_code(t.compile_module(module)):
        again = _testing.roundtrip(code)
        assert again.co_code == code.co_code and again.co_stacksize == code.co_stacksize
        assert list(again.co_positions()) == list(code.co_positions()), code.co_name
        assert list(again.co_lines()) == list(code.co_lines()), code.co_name
        n += 1
assert n > 300
print("ok", n)
"""


def test_round_trip_without_debug_ranges_keeps_positions():
    # Without column info, 3.12 keeps the compiler's entry boundaries (made from the columns it
    # then drops) but the table no longer shows them, so only the positions can match.
    import subprocess
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-X", "no_debug_ranges", "-c", NO_DEBUG_RANGES_CHECK,
                          os.path.dirname(__file__)], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok")


def test_stack_depth_matches_compiler():
    for module in ("argparse", "asyncio.tasks", "contextlib", "tarfile"):
        for code in walk_code(compile_module(module)):
            assert _testing.stack_depth(code) == code.co_stacksize, code.co_name


def test_round_tripped_stdlib_functions_behave_the_same():
    text = "  hello world\n    indented more\n  back\n" * 3
    words = "the quick brown fox jumps over the lazy dog " * 5
    # (module, function name, call): each call looks the function up in its module at call time.
    cases = [
        (textwrap, "dedent", lambda: textwrap.dedent(text)),
        (textwrap, "indent", lambda: textwrap.indent(text, "> ")),
        (shlex, "split", lambda: shlex.split("a 'b c' \"d e\" f\\ g")),
        (fnmatch, "translate", lambda: fnmatch.translate("*.py[cod]")),
        (statistics, "median", lambda: statistics.median([5, 1, 4, 2, 3])),
        (statistics, "fmean", lambda: statistics.fmean([1.5, 2.5, 4.0])),
        (json, "dumps", lambda: json.dumps({"a": [1, {"b": None}], "c": "x"}, sort_keys=True,
                                            indent=2)),
        (heapq, "merge", lambda: list(heapq.merge([1, 4, 7], [2, 5, 8], [3, 6, 9]))),
        (difflib, "unified_diff",
         lambda: list(difflib.unified_diff(words.split(), words.upper().split()))),
    ]
    for module, name, call in cases:
        original = getattr(module, name)
        expected = call()
        new_code = _testing.roundtrip(original.__code__)
        assert new_code is not original.__code__
        setattr(module, name, rebuild_function(original, new_code))
        try:
            assert getattr(module, name).__code__ is new_code
            assert call() == expected, name
        finally:
            setattr(module, name, original)


@pytest.mark.parametrize("module", ["textwrap", "fnmatch", "colorsys", "difflib"])
def test_reassembled_module_code_runs(module):
    ns = {"__name__": f"cdynamo_rt_{module}"}
    exec(deep_roundtrip(compile_module(module)), ns)
    real = __import__(module)
    if module == "textwrap":
        s = "a long line of text that will need wrapping at some point " * 4
        assert ns["wrap"](s, 23) == real.wrap(s, 23)
        assert ns["shorten"](s, 40) == real.shorten(s, 40)
        assert ns["dedent"]("   x\n   y\n") == "x\ny\n"
    elif module == "fnmatch":
        names = ["a.py", "b.pyc", "c.txt", "d.PY"]
        assert ns["filter"](names, "*.py*") == real.filter(names, "*.py*")
        assert ns["translate"]("[!a-c]?x*") == real.translate("[!a-c]?x*")
    elif module == "colorsys":
        for rgb in [(0.2, 0.4, 0.6), (1.0, 0.0, 0.5), (0.3, 0.3, 0.3)]:
            assert ns["rgb_to_hls"](*rgb) == real.rgb_to_hls(*rgb)
            assert ns["hsv_to_rgb"](*ns["rgb_to_hsv"](*rgb)) == real.hsv_to_rgb(*real.rgb_to_hsv(*rgb))
    else:
        a, b = "one two three four".split(), "one 2 three four five".split()
        assert list(ns["ndiff"](a, b)) == list(real.ndiff(a, b))
        assert ns["SequenceMatcher"](None, a, b).ratio() == real.SequenceMatcher(None, a, b).ratio()


# --- decoding against CPython's own views -----------------------------------------------------

def check_decode_against_cpython(code):
    insts = _testing.decode(code)
    ext = opcode.opmap["EXTENDED_ARG"]
    real = [i for i in dis.get_instructions(code) if i.opcode != ext]
    assert [i[0] for i in insts] == [i.opname for i in real]
    assert all(i.arg is None or i.arg == mine[1] for i, mine in zip(real, insts))
    positions = list(code.co_positions())
    ends = [i[3] for i in insts[1:]] + [len(code.co_code)]
    for k, (name, arg, target, offset, pos, handler) in enumerate(insts):
        assert pos == positions[offset // 2]
        op = opcode.opmap[name]
        if _testing.opcode_info(op)[2]:
            # Relative to the end of the jump, caches included.
            sign = -1 if _testing.opcode_info(op)[3] else 1
            assert insts[target][3] == ends[k] + sign * 2 * arg
        else:
            assert target == -1
    # First matching entry wins, as in CPython's get_exception_handler().
    for name, arg, target, offset, pos, handler in insts:
        entry = next((e for e in dis._parse_exception_table(code) if e.start <= offset < e.end),
                     None)
        if entry is None:
            assert handler is None
        else:
            assert handler is not None
            assert insts[handler[0]][3] == entry.target
            assert handler[1:] == (entry.depth, entry.lasti)
    return insts


@pytest.mark.parametrize("module", ["asyncio.base_events", "_pydecimal", "typing", "tarfile"])
def test_decode_agrees_with_dis_and_co_positions(module):
    for code in walk_code(compile_module(module)):
        check_decode_against_cpython(code)


def loop_function(n):
    total = 0
    for i in range(n):
        if i == 3:
            continue
        total += i
    return total


def test_decoded_jump_targets_point_at_the_right_instruction():
    insts = _testing.decode(loop_function.__code__)
    names = [i[0] for i in insts]
    for_iter = names.index("FOR_ITER")
    back = [k for k, i in enumerate(insts) if i[0] == "JUMP_BACKWARD"]
    assert back and all(insts[k][2] == for_iter for k in back)
    exit_target = insts[insts[for_iter][2]]
    if PY312:
        # 3.12's FOR_ITER targets its END_FOR, which the interpreter skips when the loop ends.
        assert exit_target[0] == "END_FOR"
        assert names[insts[for_iter][2] + 1:][:2] == ["LOAD_FAST", "RETURN_VALUE"]
    else:
        assert names[insts[for_iter][2]:][:2] == ["LOAD_FAST", "RETURN_VALUE"]
    # The `continue` is a conditional jump whose target is the loop header or a jump back to it.
    cond = [i for i in insts if i[2] >= 0 and i[0] not in ("FOR_ITER", "JUMP_BACKWARD")]
    assert cond
    for i in cond:
        assert insts[i[2]][0] in ("FOR_ITER", "JUMP_BACKWARD", "LOAD_FAST")


def try_function(x):
    try:
        y = 10 // x
    except ZeroDivisionError:
        y = -1
    return y


def test_decoded_handlers_and_positions():
    insts = check_decode_against_cpython(try_function.__code__)
    guarded = [i for i in insts if i[5] is not None and i[0] == "BINARY_OP"]
    assert len(guarded) == 1
    target = guarded[0][5][0]
    assert insts[target][0] == "PUSH_EXC_INFO"
    assert guarded[0][5][1:] == (0, False)
    # The handler's own body is covered by its cleanup handler, which keeps lasti.
    assert insts[target][5] is not None and insts[target][5][2] is True
    line = try_function.__code__.co_firstlineno
    assert guarded[0][4][0] == line + 2 and guarded[0][4][1] == line + 2


# --- editing ------------------------------------------------------------------------------------

class Recorder:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, *exc):
        self.log.append("exit")
        return False


def workload(n):
    total = 0
    log = []
    for i in range(n):
        try:
            if i % 3 == 0:
                raise ValueError(i)
            total += i
        except ValueError as e:
            log.append(int(str(e)))
        finally:
            total += 1
        with Recorder(log):
            total = total * 2 if i % 2 else total
        while total > 1000:
            total -= 997
    k = 0
    while True:
        k += 1
        if k > 5:
            break
    return total, log, k


def shifted(instrs, index):
    """The instruction list with every index >= `index` moved up by one (room for an insert)."""
    def move(t):
        return t + 1 if t >= index else t
    out = []
    for name, arg, target, offset, pos, handler in instrs:
        if handler is not None:
            handler = (move(handler[0]),) + tuple(handler[1:])
        out.append((name, arg, move(target) if target >= 0 else -1, offset, pos, handler))
    return out


def insert_nops(instrs, index, count, handler_from_next=True):
    for _ in range(count):
        instrs = shifted(instrs, index)
        follow = instrs[index] if index < len(instrs) else None
        handler = follow[5] if (follow is not None and handler_from_next) else None
        instrs.insert(index, ("NOP", 0, -1, -1, None, handler))
    return instrs


def as_function(func, code):
    return rebuild_function(func, code)


def test_insert_nop_at_every_position_keeps_behaviour():
    code = workload.__code__
    base = _testing.decode(code)
    expected = workload(12)
    tried = 0
    for index in range(1, len(base) + 1):
        if base[index - 1][0] == "PRECALL":
            continue  # 3.11 needs PRECALL and CALL adjacent: see test_precall_call_stay_adjacent
        tried += 1
        for inherit in (True, False):
            edited = insert_nops(base, index, 1, inherit)
            new = _testing.assemble_from(code, edited)
            assert as_function(workload, new)(12) == expected, (index, inherit)
            # Jumps now skip one more code unit where they cross the NOP.
            redecoded = _testing.decode(new)
            assert [i[0] for i in redecoded] == [i[0] for i in edited]
            assert [i[2] for i in redecoded] == [i[2] for i in edited]
            assert [i[5] for i in redecoded] == [i[5] for i in edited]
    assert tried > 100


@pytest.mark.skipif(PY312, reason="PRECALL exists in 3.11 only")
def test_precall_call_stay_adjacent():
    base = _testing.decode(workload.__code__)
    index = [i[0] for i in base].index("PRECALL") + 1
    with pytest.raises(ValueError, match="PRECALL"):
        _testing.assemble_from(workload.__code__, insert_nops(base, index, 1))


def test_long_insert_forces_extended_args_and_still_runs():
    code = workload.__code__
    base = _testing.decode(code)
    # Inside the for-loop body: every jump across it grows past 255 code units.
    start = [i[0] for i in base].index("FOR_ITER") + 2
    edited = insert_nops(base, start, 600)
    new = _testing.assemble_from(code, edited)
    ext = opcode.opmap["EXTENDED_ARG"]
    assert ext in new.co_code[::2]
    assert as_function(workload, new)(12) == workload(12)
    redecoded = _testing.decode(new)
    assert [i[2] for i in redecoded] == [i[2] for i in edited]
    assert [i[5] for i in redecoded] == [i[5] for i in edited]
    # Removing the NOPs again gives back the compiler's bytes.
    restored = list(redecoded)
    del restored[start:start + 600]
    fixed = shifted_back(restored, start, 600)
    again = _testing.assemble_from(code, fixed)
    for field in ROUND_TRIP_FIELDS:
        assert getattr(again, field) == getattr(code, field), field


def shifted_back(instrs, index, count):
    def move(t):
        return t - count if t >= index + count else t
    out = []
    for name, arg, target, offset, pos, handler in instrs:
        if handler is not None:
            handler = (move(handler[0]),) + tuple(handler[1:])
        out.append((name, arg, move(target) if target >= 0 else -1, offset, pos, handler))
    return out


def scale(xs):
    out = []
    for x in xs:
        out.append(x * 3)
    return out


def test_change_a_constant():
    code = scale.__code__
    insts = _testing.decode(code)
    k = code.co_consts.index(3)
    loads = [n for n, i in enumerate(insts) if i[0] == "LOAD_CONST" and i[1] == k]
    assert len(loads) == 1
    consts = code.co_consts + (7,)
    name, _, target, offset, pos, handler = insts[loads[0]]
    insts[loads[0]] = (name, len(consts) - 1, target, offset, pos, handler)
    new = _testing.assemble_from(code, insts, {"co_consts": consts})
    assert as_function(scale, new)([1, 2, 3]) == [7, 14, 21]
    assert scale([1, 2, 3]) == [3, 6, 9]


def test_opcode_numbers_and_jump_direction_are_normalised():
    code = loop_function.__code__
    insts = _testing.decode(code)
    back = next(n for n, i in enumerate(insts) if i[0] == "JUMP_BACKWARD")
    edited = list(insts)
    # Written as a forward jump and by number: the assembler picks the backward form itself.
    _, arg, target, offset, pos, handler = edited[back]
    edited[back] = (opcode.opmap["JUMP_FORWARD"], 0, target, offset, pos, handler)
    new = _testing.assemble_from(code, edited)
    for field in ROUND_TRIP_FIELDS:
        assert getattr(new, field) == getattr(code, field), field


def test_replace_kwargs_reach_the_code_object():
    code = scale.__code__
    new = _testing.assemble_from(code, _testing.decode(code),
                                 {"co_name": "scaled", "co_firstlineno": code.co_firstlineno + 100})
    assert new.co_name == "scaled"
    # Positions keep their absolute lines although the table is relative to co_firstlineno.
    assert list(new.co_positions()) == list(code.co_positions())


def test_bad_input_raises():
    code = scale.__code__
    insts = _testing.decode(code)
    with pytest.raises(TypeError):
        _testing.decode("not code")
    jump = next(n for n, i in enumerate(insts) if i[2] >= 0)
    bad = list(insts)
    bad[jump] = bad[jump][:2] + (len(insts) + 5,) + bad[jump][3:]
    with pytest.raises(ValueError):
        _testing.assemble_from(code, bad)
    with pytest.raises(ValueError):
        _testing.assemble_from(code, [("NO_SUCH_OP", 0, -1, -1, None, None)])
    with pytest.raises(TypeError):
        _testing.assemble_from(code, [("NOP", 0)])
