"""One process of a 2-process JAX run (tests/integration/test_jax_multiprocess.py).

    python jax_multiprocess_child.py LOGDIR PORT PROCESS_ID PROCESS0_ONLY(0|1) [FORMAT]

Joins a real ``jax.distributed`` job on 127.0.0.1:PORT (CPU, gloo
collectives), trains a tiny jitted linear model with optax for 25 steps under
summarylog's JAX SummaryCollector, and prints one JSON line (prefixed
``RESULT ``) with what the parent checks.
"""

from __future__ import annotations

import json
import os
import socket
import sys

import jax

logdir, port, process_id, process0_only = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
fmt = sys.argv[5] if len(sys.argv) > 5 else "tensorboard"
STEPS, FREQ = 25, 5

jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.distributed.initialize(coordinator_address=f"127.0.0.1:{port}", num_processes=2,
                           process_id=process_id, initialization_timeout=20)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402

from summarylog.adapters.jax import SummaryCollector  # noqa: E402

# a real cross-process collective: every process sees both process indices
gathered = np.asarray(multihost_utils.process_allgather(jnp.array([jax.process_index()])))

# each process its own synthetic data (so the two processes' losses differ)
rng = np.random.default_rng(100 + jax.process_index())
x = rng.normal(size=(64, 4)).astype(np.float32)
y = (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32) + 0.25).astype(np.float32)
params = {"w": jnp.zeros((4,)), "b": jnp.zeros(())}
tx = optax.sgd(0.05)
opt_state = tx.init(params)


def loss_fn(p, xb, yb):
    return jnp.mean((xb @ p["w"] + p["b"] - yb) ** 2)


@jax.jit
def train_step(p, s, xb, yb):
    loss, grads = jax.value_and_grad(loss_fn)(p, xb, yb)
    updates, s = tx.update(grads, s, p)
    return optax.apply_updates(p, updates), s, loss


losses = {}
collected = []
with SummaryCollector(logdir, collect_freq=FREQ, total_steps=STEPS,
                      process0_only=process0_only == "1", format=fmt) as sc:
    for step in range(1, STEPS + 1):
        params, opt_state, loss = train_step(params, opt_state, x, y)
        if sc.step(step, loss=loss, params=params):
            collected.append(step)
        losses[step] = loss
files = list(sc.files)
multihost_utils.sync_global_devices("summarylog-files-closed")  # both closed before exit

print("RESULT " + json.dumps({
    "process_index": jax.process_index(), "process_count": jax.process_count(),
    "gathered": gathered.ravel().tolist(), "pid": os.getpid(), "host": socket.gethostname(),
    "enabled": sc.enabled, "files": files, "collected": collected,
    "losses": {str(k): float(v) for k, v in losses.items()},
}), flush=True)
jax.distributed.shutdown()
