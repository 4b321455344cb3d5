// Byte-level reads from weights kept in their GGUF block layout inside an array<u32>:
// blocks are 18, 20, 22, 34, 144, 176 or 210 bytes long, so fields are not word-aligned.
// Requires a `weights: array<u32>` storage binding in the including shader.

fn read_u8(byte: u32) -> u32 {
    return (weights[byte >> 2u] >> ((byte & 3u) * 8u)) & 0xffu;
}

fn read_u16(byte: u32) -> u32 {
    if ((byte & 3u) == 3u) {
        return read_u8(byte) | (read_u8(byte + 1u) << 8u);
    }
    return (weights[byte >> 2u] >> ((byte & 3u) * 8u)) & 0xffffu;
}

fn read_u32_unaligned(byte: u32) -> u32 {
    let shift = (byte & 3u) * 8u;
    let lo = weights[byte >> 2u];
    if (shift == 0u) {
        return lo;
    }
    let hi = weights[(byte >> 2u) + 1u];
    return (lo >> shift) | (hi << (32u - shift));
}

fn read_f16(byte: u32) -> f32 {
    return unpack2x16float(read_u16(byte)).x;
}
