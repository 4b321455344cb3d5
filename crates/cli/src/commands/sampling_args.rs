use doppler_engine::SamplingParams;

/// Sampling flags shared by `run` and `chat`.
#[derive(clap::Args, Clone)]
pub struct SamplingArgs {
    /// Maximum tokens to generate.
    #[arg(long, default_value_t = 256)]
    pub max_tokens: u32,
    /// 0 = greedy.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f32,
    /// 0 = off.
    #[arg(long, default_value_t = 0)]
    pub top_k: u32,
    /// 1 = off.
    #[arg(long, default_value_t = 1.0)]
    pub top_p: f32,
    /// 0 = off.
    #[arg(long, default_value_t = 0.0)]
    pub min_p: f32,
    /// 1 = off.
    #[arg(long, default_value_t = 1.0)]
    pub repeat_penalty: f32,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Stop when the output contains this text (repeatable).
    #[arg(long)]
    pub stop: Vec<String>,
}

impl SamplingArgs {
    pub fn options(&self) -> doppler_engine::GenerateOptions {
        doppler_engine::GenerateOptions {
            sampling: SamplingParams {
                temperature: self.temperature,
                top_k: self.top_k,
                top_p: self.top_p,
                min_p: self.min_p,
                repetition_penalty: self.repeat_penalty,
                seed: self.seed,
                ..SamplingParams::default()
            },
            max_tokens: self.max_tokens,
            stop: self.stop.clone(),
            ignore_eos: false,
        }
    }
}
