// Counter-based random numbers: the draw of step `counter` depends only on (seed, counter),
// so a seed reproduces a generation however its steps are grouped into submits.

// The PCG hash (Jarzynski and Olano, "Hash Functions for GPU Rendering", 2020): a bijection.
fn pcg_hash(v: u32) -> u32 {
    let state = v * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

// Uniform in [0, 1) with 24 random bits.
fn uniform_random(seed_lo: u32, seed_hi: u32, counter: u32) -> f32 {
    let key = pcg_hash(seed_hi ^ pcg_hash(seed_lo));
    let bits = pcg_hash(key ^ pcg_hash(counter));
    return f32(bits >> 8u) * (1.0 / 16777216.0);
}
