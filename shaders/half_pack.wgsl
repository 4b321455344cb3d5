// Largest finite f16: values beyond it would become infinities.
const F16_MAX = 65504.0;

// Values clamped to what f16 holds, so converting them saturates instead of overflowing.
fn in_half_range(v: vec4<f32>) -> vec4<f32> {
    return clamp(v, vec4<f32>(-F16_MAX), vec4<f32>(F16_MAX));
}

// Four values as f16, two to a word, the first in the low half (memory order).
fn half_pack(v: vec4<f32>) -> vec2<u32> {
    let c = in_half_range(v);
    return vec2<u32>(pack2x16float(c.xy), pack2x16float(c.zw));
}
