"""How fast an outer reduction (a sum over the rows of a row-major R×C matrix: a column sum, batch
norm's backward over channels-last N·H·W) runs as the split Triton kernels the Triton target
generates, over launch configurations and chunk counts: the data behind the split and launch
heuristics. Usage (a CUDA machine): python bench/outer_reduction_sweep.py [--shapes 8192x8192,...]"""
import argparse
import itertools

import torch
import triton
import triton.language as tl


@triton.jit
def partial_sums(src, dst, xnumel, rnumel, columns, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr,
                 EVICT_FIRST: tl.constexpr):
    # program p sums a chunk of rnumel rows for XBLOCK consecutive (chunk, column) pairs
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    base = (xindex // columns) * (rnumel * columns) + xindex % columns
    acc = tl.zeros([XBLOCK, RBLOCK], tl.float32)
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + tl.arange(0, RBLOCK)[None, :]
        mask = xmask & (rindex < rnumel)
        if EVICT_FIRST:
            v = tl.load(src + base + columns * rindex, mask=mask, other=0.0, eviction_policy="evict_first")
        else:
            v = tl.load(src + base + columns * rindex, mask=mask, other=0.0)
        acc += v
    tl.store(dst + xindex, tl.sum(acc, 1)[:, None], mask=xmask)


CONFIGS = [(64, 64, 8), (64, 32, 4), (64, 16, 4), (64, 8, 4), (128, 8, 4), (128, 16, 8), (32, 32, 4),
           (32, 16, 2), (256, 8, 8), (16, 64, 4)]


def divisor_near(n, wanted):
    best = 1
    for d in range(1, min(n, 4 * wanted) + 1):
        if n % d == 0 and abs(d - wanted) < abs(best - wanted):
            best = d
    return best


def sweep(rows, columns, warmup_ms, rep_ms):
    x = torch.randn(rows, columns, device="cuda")
    reference = x.double().sum(0)
    eager = triton.testing.do_bench(lambda: x.sum(0), warmup=warmup_ms, rep=rep_ms)
    copy_dst = torch.empty_like(x)
    copy = triton.testing.do_bench(lambda: copy_dst.copy_(x), warmup=warmup_ms, rep=rep_ms)
    read_gbs = x.numel() * 4 / 1e6
    print(f"\n## {rows}x{columns}: eager sum(0) {eager * 1e3:.1f} us ({read_gbs / eager:.0f} GB/s), "
          f"copy {copy * 1e3:.1f} us ({2 * read_gbs / copy:.0f} GB/s)")
    results = []
    for (xblock, rblock, warps), evict in itertools.product(CONFIGS, (False, True)):
        if xblock > columns * 4:
            continue
        for programs in (128, 256, 512, 1024, 2048, 4096, 8192):
            chunks = divisor_near(rows, max(1, programs * xblock // columns))
            chunk_rows = rows // chunks
            partial = torch.empty(chunks * columns, device="cuda")
            grid = (triton.cdiv(chunks * columns, xblock),)
            run = lambda: partial_sums[grid](x, partial, chunks * columns, chunk_rows, columns,  # noqa: E731
                                             XBLOCK=xblock, RBLOCK=rblock, EVICT_FIRST=evict, num_warps=warps)
            run()
            error = (partial.view(chunks, columns).double().sum(0) - reference).abs().max().item()
            ms = triton.testing.do_bench(run, warmup=warmup_ms, rep=rep_ms)
            results.append((ms, xblock, rblock, warps, evict, chunks, grid[0], error))
    results.sort()
    print("us     GB/s  XBLOCK RBLOCK warps evict chunks programs  error")
    for ms, xblock, rblock, warps, evict, chunks, programs, error in results[:12]:
        print(f"{ms * 1e3:6.1f} {read_gbs / ms:5.0f}  {xblock:6} {rblock:6} {warps:5} {int(evict):5} {chunks:6} "
              f"{programs:8}  {error:.1e}")
    by_config = {}
    for ms, xblock, rblock, warps, evict, chunks, programs, error in results:
        by_config.setdefault((xblock, rblock, warps, evict), (ms, chunks))
    print("best per configuration:", ", ".join(f"{k}:{v[0] * 1e3:.1f}us@{v[1]}" for k, v in sorted(by_config.items(), key=lambda kv: kv[1])))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shapes", default="8192x8192,802816x64,200704x64,50176x128,12544x256,3136x512,4096x768")
    parser.add_argument("--warmup-ms", type=int, default=10)
    parser.add_argument("--rep-ms", type=int, default=40)
    args = parser.parse_args()
    for shape in args.shapes.split(","):
        rows, columns = (int(v) for v in shape.split("x"))
        sweep(rows, columns, args.warmup_ms, args.rep_ms)


if __name__ == "__main__":
    main()
