// Per-step state shared by every kernel of a forward step. The CPU writes it before a step,
// or a kernel advances it on the GPU when several decode steps run back to back.
struct Step {
    // Absolute position of the first token of this step.
    pos: u32,
    // Tokens in this step: 1 for decode, the batch size for prefill.
    n_tokens: u32,
    // Tokens generated so far in the GPU-resident decode loop.
    generated: u32,
    // Non-zero once the decode loop reached a stop token.
    stopped: u32,
}
