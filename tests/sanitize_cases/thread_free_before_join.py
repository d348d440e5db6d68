import acl  # acl-emu run --sanitize tests/sanitize_cases/thread_free_before_join.py
import threading

"""Free before join: a worker thread copies the result out and synchronizes, but the main thread frees the
device buffer as soon as the copy is queued, before joining the worker (what tells it the queue is known to
be done is the join, not the event that the copy was queued)."""
N = 1 << 20
H2D, D2H = 1, 2
NPY_UINT8 = 2
queued = threading.Event()


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


def worker(context, stream, host, dev):
    ok(acl.rt.set_context(context))
    ok(acl.rt.memcpy_async(host, N, dev, N, D2H, stream))  # hazard: first
    queued.set()
    ok(acl.rt.synchronize_stream(stream))


ok(acl.init())
ok(acl.rt.set_device(0))
context, ret = acl.rt.get_context()
stream, ret = acl.rt.create_stream()
host, ret = acl.rt.malloc_host(N)
dev, ret = acl.rt.malloc(N, 0)
acl.util.ptr_to_numpy(host, (N,), NPY_UINT8)[:] = 3
ok(acl.rt.memcpy(dev, N, host, N, H2D))

t = threading.Thread(target=worker, args=(context, stream, host, dev))
t.start()
queued.wait()
ok(acl.rt.free(dev))  # hazard: second
t.join()

ok(acl.rt.free_host(host))
ok(acl.rt.destroy_stream(stream))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
