// The last kernel of a step: hands the chosen token to the next step and advances the step,
// so decode steps can follow each other on the GPU without the CPU reading anything back.
// The token becomes the next step's input, lands in the sampled-token ring (read back every
// few steps) and in the repetition-penalty history; a stop token sets `stopped`.
#include "step.wgsl"
#include "sampling_common.wgsl"

@group(0) @binding(0) var<storage, read> state: SamplerState;
@group(0) @binding(1) var<storage, read> stop_tokens: array<u32>;
@group(0) @binding(2) var<storage, read_write> step: Step;
@group(0) @binding(3) var<storage, read_write> next_tokens: array<u32>;
@group(0) @binding(4) var<storage, read_write> sampled: array<u32>;
@group(0) @binding(5) var<storage, read_write> history: array<u32>;
@group(0) @binding(6) var<uniform> sizes: SamplerLayout;

@compute @workgroup_size(1)
fn main() {
    let token = state.chosen;
    let generated = step.generated;
    next_tokens[0] = token;
    sampled[generated % sizes.history_capacity] = token;
    history[(state.history_base + generated) % sizes.history_capacity] = token;
    for (var i = 0u; i < sizes.stop_count; i++) {
        if (stop_tokens[i] == token) {
            step.stopped = 1u;
        }
    }
    step.pos += step.n_tokens;
    step.n_tokens = 1u;
    step.generated = generated + 1u;
}
