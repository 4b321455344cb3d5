/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast and good enough for test data, so the
/// engine needs no `rand` dependency.
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn fill_bytes(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }

    /// Uniform in [0, 1), from the top 24 bits.
    pub fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in [low, high).
    pub fn uniform(&mut self, low: f32, high: f32) -> f32 {
        low + (high - low) * self.next_f32()
    }

    /// Uniform magnitude in [low, high] (at most 127) with a random sign.
    pub fn signed(&mut self, low: u8, high: u8) -> i8 {
        let magnitude = self.range_u8(low, high) as i8;
        if self.next_u64() & 1 == 0 {
            magnitude
        } else {
            -magnitude
        }
    }

    /// Uniform integer in [low, high].
    pub fn range_u8(&mut self, low: u8, high: u8) -> u8 {
        let span = u64::from(high - low) + 1;
        low + (self.next_u64() % span) as u8
    }
}
