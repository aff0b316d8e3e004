"""One rank of a 2-process torch.distributed (gloo) run logging through the
PyTorch SummaryCollector.

    torch_ddp_child.py LOGDIR RANK WORLD_SIZE PORT RANK0_ONLY(0|1) OUT_JSON STEPS

Trains a DistributedDataParallel nn.Linear on this rank's synthetic data
for STEPS steps with ``SummaryCollector(LOGDIR, ..., collect_freq=5)``,
then writes ``{"rank", "pid", "losses": {step: loss}, "files",
"enabled", "rank_seen", "world_size"}`` to OUT_JSON.
"""

import datetime
import json
import os
import sys
import traceback

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from summarylog.adapters.torch import SummaryCollector

logdir, rank, world, port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rank0_only, out_path, steps = sys.argv[5] == "1", sys.argv[6], int(sys.argv[7])

torch.set_num_threads(1)
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                        world_size=world, timeout=datetime.timedelta(seconds=30))
try:
    torch.manual_seed(0)  # the same initial weights on every rank (DDP broadcasts them too)
    model = DistributedDataParallel(nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.MSELoss()
    g = torch.Generator().manual_seed(1000 + rank)  # each rank its own data: its own losses
    w_true = torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
    losses = {}
    with SummaryCollector(logdir, model=model, optimizer=opt, loss_fn=loss_fn,
                          collect_freq=5, rank0_only=rank0_only) as sc:
        for _ in range(steps):
            x = torch.randn(8, 4, generator=g)
            y = x @ w_true + 0.1 * torch.randn(8, 1, generator=g)
            loss = loss_fn(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sc.step(loss=loss, inputs=x)
            losses[sc.global_step] = float(loss.detach())
        info = {"enabled": sc.enabled, "rank_seen": sc.rank, "world_size": sc.world_size}
    info.update(rank=rank, pid=os.getpid(), losses=losses, files=sc.files)
    with open(out_path, "w") as f:
        json.dump(info, f)
    dist.barrier()  # both ranks are done (and closed, their reports written) before either exits
except BaseException:
    traceback.print_exc()
    sys.stdout.flush()
    os._exit(1)
# Out without gloo's teardown (destroy_process_group, the interpreter's exit): once the
# other rank has gone, it sometimes aborts the process ("terminate called without an active
# exception", seen on a rank with no collector at all); the sockets close with the process
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
