# dict / set / list / tuple / str / collections
import torch, collections, typing
from common import x, xr
import common
P = []
probe = common.collector(P)

@probe(x)
def dict_setdefault_pop_popitem(x):
    d = {"a": 1}
    d.setdefault("b", 2); d.setdefault("a", 9)
    v = d.pop("a"); d["c"] = 3; k, w = d.popitem()
    return x * (v + w + len(d)), k, d

@probe(x)
def dict_update_kwargs_merge(x):
    d = {"a": 1}; d.update(b=2); d.update({"c": 3}); e = d | {"d": 4}; d |= {"a": 10}
    return x * sum(e.values()) + d["a"], d, e

@probe(x)
def dict_fromkeys_copy_clear(x):
    d = dict.fromkeys(["a", "b"], 0); c = d.copy(); d.clear(); c["a"] += 1
    return x * (len(d) + c["a"])

@probe(x)
def dict_keys_view_setops(x):
    a = {"x": 1, "y": 2}; b = {"y": 3, "z": 4}
    return x * len(a.keys() & b.keys()) + len(a.keys() | b.keys())

@probe({"a": x, "b": 2})
def dict_input_mutation(d):
    d["out"] = d["a"] + d["b"]; del d["a"]
    return d["out"] * 2

@probe(x)
def dict_order_after_delete(x):
    d = {i: i for i in range(5)}; del d[2]; d[2] = 20
    return [x * k for k in d]

@probe(x)
def dict_int_float_bool_keys(x):
    d = {1: "a"}; d[1.0] = "b"; d[True] = "c"
    return x * len(d), d[1]

@probe(x)
def dict_tuple_keys(x):
    d = {(i, j): i * j for i in range(2) for j in range(2)}
    return x * d[(1, 1)] + len(d)

@probe(x)
def dict_get_missing_in(x):
    d = {"a": x}
    return d.get("b", x * 2) + ("a" in d) + ("b" not in d)

@probe(x)
def dict_from_zip(x):
    d = dict(zip("abc", range(3)))
    return x * d["c"], list(d.items())

@probe(x)
def dict_eq_unordered(x):
    return x * ({"a": 1, "b": 2} == {"b": 2, "a": 1})

@probe(x)
def dict_unpack_merge_literal(x):
    a = {"p": 1, "q": 2}; b = {"q": 3}
    c = {**a, **b, "r": 4}
    return x * c["q"], c

@probe(x)
def dict_kwargs_build_and_pop(x):
    def f(t, **kw):
        s = kw.pop("scale", 1)
        return t * s + len(kw)
    return f(x, scale=3, a=1, b=2)

@probe(x)
def dict_max_key_get(x):
    d = {"a": 3, "b": 7, "c": 5}
    return x * d[max(d, key=d.get)], sorted(d, key=lambda k: -d[k])

@probe(x)
def dict_values_list_of_tensors(x):
    d = {"a": x, "b": x + 1}
    return torch.stack(list(d.values())).sum(0)

@probe(x)
def dict_items_reversed(x):
    d = {"a": 1, "b": 2, "c": 3}
    return x * list(reversed(d))[0].__len__(), list(reversed(d.items()))

@probe(x)
def dict_subclass_user(x):
    class_ = AttrDict(a=x)
    class_.b = x * 2
    return class_["b"] + class_.a

class AttrDict(dict):
    def __getattr__(self, k):
        try: return self[k]
        except KeyError: raise AttributeError(k)
    def __setattr__(self, k, v): self[k] = v

@probe(x)
def defaultdict_list_grouping(x):
    dd = collections.defaultdict(list)
    for i in range(5): dd[i % 2].append(i)
    return x * sum(dd[1]) + len(dd)

@probe(x)
def defaultdict_int_counting(x):
    dd = collections.defaultdict(int)
    for c in "hello": dd[c] += 1
    return x * dd["l"], dict(dd)

@probe(x)
def defaultdict_lambda_tensor(x):
    dd = collections.defaultdict(lambda: torch.zeros(3))
    dd["a"] += x[0]
    return dd["a"] + dd["b"]

@probe(x)
def ordereddict_popitem_first(x):
    od = collections.OrderedDict(a=1, b=2, c=3)
    k, v = od.popitem(last=False); od.move_to_end("b", last=False)
    return x * v, list(od.keys())

@probe(x)
def counter_update_subtract(x):
    c = collections.Counter("aabbc"); c.update("ab"); d = c - collections.Counter("a")
    return x * c["a"] + d["a"] + sum(c.values())

@probe(x)
def deque_maxlen_rotate(x):
    dq = collections.deque([1, 2, 3], maxlen=3); dq.append(4); dq.rotate(1); dq.appendleft(0)
    return x * dq[0] + sum(dq), list(dq)

@probe(x)
def deque_of_tensors_popleft(x):
    dq = collections.deque()
    for r in x: dq.append(r)
    a = dq.popleft(); b = dq.pop()
    return a + b + len(dq)

@probe(x)
def chainmap_new_child(x):
    base = {"a": 1, "b": 2}
    cm = collections.ChainMap(base).new_child({"a": 10})
    return x * cm["a"] + cm["b"] + len(cm)

# sets
@probe(x)
def set_add_discard_update(x):
    s = set(); s.add(1); s.add(2); s.discard(5); s.update([3, 4]); s.remove(1)
    return x * sum(s) + len(s)

@probe(x)
def set_symdiff_subset(x):
    a, b = {1, 2, 3}, {3, 4}
    return x * len(a ^ b) + a.issubset({1, 2, 3, 4}) + a.isdisjoint({9}) + ({1, 2} <= a)

@probe(x)
def set_of_strings_sorted(x):
    s = {"b", "a", "c"}
    return x * len("".join(sorted(s))), sorted(s)

@probe(x)
def set_pop_single(x):
    s = {7}; v = s.pop()
    return x * v

@probe(x)
def set_inplace_methods(x):
    a = {1, 2, 3, 4}; a.intersection_update({2, 3, 5}); a.difference_update({3})
    a |= {8}; a -= {2}
    return x * sum(a)

@probe(x)
def set_of_tensors_membership(x):
    y = x + 1
    s = {x, y}
    return x + (x in s) + len(s)

@probe(x)
def frozenset_dict_key(x):
    d = {frozenset({1, 2}): 5}
    return x * d[frozenset({2, 1})]

@probe(x)
def set_of_shapes(x):
    ts = [x, x.t(), x]
    return x * len({tuple(t.shape) for t in ts})

@probe(x)
def set_union_multiple_args(x):
    return x * len(set().union([1], {2}, (3, 1))), set([1, 2]).intersection([2, 3], [2])

# lists
@probe(x)
def list_slice_assign_del(x):
    l = list(range(6)); l[1:3] = [9, 9, 9]; del l[::2]; l[-1] = 0
    return x * sum(l), l

@probe(x)
def list_index_count_copy(x):
    l = [1, 2, 2, 3]; c = l.copy(); c.append(4)
    return x * (l.index(2) + l.count(2) + len(c))

@probe(x)
def list_mult_add(x):
    l = [0] * 3 + [1]; l2 = [[0]] * 2; l2[0].append(1)
    return x * len(l) + len(l2[1]), l

@probe(x)
def list_sort_key_reverse(x):
    l = ["bb", "a", "ccc"]; l.sort(key=len, reverse=True)
    return x * len(l[0]), l

@probe(x)
def list_of_tensors_inplace(x):
    l = [x.clone(), x.clone()]; l[0].mul_(2); l[1] += 1
    return l

@probe([x, x * 2])
def list_input_mutation(l):
    l.append(l[0] + l[1]); l.pop(0)
    return l[0] * 2

@probe(x)
def list_extend_generator(x):
    l = [x]; l.extend(t * 2 for t in [x, x])
    return len(l) * l[-1]

@probe(x)
def list_lexicographic_compare(x):
    return x * ([1, 2, 3] < [1, 3]) + ([1, 2] == [1, 2]) + ([2] > [1, 9])

@probe(x)
def list_negative_step_slices(x):
    l = list(range(10))
    return x * sum(l[::-2]) + sum(l[-3:]) + l[-1], l[7:2:-2]

@probe(x)
def list_star_literal(x):
    a = [1, 2]; b = [*a, 3, *range(2)]; c = (*a, *b)
    return x * len(b) + max(*a) + len(c)

@probe(x)
def list_insert_negative_clear(x):
    l = [1, 2, 3]; l.insert(-1, 9); l2 = l[:]; l.clear()
    return x * len(l2) + len(l), l2

@probe(x)
def list_of_lists_transpose_sum(x):
    m = [[1, 2, 3], [4, 5, 6]]
    t = [list(r) for r in zip(*m)]
    return x * t[2][1], t

@probe(x)
def list_iadd_alias(x):
    a = [1]; b = a; a += [2]; a = a + [3]
    return x * (len(a) + len(b))

@probe(x)
def list_sort_stable_tuples(x):
    l = [(1, "b"), (0, "a"), (1, "a")]; l.sort(key=lambda p: p[0])
    return x * l[1][0], l

@probe(x)
def list_remove_tensor_by_identity(x):
    a, b = x, x + 1
    l = [a, b]; l.remove(a)
    return len(l) * l[0]

@probe(x)
def list_copy_module_copy(x):
    import copy
    l = [x, [1, 2]]; s = copy.copy(l); s[1].append(3); s.append(0)
    return len(s) * s[0] + len(l[1])

# tuples
@probe(x)
def tuple_methods(x):
    t = (1, 2, 2, 3)
    return x * (t.count(2) + t.index(3)) + len(t + (4,)) + len(t * 2)

@probe(x)
def tuple_hash_compare(x):
    return x * (hash((1, 2)) == hash((1, 2))) + ((1, 2) < (1, 3)) + ((1,) + (2,) == (1, 2))

@probe(x)
def nested_unpack_star(x):
    (a, *b), c = (1, 2, 3), 4
    *d, e = range(4)
    return x * (a + sum(b) + c + sum(d) + e)

@probe(x)
def return_nested_structure(x):
    return (x, (x + 1, [x * 2, {"k": x - 1, "n": None, "s": "str"}]))

@probe(x)
def tuple_constructor_from_gen(x):
    t = tuple(r.sum() for r in x)
    return t, len(t)

# strings
@probe(x)
def str_format_method(x):
    s = "{}-{:>4}-{name}".format(1, "ab", name="z")
    return x * len(s), s

@probe(x)
def str_percent_formatting(x):
    s = "%s_%d_%.1f_%5.2f" % ("a", 3, 2.25, 1.0); t = "%(k)s" % {"k": "v"}
    return x * len(s + t), s + t

@probe(x)
def str_split_strip_join(x):
    s = "  a,b ,c  ".strip().split(","); s = [p.strip() for p in s]
    return x * len(s), "|".join(s)

@probe(x)
def str_methods_many(x):
    s = "Hello World"
    v = (s.count("o") + s.index("W") + s.isupper() + s.lower().islower() + s.title().istitle()
         + len(s.partition(" ")[2]) + s.endswith(("ld", "x")) + len(s.rsplit(" ", 1)) + len(s.zfill(15))
         + len(s.center(20)) + s.rfind("o") + s.swapcase().startswith("h") + len(s.ljust(13, "*")))
    return x * v

@probe(x)
def str_isdigit_parse(x):
    s = "layer.12.weight"; p = s.split(".")[1]
    n = int(p) if p.isdigit() else 0
    return x * n

@probe(x)
def str_compare_ord_chr(x):
    return x * (("abc" < "abd") + ord("a") - 96 + len(chr(66))), chr(ord("a") + 2)

@probe(x)
def fstring_nested_specs(x):
    w = 6; s = f"{'hi'!s:>{w}}|{3.14159:.{2}f}|{255:#x}|{1000000:,}|{0.25:%}|{-3:+d}|{7:b}"
    return x * len(s), s

@probe(x)
def str_removeprefix_replace(x):
    s = "model.layer.model.x".removeprefix("model.").replace("model", "m", 1).removesuffix(".x")
    return x * len(s), s

@probe(x)
def str_repeat_in(x):
    s = "ab" * 3
    return x * (("ba" in s) + len(s)), s[::-1]

@probe(x)
def str_of_scalars(x):
    s = str(3) + str(2.5) + str(True) + str(None) + repr("q") + repr(1.5) + str([1, "a"]) + str((1,)) + str({"a": 1})
    return x * len(s), s

@probe(x)
def str_of_dtype_device_shape(x):
    s = f"{x.dtype}|{x.device}|{tuple(x.shape)}|{x.shape}"
    return x * len(s), s

@probe(x)
def str_join_map_str(x):
    s = "x".join(map(str, x.shape)) + ",".join(str(i) for i in range(3))
    return x * len(s), s

@probe(x)
def str_splitlines_and_expandtabs(x):
    s = "a\nbb\n\nccc"
    return x * len(s.splitlines()) + len(max(s.split("\n"), key=len))

@probe(x)
def str_encode_bytes(x):
    b = "héllo".encode("utf-8")
    return x * len(b), b.decode()

@probe(x)
def str_maketrans_translate(x):
    s = "a-b_c".translate(str.maketrans("-_", "  "))
    return x * len(s.split()), s

@probe(x)
def str_unbound_methods(x):
    return x * len(str.upper("ab") + str.join("-", ["a", "b"])), str.lower("AB")

@probe(x)
def str_format_map_key_building(x):
    d = {}
    for i, name in enumerate(["w", "b"]):
        d[f"layer{i}.{name}"] = x * i
    return d
