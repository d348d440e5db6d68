import acl  # acl-emu run --sanitize tests/sanitize_cases/thread_write_after_start.py
import threading

"""Host write after the thread started: the main thread starts the worker thread that copies the input buffer
in, then fills that buffer while the worker's copy is queued (nothing orders the fill after the copy: the
event only says the copy was queued)."""
N = 1 << 20
H2D = 1
queued = threading.Event()


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


def worker(context, stream, host, dev):
    ok(acl.rt.set_context(context))
    ok(acl.rt.memcpy_async(dev, N, host, N, H2D, stream))  # hazard: first
    queued.set()
    ok(acl.rt.synchronize_stream(stream))


ok(acl.init())
ok(acl.rt.set_device(0))
context, ret = acl.rt.get_context()
stream, ret = acl.rt.create_stream()
host, ret = acl.rt.malloc_host(N)
dev, ret = acl.rt.malloc(N, 0)

t = threading.Thread(target=worker, args=(context, stream, host, dev))
t.start()
queued.wait()
ok(acl.rt.memset(host, N, 7, N))  # hazard: second
t.join()

ok(acl.rt.free(dev))
ok(acl.rt.free_host(host))
ok(acl.rt.destroy_stream(stream))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
