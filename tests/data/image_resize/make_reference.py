#!/usr/bin/python3
"""Reference resizes for tests/formats/image_test.cpp, written independently of
src/formats/image_resize.cpp with numpy (Pillow is not installed on the build box).

The filter is Pillow's resampling: for output pixel i of a side of `out` from `inp`,
scale = inp / out, the kernel support widened by max(scale, 1) (antialiasing when
shrinking), centre (i + 0.5) * scale, taps j in [floor(centre - support + 0.5),
floor(centre + support + 0.5)) clipped to the image, weight k((j - centre + 0.5) / max(scale, 1))
normalised to sum 1. Bilinear k = triangle, bicubic k = Keys with a = -0.5. Applied as
two matrices (rows, then columns) in float64 and rounded to uint8 once.

Command (from the repository root):
    /usr/bin/python3 tests/data/image_resize/make_reference.py > tests/data/image_resize/reference.json
"""
import json

import numpy as np


def kernel(name, x):
    x = np.abs(x)
    if name == "bilinear":
        return np.where(x < 1, 1 - x, 0.0)
    a = -0.5
    return np.where(x < 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                    np.where(x < 2, (((x - 5) * x + 8) * x - 4) * a, 0.0))


def weights(inp, out, name):
    support = (1.0 if name == "bilinear" else 2.0)
    scale = inp / out
    fscale = max(scale, 1.0)
    m = np.zeros((out, inp))
    for i in range(out):
        centre = (i + 0.5) * scale
        lo = max(int(np.floor(centre - support * fscale + 0.5)), 0)
        hi = min(int(np.floor(centre + support * fscale + 0.5)), inp)
        j = np.arange(lo, hi)
        w = kernel(name, (j - centre + 0.5) / fscale)
        m[i, lo:hi] = w / w.sum()
    return m


def test_image(w, h):
    y, x, c = np.meshgrid(np.arange(h), np.arange(w), np.arange(3), indexing="ij")
    return ((x * 37 + y * 91 + c * 53 + x * y * 7) % 256).astype(np.float64)  # [h][w][3]


def main():
    src = test_image(13, 11)
    cases = []
    for name in ("bilinear", "bicubic"):
        for (ow, oh) in ((5, 4), (29, 23), (13, 7)):
            wx, wy = weights(13, ow, name), weights(11, oh, name)
            rows = np.einsum("xj,yjc->yxc", wx, src)       # rows first: [11][ow][3]
            out = np.einsum("yi,ixc->yxc", wy, rows)       # then columns: [oh][ow][3]
            out = np.clip(np.rint(out), 0, 255).astype(int)
            cases.append({"filter": name, "width": ow, "height": oh, "rgb": out.reshape(-1).tolist()})
    print(json.dumps({"source": "13x11, v(x, y, c) = (37x + 91y + 53c + 7xy) mod 256", "cases": cases}))


if __name__ == "__main__":
    main()
