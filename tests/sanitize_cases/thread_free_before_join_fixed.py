import acl  # acl-emu run --sanitize tests/sanitize_cases/thread_free_before_join_fixed.py
import threading

"""Free before join, fixed: a worker thread copies the result out, synchronizes and returns; the main thread
joins it, then frees the device buffer (the join orders the free after the worker's synchronize)."""
N = 1 << 20
H2D, D2H = 1, 2
NPY_UINT8 = 2


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


def worker(context, stream, host, dev):
    ok(acl.rt.set_context(context))
    ok(acl.rt.memcpy_async(host, N, dev, N, D2H, stream))
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
t.join()
ok(acl.rt.free(dev))

ok(acl.rt.free_host(host))
ok(acl.rt.destroy_stream(stream))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
