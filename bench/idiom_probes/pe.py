# exceptions, context managers, grad mode
import torch, contextlib, sys
from common import x, xr
import common
P = []
probe = common.collector(P)

@probe(x)
def try_else(x):
    try:
        y = x + 1
    except ValueError:
        y = x
    else:
        y = y * 2
    return y

@probe(x)
def except_tuple_types(x):
    try:
        {}["k"]
    except (ValueError, KeyError) as e:
        return x * 2, type(e).__name__
    return x, ""

@probe(x)
def nested_try_bare_reraise(x):
    try:
        try:
            raise ValueError("in")
        except ValueError:
            raise
    except ValueError as e:
        return x * len(e.args[0])

@probe(x)
def raise_from_cause(x):
    try:
        try:
            raise KeyError("a")
        except KeyError as e:
            raise RuntimeError("b") from e
    except RuntimeError as e2:
        return x * (type(e2.__cause__) is KeyError)

@probe(x)
def implicit_context(x):
    try:
        try:
            raise KeyError("a")
        except KeyError:
            raise RuntimeError("b")
    except RuntimeError as e2:
        return x * isinstance(e2.__context__, KeyError)

@probe(x)
def exception_args_str(x):
    try:
        raise ValueError("bad", 3)
    except ValueError as e:
        return x * e.args[1] + len(str(e))

class E1(Exception):
    def __init__(self, code):
        super().__init__(f"code {code}"); self.code = code

@probe(x)
def custom_exception_attr(x):
    try:
        raise E1(4)
    except E1 as e:
        return x * e.code + len(str(e))

class E2(E1): pass

@probe(x)
def custom_exception_subclass_catch_base(x):
    try:
        raise E2(3)
    except E1 as e:
        return x * e.code + isinstance(e, E2)

@probe(x)
def exception_from_callee(x):
    def f(): raise IndexError
    try:
        f()
    except LookupError:
        return x + 1
    return x

@probe(x)
def exception_deep_callee(x):
    def a(t): return b(t)
    def b(t):
        if t.shape[0] > 2: raise ValueError("big")
        return t
    try:
        return a(x)
    except ValueError:
        return x * -1

@probe(x)
def finally_on_return(x):
    log = []
    def f():
        try:
            return 1
        finally:
            log.append(2)
    return x * (f() + sum(log))

@probe(x)
def finally_overrides_return(x):
    def f():
        try:
            return 1
        finally:
            return 2
    return x * f()

@probe(x)
def try_continue_in_loop(x):
    out = x
    for i in range(4):
        try:
            if i % 2: raise ValueError
            out = out + i
        except ValueError:
            continue
    return out

@probe(x)
def keyerror_dict(x):
    d = {"a": 1}
    try:
        v = d["b"]
    except KeyError:
        v = 5
    return x * v

@probe(x)
def stopiteration_next(x):
    it = iter([1]); next(it)
    try:
        next(it); v = 0
    except StopIteration:
        v = 9
    return x * v

@probe(x)
def attributeerror_caught(x):
    try:
        object().foo; v = 0
    except AttributeError:
        v = 3
    return x * v

@probe(x)
def assertion_caught(x):
    try:
        assert x.shape[0] == 5, f"expected 5 got {x.shape[0]}"
    except AssertionError as e:
        return x * len(str(e))
    return x

@probe(x)
def zero_division_caught(x):
    try:
        v = 1 / 0
    except ZeroDivisionError:
        v = 2
    return x * v

@probe(x)
def sys_exc_info(x):
    try:
        raise TypeError("t")
    except TypeError:
        et = sys.exc_info()[0]
    return x * (et is TypeError) + (sys.exc_info()[0] is None)

@probe(x)
def try_finally_break(x):
    out = x
    for i in range(5):
        try:
            if i == 2: break
        finally:
            out = out + 1
    return out

@probe(x)
def contextlib_suppress(x):
    with contextlib.suppress(KeyError):
        {}["a"]
    return x + 1

@probe(x)
def exception_object_not_raised(x):
    e = ValueError("msg")
    return x * len(e.args) + isinstance(e, Exception) + len(str(e))

@probe(x)
def raise_class_not_instance(x):
    try:
        raise KeyError
    except KeyError as e:
        return x * len(e.args)

@probe(x)
def except_exception_generic(x):
    try:
        int("abc")
    except Exception as e:
        return x * isinstance(e, ValueError)
    return x

@probe(x)
def try_except_tensor_op_error(x):
    try:
        y = x.view(5, 7)
    except RuntimeError:
        y = x * 2
    return y

@probe(x)
def nested_finally_order(x):
    log = []
    try:
        try:
            log.append(1)
        finally:
            log.append(2)
    finally:
        log.append(3)
    return x * sum(i * 10 ** k for k, i in enumerate(log)), log

@probe(x)
def exception_in_list_comprehension(x):
    def safe(v):
        try:
            return 10 // v
        except ZeroDivisionError:
            return -1
    return x * sum([safe(v) for v in [0, 2, 5]])

@probe(x)
def exception_stored_and_reraised_later(x):
    err = None
    try:
        raise ValueError("x")
    except ValueError as e:
        err = e
    try:
        raise err
    except ValueError as e2:
        return x * (e2 is err)

@probe(x)
def except_star_absent_notimpl(x):
    try:
        raise NotImplementedError("nope")
    except RuntimeError as e:
        return x * isinstance(e, NotImplementedError)

# context managers
@probe(xr)
def no_grad_flags(x):
    with torch.no_grad():
        y = x * 2
    z = x * 2
    return y, y.requires_grad, z.requires_grad

@probe(xr)
def enable_grad_inside_no_grad(x):
    with torch.no_grad():
        with torch.enable_grad():
            y = x * 2
        z = x * 3
    return y.requires_grad, z.requires_grad, z

@probe(xr)
def set_grad_enabled_false(x):
    with torch.set_grad_enabled(False):
        y = x + 1
        g = torch.is_grad_enabled()
    return y, y.requires_grad, g, torch.is_grad_enabled()

@probe(xr)
def is_grad_enabled_branch(x):
    with torch.no_grad():
        if torch.is_grad_enabled():
            return x * 2
        return x * 3

@probe(xr)
def no_grad_decorator_inner(x):
    @torch.no_grad()
    def f(t): return t * 2
    return f(x), f(x).requires_grad

@probe(xr)
def inference_mode_block(x):
    with torch.inference_mode():
        y = x * 2
    return y.detach().clone() if False else (x * 3).sum(), y.requires_grad

@probe(xr)
def set_grad_enabled_function_call(x):
    prev = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    y = x * 2
    torch.set_grad_enabled(prev)
    return y, y.requires_grad, (x * 2).requires_grad

@probe(xr)
def grad_restored_after_return_in_with(x):
    def f(t):
        with torch.no_grad():
            return t * 2
    y = f(x); z = x * 2
    return y.requires_grad, z.requires_grad

@probe(xr)
def detach_and_requires_grad(x):
    d = x.detach()
    return d.requires_grad, (d * 2).requires_grad, x.requires_grad, x.is_leaf, (x * 2).is_leaf

@probe(x)
def contextmanager_generator(x):
    log = []
    @contextlib.contextmanager
    def cm(v):
        log.append("enter"); yield v * 2; log.append("exit")
    with cm(3) as k:
        y = x * k
    return y, log

@probe(x)
def contextmanager_swallows(x):
    @contextlib.contextmanager
    def cm():
        try:
            yield
        except ValueError:
            pass
    with cm():
        raise ValueError
    return x + 1

@probe(x)
def contextmanager_finally_on_exception(x):
    log = []
    @contextlib.contextmanager
    def cm():
        try:
            yield
        finally:
            log.append("done")
    try:
        with cm():
            raise KeyError
    except KeyError:
        pass
    return x * len(log)

class Track:
    def __init__(self): self.log = []
    def __enter__(self): self.log.append("in"); return self
    def __exit__(self, et, ev, tb):
        self.log.append(et.__name__ if et else "none"); return True

@probe(x)
def user_cm_suppress_exception(x):
    cm = Track()
    with cm:
        raise KeyError("k")
    return x * len(cm.log), cm.log

@probe(x)
def multiple_with_items(x):
    a, b = Track(), Track()
    with a as p, b as q:
        y = x * (len(p.log) + len(q.log))
    return y, a.log, b.log

@probe(x)
def nullcontext(x):
    with contextlib.nullcontext(5) as v:
        return x * v

@probe(x)
def exitstack(x):
    ts = [Track(), Track()]
    with contextlib.ExitStack() as st:
        for t in ts: st.enter_context(t)
        y = x + 1
    return y, [t.log for t in ts]

@probe(x)
def autocast_disabled_cpu(x):
    with torch.autocast("cpu", enabled=False):
        return x @ x.t()

@probe(x)
def autocast_bf16_cpu(x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ x.t()
    return y.dtype, y.float()

class CMState:
    depth = 0
    def __enter__(self): CMState.depth += 1
    def __exit__(self, *a): CMState.depth -= 1

@probe(x)
def user_cm_class_state(x):
    with CMState():
        with CMState():
            d = CMState.depth
    return x * d + CMState.depth

@probe(x)
def cm_enter_returns_tensor(x):
    class_ = TensorCM(x)
    with class_ as t:
        y = t * 2
    return y, class_.exited

class TensorCM:
    def __init__(self, t): self.t = t; self.exited = False
    def __enter__(self): return self.t + 1
    def __exit__(self, *a): self.exited = True

@probe(x)
def contextdecorator_user(x):
    @contextlib.contextmanager
    def cm():
        yield
    @cm()
    def f(t): return t * 2
    return f(x)

@probe(xr)
def no_grad_as_function_decorator_module_level(x):
    return _ng(x), _ng(x).requires_grad

@torch.no_grad()
def _ng(t): return t * 3

@probe(x)
def manual_seed_rand(x):
    torch.manual_seed(0)
    a = torch.rand(3)
    torch.manual_seed(0)
    b = torch.rand(3)
    return a, torch.equal(a, b)

@probe(x)
def fork_rng_not_needed_rand_like_shape(x):
    r = torch.rand_like(x)
    return r.shape, r.dtype, (r * 0).sum()

@probe(x)
def warnings_warn(x):
    import warnings
    warnings.warn("careful")
    return x + 1
