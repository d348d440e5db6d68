import acl  # acl-emu run --sanitize tests/sanitize_cases/pool_free_before_result_fixed.py
from concurrent.futures import ThreadPoolExecutor

"""Free before the pool task's result, fixed: the main thread fills the input, submits a task that copies it
in, copies the result out and synchronizes, takes the task's result, then frees the device buffer (submit
orders the fill before the task; result orders the free after the task's synchronize)."""
N = 1 << 20
H2D, D2H = 1, 2


def ok(ret):
    assert ret == 0, f"ret = {ret}: {acl.get_recent_err_msg()}"


def task(context, stream, host, dev):
    ok(acl.rt.set_context(context))
    ok(acl.rt.memcpy_async(dev, N, host, N, H2D, stream))
    ok(acl.rt.memcpy_async(host, N, dev, N, D2H, stream))
    ok(acl.rt.synchronize_stream(stream))
    return 0


ok(acl.init())
ok(acl.rt.set_device(0))
context, ret = acl.rt.get_context()
stream, ret = acl.rt.create_stream()
host, ret = acl.rt.malloc_host(N)
dev, ret = acl.rt.malloc(N, 0)

with ThreadPoolExecutor(max_workers=2) as pool:
    ok(acl.rt.memset(host, N, 7, N))
    done = pool.submit(task, context, stream, host, dev)
    ok(done.result())
    ok(acl.rt.free(dev))

ok(acl.rt.free_host(host))
ok(acl.rt.destroy_stream(stream))
ok(acl.rt.reset_device(0))
ok(acl.finalize())
