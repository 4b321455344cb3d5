// The activation of a gated feed-forward block: GELU with the tanh approximation where
// GELU_TANH is defined (Gemma), else SiLU (Llama, Qwen, Phi).
fn activation(x: f32) -> f32 {
#ifdef GELU_TANH
    // tanh through exp of a clamped argument: tanh of a large input must not become NaN.
    let inner = clamp(0.7978845608028654 * (x + 0.044715 * x * x * x), -15.0, 15.0);
    let e = exp(2.0 * inner);
    return 0.5 * x * (1.0 + (e - 1.0) / (e + 1.0));
#else
    return x / (1.0 + exp(-x));
#endif
}
