"""An hparams sweep as torch's docs show it: one writer per trial, add_hparams at the end."""
from torch.utils.tensorboard import SummaryWriter

import torch  # noqa: E402

torch.manual_seed(0)
x = torch.randn(256, 8)
y = (x.sum(1) > 0).long()
for lr in (0.1, 0.01):
    for bsize in (32, 64):
        for opt_name in ("sgd", "adam"):
            model = torch.nn.Linear(8, 2)
            opt = (torch.optim.SGD if opt_name == "sgd" else torch.optim.Adam)(
                model.parameters(), lr=lr)
            with SummaryWriter(f"runs/sweep/lr{lr}_bs{bsize}_{opt_name}") as w:
                for step in range(20):
                    i = (step * bsize) % len(x)
                    loss = torch.nn.functional.cross_entropy(model(x[i:i + bsize]),
                                                             y[i:i + bsize])
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    w.add_scalar("loss", loss.item(), step)
                acc = (model(x).argmax(1) == y).float().mean().item()
                w.add_hparams({"lr": lr, "bsize": bsize, "optimizer": opt_name,
                               "nesterov": opt_name == "sgd"},
                              {"hparam/accuracy": acc, "hparam/loss": loss.item()})
