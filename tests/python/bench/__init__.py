"""Tests of the benchmark harness (python/cdynamo/bench): its logic on fake records, and a smoke run."""
