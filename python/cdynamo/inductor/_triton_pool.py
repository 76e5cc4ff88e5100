# The worker processes of the Triton build service: fresh interpreters fed tasks over sockets.
# Assumes Linux or macOS (pass_fds) and that _triton_worker.py imports nothing but the stdlib and Triton.
"""Worker processes for cdynamo.inductor.triton_build.

A worker is a fresh interpreter (sys.executable) started with subprocess, never forked, so that it
inherits no CUDA context. Not multiprocessing's spawn either: spawn re-runs the parent's main
script in every worker, and a script without an `if __name__ == "__main__"` guard (common on
Linux, where fork is the default) would compile its model again there and die trying to start
workers of its own. The bootstrap takes the parent's sys.path (so that Triton is found where the
parent found it), loads _triton_worker.py by path (never cdynamo's package, and with it torch),
which warms up and then serves tasks on an inherited socket wrapped as a multiprocessing
Connection.

Each worker has a dispatcher thread in the parent. A dispatcher takes a task from the shared queue
only while its worker is warm and waits for the reply with a timeout; a worker that dies or times
out is killed and replaced, and the task gets a failure reply naming the cause. If no worker can be
started at all, the pool runs tasks through its fallback (compiling in the parent) so that nothing
waits forever. Threads waiting for results may also run queued tasks themselves (take()).
"""
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from multiprocessing.connection import Connection

from . import _triton_worker as worker

# Seconds one compile may take in a worker before the worker is killed and the kernel fails.
compile_timeout_s = 300.0

# Seconds a new worker may take to import Triton and warm up (about 1 s on an idle machine).
worker_start_timeout_s = 120.0

# Upper bound on the worker count (each worker holds an LLVM of its own, some 200 MB): a
# training graph's compile builds its forward's and backward's kernels at once, and every core
# of the H200 machine's 16 has one to build.
MAX_WORKERS = 16

_BOOTSTRAP = """
import importlib.util, json, sys
from multiprocessing.connection import Connection
worker_path, fd, path = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
sys.path[:] = path
spec = importlib.util.spec_from_file_location("cdynamo_triton_worker", worker_path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
module.serve(Connection(fd))
"""


# Pools of fewer workers than this get help from the thread waiting for their kernels
# (triton_build._help_pool); larger ones compile alone.
HELPED_BELOW = 4


def worker_count():
    """CDYNAMO_TRITON_WORKERS if set, else one less than the usable cores (the waiting process
    keeps one: it loads each finished kernel, and compiles too where the pool is small), at least
    1 and at most MAX_WORKERS."""
    configured = os.environ.get("CDYNAMO_TRITON_WORKERS")
    if configured:
        return max(1, int(configured))
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores - 1, MAX_WORKERS))


def failure(task, stage, error):
    """A failure reply for task, in _triton_worker's reply format."""
    return {"ok": False, "stage": stage, "error": error, "source_path": os.path.join(task["entry_dir"], "kernel.py")}


class WorkerDied(Exception):
    pass


class Worker:
    """One build process and the parent's end of the socket it serves."""

    def __init__(self):
        parent_end, child_end = socket.socketpair()
        try:
            command = [sys.executable, "-c", _BOOTSTRAP, os.path.abspath(worker.__file__), str(child_end.fileno()), json.dumps(sys.path)]
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, pass_fds=(child_end.fileno(),))
        except BaseException:
            parent_end.close()
            raise
        finally:
            child_end.close()
        self.conn = Connection(parent_end.detach())
        self.closing = threading.Lock()

    def _receive(self, deadline):
        if not self.conn.poll(max(0.0, deadline - time.monotonic())):
            raise TimeoutError
        try:
            return self.conn.recv()
        except (EOFError, OSError) as error:
            raise WorkerDied from error

    def wait_ready(self, timeout):
        """Wait for the worker's hello, sent once it has imported Triton and warmed up."""
        self._receive(time.monotonic() + timeout)

    def run(self, task, timeout):
        """The worker's reply to task; TimeoutError or WorkerDied if none comes."""
        try:
            self.conn.send(task)
        except (OSError, ValueError) as error:
            raise WorkerDied from error
        return self._receive(time.monotonic() + timeout)

    def exit_code(self):
        try:
            return self.process.wait(2)
        except subprocess.TimeoutExpired:
            return None

    def kill(self):
        """Stop the process; its dispatcher then sees the socket close and calls stop()."""
        if self.process.poll() is None:
            self.process.kill()

    def stop(self):
        self.kill()
        self.process.wait(5)
        with self.closing:  # shutdown's thread and the dispatcher may both get here
            if not self.conn.closed:
                self.conn.close()


class WorkerPool:
    """size workers behind one queue; fallback(task) -> reply runs a task when no worker can."""

    def __init__(self, size, fallback):
        self.size = size
        self.tasks = queue.SimpleQueue()
        self.fallback = fallback
        self.lock = threading.Lock()
        self.live_dispatchers = size
        self.closed = False  # shutdown() was called
        self.last_failure = None  # why the last worker could not start
        self.workers = set()
        self.threads = [threading.Thread(target=self._dispatch, name=f"cdynamo-triton-build-{i}", daemon=True) for i in range(size)]
        for thread in self.threads:
            thread.start()

    def submit(self, task):
        """A Future of the reply dict for task (see _triton_worker)."""
        future = Future()
        with self.lock:
            if self.live_dispatchers > 0:
                self.tasks.put((task, future))
                return future
        future.set_result(self.fallback(task))
        return future

    def take(self):
        """A queued (task, future) for the caller to run itself, or None."""
        try:
            item = self.tasks.get_nowait()
        except queue.Empty:
            return None
        if item is None:  # a shutdown marker: leave it for a dispatcher
            self.tasks.put(None)
        return item

    def _start_worker(self):
        """A warm worker, or None (the reason in last_failure)."""
        try:
            started = Worker()
        except Exception as error:  # noqa: BLE001 - e.g. no sys.executable
            self.last_failure = repr(error)
            return None
        with self.lock:
            self.workers.add(started)
        try:
            started.wait_ready(worker_start_timeout_s)
            return started
        except (TimeoutError, WorkerDied):
            self.last_failure = f"the worker (pid {started.process.pid}) did not start, exit code {started.exit_code()}"
        self._retire(started)
        return None

    def _retire(self, stopped):
        stopped.stop()
        with self.lock:
            self.workers.discard(stopped)

    def _dispatch(self):
        current = None
        try:
            while not self.closed:
                if current is None and (current := self._start_worker()) is None:
                    return
                item = self.tasks.get()
                if item is None:
                    return
                task, future = item
                if self.closed:
                    future.set_result(failure(task, "compiling", "the build pool was shut down"))
                    return
                try:
                    reply, current = self._run_one(current, task)
                except BaseException as unexpected:  # noqa: BLE001 - the task must end whatever happens
                    reply = failure(task, "dispatching", repr(unexpected))
                future.set_result(reply)
        finally:
            if current is not None:
                self._retire(current)
            self._dispatcher_exited()

    def _dispatcher_exited(self):
        """The last dispatcher to go hands what is still queued to the fallback."""
        with self.lock:
            self.live_dispatchers -= 1
            if self.live_dispatchers > 0:
                return
        if not self.closed:
            sys.stderr.write(f"cdynamo: no Triton build worker could start ({self.last_failure}); building in this process\n")
        while (item := self.take()) is not None:
            task, future = item
            future.set_result(failure(task, "compiling", "the build pool was shut down") if self.closed else self.fallback(task))

    def _run_one(self, current, task):
        """(reply, the worker to use next: current, or None when it was lost)."""
        try:
            return current.run(task, compile_timeout_s), current
        except TimeoutError:
            error = f"no result after {compile_timeout_s:g} s; the worker (pid {current.process.pid}) was stopped"
        except WorkerDied:
            error = f"the build worker (pid {current.process.pid}) died, exit code {current.exit_code()}"
        except Exception as unexpected:  # noqa: BLE001 - e.g. an unpicklable reply
            error = f"the build worker failed: {unexpected!r}"
        self._retire(current)
        return failure(task, "compiling", error), None

    def shutdown(self):
        """Stop every worker; dispatchers exit once they see their marker or their socket close."""
        self.closed = True
        for _ in self.threads:
            self.tasks.put(None)
        with self.lock:
            running = list(self.workers)
        for worker_to_stop in running:
            worker_to_stop.kill()
