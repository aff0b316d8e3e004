"""A plain PyTorch training loop logging as people write it with torch's SummaryWriter."""
from torch.utils.tensorboard import SummaryWriter

import torch  # noqa: E402

torch.manual_seed(0)
x = torch.randn(512, 16)
y = x @ torch.randn(16, 1) + 0.1 * torch.randn(512, 1)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)

with SummaryWriter(log_dir="runs/loop", flush_secs=30) as writer:
    writer.add_text("config", "lr=1e-2, batch=64, **adam**")
    step = 0
    for epoch in range(3):
        for i in range(0, len(x), 64):
            loss = torch.nn.functional.mse_loss(model(x[i:i + 64]), y[i:i + 64])
            opt.zero_grad()
            loss.backward()
            opt.step()
            writer.add_scalar("Loss/train", loss, step)
            writer.add_scalar("lr", opt.param_groups[0]["lr"], global_step=step)
            step += 1
        with torch.no_grad():
            val = torch.nn.functional.mse_loss(model(x[:128]), y[:128]).item()
        writer.add_scalar("Loss/val", val, epoch)
        writer.add_scalars("loss", {"train": loss.item(), "val": val}, epoch)
        for name, p in model.named_parameters():
            writer.add_histogram(name, p, epoch)
            writer.add_histogram(f"{name}.grad", p.grad, epoch, bins="auto")
        writer.add_images("inputs", x[:8].view(8, 1, 4, 4), epoch)
        writer.flush()
