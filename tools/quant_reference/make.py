#!/usr/bin/env python3
"""Fixtures for the CPU reference dequantizers (crates/engine/src/quant), made by an
implementation that is not ours: gguf-py's `gguf.quants.dequantize` (pip install gguf numpy).

For each type: random blocks (random quant and scale bytes, with the f16 scale fields set to
finite values of either sign, one of them zero; MXFP4's E8M0 exponents around 127, plus the
subnormal scales of exponents 0 and 1) and their dequantized values, written to
tests/data/quant/<TYPE>.bin as: u32 block count, the block bytes, then one f32 per value,
all little-endian. Run from the repository root: python3 tools/quant_reference/make.py
"""
import struct
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.quants import dequantize

# (type, blocks in the fixture, byte offsets of its f16 scale fields)
TYPES = [
    (T.Q2_K, 4, [80, 82]),
    (T.Q3_K, 4, [108]),
    (T.IQ4_NL, 16, [0]),
    (T.IQ4_XS, 4, [0]),
    (T.MXFP4, 16, []),
]
BLOCK_BYTES = {T.Q2_K: 84, T.Q3_K: 110, T.IQ4_NL: 18, T.IQ4_XS: 136, T.MXFP4: 17}


def random_blocks(rng, qtype, count, scale_offsets):
    blocks = rng.integers(0, 256, size=(count, BLOCK_BYTES[qtype]), dtype=np.uint8)
    for b in range(count):
        for offset in scale_offsets:
            magnitude = 0.0 if (b == 1 and offset == scale_offsets[0]) else 2.0 ** rng.uniform(-12, 2)
            scale = np.float16(magnitude * rng.choice([-1.0, 1.0]))
            blocks[b, offset : offset + 2] = np.frombuffer(scale.tobytes(), dtype=np.uint8)
    if qtype == T.MXFP4:
        blocks[:, 0] = rng.integers(115, 140, size=count)
        blocks[:2, 0] = [0, 1]
    return blocks


def main():
    out_dir = Path("tests/data/quant")
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261124)
    for qtype, count, scale_offsets in TYPES:
        blocks = random_blocks(rng, qtype, count, scale_offsets)
        values = dequantize(blocks.reshape(-1), qtype).astype("<f4").reshape(-1)
        assert np.all(np.isfinite(values)), qtype.name
        path = out_dir / f"{qtype.name}.bin"
        path.write_bytes(struct.pack("<I", count) + blocks.tobytes() + values.tobytes())
        print(f"{path}: {count} blocks, {values.size} values")


if __name__ == "__main__":
    main()
