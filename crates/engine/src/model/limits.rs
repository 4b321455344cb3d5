//! Upper bounds on the hyperparameters a model file may claim. Each is far above every real
//! model and is checked before anything (a tensor list, a buffer, a table) is sized from it,
//! so a file asking for too much is refused with the key it asked through.

/// llama.cpp's `LLAMA_MAX_LAYERS`.
pub const MAX_LAYERS: u32 = 512;
/// Llama 3.1 405B has 16,384.
pub const MAX_EMBEDDING: u32 = 65_536;
/// Llama 3.1 405B has 53,248.
pub const MAX_FEED_FORWARD: u32 = 262_144;
/// Llama 3.1 405B has 128.
pub const MAX_HEADS: u32 = 1_024;
/// The attention kernels' limit (Gemma 2/3 use 256).
pub const MAX_HEAD_DIM: u32 = 512;
/// Twice Gemma 3's 262,144 tokens: what the tokenizer can build in a few hundred MB.
pub const MAX_VOCAB: u32 = 1 << 19;
/// Positions are exact in f32 up to 2^24 (the RoPE tables and attention use f32 positions).
pub const MAX_CONTEXT: u32 = 1 << 24;
