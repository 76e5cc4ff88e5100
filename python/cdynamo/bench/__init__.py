"""cdynamo's benchmark suite: real models and microbenchmarks, every backend side by side.

`python -m cdynamo.bench --help`; the layout: registry/models (what runs), backends (how it is
compiled), worker (one model, all backends, in a subprocess), runner (the suite), report and
dashboard (what comes out).
"""
