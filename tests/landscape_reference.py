"""A brute-force numpy reference of MindSpore 2.10's landscape math (written from its
formulas, see the issue-24 research note; it matched MindSpore's own grids to float32
precision), and a tiny MLP trajectory to test against: the tests of every framework's
evaluator compare with it."""

from __future__ import annotations

import numpy as np


def ms_rule(n: str) -> bool:
    return ("weight" in n or "bias" in n) and "moment" not in n


def _dirs(final, flat_dirs, fn):
    out = []
    for d in flat_dirs:
        res, i = {}, 0
        for n, t in final.items():
            if n in fn:
                seg = d[i:i + t.size].reshape(t.shape).astype(np.float32)
                i += t.size
                res[n] = seg * (np.linalg.norm(t) / np.linalg.norm(seg))
            else:
                res[n] = np.zeros(t.shape, np.float32)
        out.append(res)
    return out


def _theta(final, dirs, a, b):
    a, b = np.float32(a), np.float32(b)
    return {n: (final[n] + a * dirs[0][n] + b * dirs[1][n]).astype(np.float32) for n in final}


def pca_reference(points, fn, loss, size):
    """(x, y, z, path_coefs, path_z) for the interval ``points`` (dicts), ``fn`` the
    names given directions, ``loss(params) -> float``."""
    final = points[-1]
    flat = [np.concatenate([p[n].ravel() for n in fn]).astype(np.float64) for p in points]
    m = np.stack([f - flat[-1] for f in flat[:-1]], 1)
    m -= m.mean(axis=0)
    u, s, _ = np.linalg.svd(m, full_matrices=False)
    for k in range(u.shape[1]):
        if u[np.argmax(abs(u[:, k])), k] < 0:
            u[:, k] *= -1
    dirs = _dirs(final, [u[:, 0] * s[0], u[:, 1] * s[1]], set(fn))
    a = np.stack([np.concatenate([dirs[k][n].ravel() for n in fn]) for k in (0, 1)], 1)
    coefs = np.array([np.linalg.lstsq(a, (f - flat[-1]).astype(np.float32), rcond=None)[0]
                      for f in flat])

    def ax(c):
        return np.linspace(c.min() - .2 * np.ptp(c), c.max() + .2 * np.ptp(c), size)

    xs, ys = ax(coefs[:, 0].astype(np.float64)), ax(coefs[:, 1].astype(np.float64))
    z = np.array([[loss(_theta(final, dirs, x, y)) for x in xs] for y in ys])
    path = np.array([loss(_theta(final, dirs, a_, b_)) for a_, b_ in coefs])
    return xs, ys, z, coefs, path


def random_reference(final, fn, loss, size, seed):
    rs = np.random.RandomState(seed)
    total = sum(t.size for t in final.values())
    v, w = rs.normal(size=total), rs.normal(size=total)
    dirs = []
    for d in (v, w):
        res, i = {}, 0
        for n, t in final.items():
            seg = d[i:i + t.size].reshape(t.shape).astype(np.float32)
            i += t.size
            res[n] = seg * (np.linalg.norm(t) / np.linalg.norm(seg)) if n in fn else seg * 0
        dirs.append(res)
    axis = np.linspace(-1, 1, size)
    z = np.array([[loss(_theta(final, dirs, x, y)) for x in axis] for y in axis])
    return axis, z


# -- a tiny MLP: 4 -> 5 -> 1, ReLU, MSE, trained by plain SGD ---------------------------

def data(n_batches=4, bs=8, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n_batches, bs, 4)).astype(np.float32)
    y = (x.sum(-1, keepdims=True) * 0.5 + 0.1).astype(np.float32)
    return [(x[i], y[i]) for i in range(n_batches)]


def forward(p, x):
    h = np.maximum(x @ p["fc1.weight"].T + p["fc1.bias"], 0)
    return h @ p["fc2.weight"].T + p["fc2.bias"]


def np_loss(p, batch):
    x, y = batch
    return float(np.mean((forward(p, x) - y) ** 2))


def mean_loss(batches):
    return lambda p: sum(np_loss(p, b) for b in batches) / len(batches)


def trajectory(steps=8, seed=0, lr=0.05, extra=False):
    """Parameters after each of ``steps`` SGD steps (torch's names and layout);
    ``extra`` adds a non-selected tensor (``bn.moving_mean``) and an int counter."""
    rng = np.random.default_rng(seed)
    p = {"fc1.weight": rng.normal(size=(5, 4)).astype(np.float32) * 0.5,
         "fc1.bias": rng.normal(size=5).astype(np.float32) * 0.1,
         "fc2.weight": rng.normal(size=(1, 5)).astype(np.float32) * 0.5,
         "fc2.bias": np.zeros(1, np.float32) + 0.05}
    batches = data(steps, seed=seed + 1)
    out = []
    for t in range(steps):
        x, y = batches[t]
        h_pre = x @ p["fc1.weight"].T + p["fc1.bias"]
        h = np.maximum(h_pre, 0)
        err = 2 * (h @ p["fc2.weight"].T + p["fc2.bias"] - y) / len(x)
        g2w, g2b = err.T @ h, err.sum(0)
        dh = (err @ p["fc2.weight"]) * (h_pre > 0)
        g1w, g1b = dh.T @ x, dh.sum(0)
        p = {"fc1.weight": p["fc1.weight"] - lr * g1w, "fc1.bias": p["fc1.bias"] - lr * g1b,
             "fc2.weight": p["fc2.weight"] - lr * g2w, "fc2.bias": p["fc2.bias"] - lr * g2b}
        p = {k: v.astype(np.float32) for k, v in p.items()}
        snap = dict(p)
        if extra:
            snap["bn.moving_mean"] = np.full(3, 0.5 + t, np.float32)
            snap["global_step"] = np.array([t], np.int32)
        out.append(snap)
    return out
