//! The transformer kernels (RMSNorm, RoPE, KV store + attention, gated activations, residual
//! add, last-row copy) against f64 CPU references, on whatever adapter wgpu finds (lavapipe
//! in CI). Needs: compute shaders; the f16 KV-cache path runs where the adapter has
//! shader-f16, and the f32 path always runs (by disabling f16).

mod support;

use std::sync::Arc;

use doppler_engine::{
    gpu::{Element, GpuContext, GpuOptions, GpuTensor, OpList},
    kernels::{
        attention::{record_attention, record_kv_store, AttentionLayer, FlashPartials, FlashTile, KvCache},
        decode_attention::{record_decode_attention, record_decode_attention_with_qk_step},
        elementwise::{record_add, record_copy_last_row, record_gated_activation, Activation},
        fused_norm::{record_residual_norm, ResidualNorms, ResidualRows},
        fused_qk::{record_qk_rope_store, QkNorms, QkStep, QkvRows},
        matmul::{record_quantize_q8, Q8Vector},
        norm::{record_rms_norm, NormOutput, RmsNorm},
        rope::{record_rope, rope_table, RopeFrequencies, RopeHeads, RopeStyle, RopeTable},
    },
};
use half::f16;
use support::{
    compare::assert_close,
    gpu::{f32_tensor, gpu, read_tensor, run, step_buffer, values, without_subgroups},
};

/// The default context (an f16 KV cache and subgroup reductions where the adapter has them)
/// and one with neither.
fn default_and_f32_contexts() -> [Arc<GpuContext>; 2] {
    [
        gpu(GpuOptions::default()),
        gpu(GpuOptions { disable_f16: true, disable_subgroups: true, ..Default::default() }),
    ]
}

/// Those two, and the default one taking a GPU's shapes on a CPU adapter (lavapipe), so that the
/// block kernel's 256-thread tiles are tested there too.
fn attention_contexts() -> [Arc<GpuContext>; 3] {
    let [default, f32] = default_and_f32_contexts();
    [default, f32, gpu(GpuOptions { gpu_shapes_on_cpu: true, ..Default::default() })]
}

fn rms_norm_reference(x: &[f32], w: &[f32], dim: usize, eps: f32) -> Vec<f64> {
    x.chunks(dim)
        .flat_map(|row| {
            let mean = row.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / dim as f64;
            let scale = 1.0 / (mean + eps as f64).sqrt();
            row.iter().zip(w).map(move |(&v, &w)| v as f64 * scale * w as f64)
        })
        .collect()
}

#[test]
fn rms_norm_matches_reference_in_all_output_modes() {
    let ctx = gpu(GpuOptions::default());
    let (dim, rows_per_token, n_tokens) = (200usize, 3u32, 4u32);
    let count = dim * rows_per_token as usize * n_tokens as usize;
    let x = values(count, 1);
    let w = values(dim, 2);
    let base = values(count, 3);
    let expected = rms_norm_reference(&x, &w, dim, 1e-6);
    // Tolerance: f32 sums of 200 squares, relative error well under 1e-5.
    for mode in ["to", "add", "in_place"] {
        let width = dim * rows_per_token as usize;
        let x_buf = f32_tensor(&ctx, width, &x);
        let w_buf = f32_tensor(&ctx, dim, &w);
        let out = f32_tensor(&ctx, width, &base);
        let step = step_buffer(&ctx, 0, n_tokens);
        let output = match mode {
            "to" => NormOutput::To(&out),
            "add" => NormOutput::AddTo(&out),
            _ => NormOutput::InPlace,
        };
        let mut ops = OpList::new();
        let norm = RmsNorm { weight: &w_buf, eps: 1e-6 };
        record_rms_norm(&ctx, &mut ops, "norm", &x_buf, norm, output, &step).unwrap();
        run(&ctx, &ops, n_tokens);
        let (actual, want): (Vec<f32>, Vec<f64>) = match mode {
            "to" => (read_tensor(&ctx, &out), expected.clone()),
            "add" => {
                (read_tensor(&ctx, &out), expected.iter().zip(&base).map(|(e, &b)| e + b as f64).collect())
            }
            _ => (read_tensor(&ctx, &x_buf), expected.clone()),
        };
        assert_close(&format!("rms_norm {mode}"), &actual, &want, 1e-5, 1e-5);
    }
}

#[test]
fn rope_table_matches_exact_angles() {
    let table = rope_table(&RopeFrequencies::plain(10_000.0), 64, 300);
    for (pos, pair) in [(0usize, 0usize), (1, 5), (299, 0), (299, 31), (123, 17)] {
        let theta = pos as f64 * 10_000f64.powf(-2.0 * pair as f64 / 64.0);
        let [c, s] = table[pos * 32 + pair];
        // f32 frequencies times positions up to 300: angles good to ~3e-5 rad.
        assert!(
            (c as f64 - theta.cos()).abs() < 1e-4 && (s as f64 - theta.sin()).abs() < 1e-4,
            "pos {pos} pair {pair}"
        );
    }
    let scaled =
        rope_table(&RopeFrequencies { linear_scale: 8.0, ..RopeFrequencies::plain(10_000.0) }, 64, 20);
    let theta = 16.0f64 / 8.0;
    assert!((scaled[16 * 32][0] as f64 - theta.cos()).abs() < 1e-5, "linear scaling divides positions");
}

#[test]
fn rope_rotates_both_pair_styles() {
    let ctx = gpu(GpuOptions::default());
    let (n_heads, head_dim, n_tokens, pos) = (3u32, 16u32, 5u32, 7u32);
    let count = (n_heads * head_dim * n_tokens) as usize;
    let x = values(count, 4);
    let max_positions = 64;
    let table = rope_table(&RopeFrequencies::plain(500.0), head_dim, max_positions);
    let gpu_table = RopeTable::new(&ctx, &RopeFrequencies::plain(500.0), head_dim, max_positions);
    for style in [RopeStyle::Interleaved, RopeStyle::Neox] {
        let buf = f32_tensor(&ctx, (n_heads * head_dim) as usize, &x);
        let step = step_buffer(&ctx, pos, n_tokens);
        let mut ops = OpList::new();
        record_rope(&ctx, &mut ops, "rope", &buf, &gpu_table, &step, RopeHeads { head_dim, style }).unwrap();
        run(&ctx, &ops, n_tokens);
        let mut expected: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let pairs = head_dim as usize / 2;
        for row in 0..(n_heads * n_tokens) as usize {
            let token = row / n_heads as usize;
            let base = row * head_dim as usize;
            for i in 0..pairs {
                let [c, s] = table[(pos as usize + token) * pairs + i];
                let (a, b) = match style {
                    RopeStyle::Interleaved => (base + 2 * i, base + 2 * i + 1),
                    RopeStyle::Neox => (base + i, base + i + pairs),
                };
                let (x0, x1) = (x[a] as f64, x[b] as f64);
                expected[a] = x0 * c as f64 - x1 * s as f64;
                expected[b] = x0 * s as f64 + x1 * c as f64;
            }
        }
        assert_close(&format!("rope {style:?}"), &read_tensor(&ctx, &buf), &expected, 1e-6, 1e-6);
    }
}

/// Llama 3.1's `rope_freqs` and Phi 3's LongRoPE factors divide each pair's frequency, and
/// LongRoPE's attention factor multiplies cos and sin: checked on the GPU against angles made
/// in f64 from scratch.
#[test]
fn rope_applies_frequency_divisors_and_attention_factor() {
    let ctx = gpu(GpuOptions::default());
    let (n_heads, head_dim, rot_dim, n_tokens, pos) = (2u32, 24u32, 16u32, 3u32, 1500u32);
    let pairs = rot_dim as usize / 2;
    let divisors: Vec<f32> = (0..pairs).map(|i| 1.0 + 3.5 * i as f32 / pairs as f32).collect();
    let rope = RopeFrequencies {
        theta_base: 10_000.0,
        linear_scale: 1.0,
        divisors: Some(divisors.clone()),
        attention_factor: 1.19,
    };
    let gpu_table = RopeTable::new(&ctx, &rope, rot_dim, 2048);
    let count = (n_heads * head_dim * n_tokens) as usize;
    let x = values(count, 21);
    for style in [RopeStyle::Interleaved, RopeStyle::Neox] {
        let buf = f32_tensor(&ctx, (n_heads * head_dim) as usize, &x);
        let mut ops = OpList::new();
        let step = step_buffer(&ctx, pos, n_tokens);
        record_rope(&ctx, &mut ops, "rope", &buf, &gpu_table, &step, RopeHeads { head_dim, style }).unwrap();
        run(&ctx, &ops, n_tokens);
        let mut expected: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        for row in 0..(n_heads * n_tokens) as usize {
            let p = (pos as usize + row / n_heads as usize) as f64;
            let base = row * head_dim as usize;
            for (i, &divisor) in divisors.iter().enumerate() {
                let frequency = 10_000f64.powf(-2.0 * i as f64 / rot_dim as f64) / divisor as f64;
                let (c, s) = ((p * frequency).cos() * 1.19, (p * frequency).sin() * 1.19);
                let (a, b) = match style {
                    RopeStyle::Interleaved => (base + 2 * i, base + 2 * i + 1),
                    RopeStyle::Neox => (base + i, base + i + pairs),
                };
                let (x0, x1) = (x[a] as f64, x[b] as f64);
                expected[a] = x0 * c - x1 * s;
                expected[b] = x0 * s + x1 * c;
            }
        }
        // f32 angles near 1,500 rad are good to ~1e-4.
        assert_close(&format!("rope {style:?}"), &read_tensor(&ctx, &buf), &expected, 5e-4, 1e-4);
    }
}

struct AttentionCase {
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    window: u32,
    cache_len: u32,
    /// Tokens already cached before the step.
    history: u32,
    n_tokens: u32,
    /// Decode's key-split kernels (n_tokens must be 1) instead of the general one.
    split: bool,
    /// Added to dimension 0 of every key at position p: key_ramp · p / total, so that the
    /// scores of later keys keep passing (or falling behind) the earlier ones by wide margins.
    key_ramp: f32,
}

/// Runs two steps (history, then the batch under test) so the ring and the mask both matter,
/// and compares the second step's output with f64 attention over the full sequence.
fn check_attention(ctx: &GpuContext, case: &AttentionCase) {
    let kv_dim = (case.n_kv_heads * case.head_dim) as usize;
    let q_dim = (case.n_heads * case.head_dim) as usize;
    let total = (case.history + case.n_tokens) as usize;
    let mut keys = values(total * kv_dim, 10);
    for (p, key) in keys.chunks_mut(case.head_dim as usize).enumerate() {
        key[0] += case.key_ramp * (p / case.n_kv_heads as usize) as f32 / total as f32;
    }
    let vals = values(total * kv_dim, 11);
    let queries = values(case.n_tokens as usize * q_dim, 12);
    let scale = 1.0 / (case.head_dim as f32).sqrt();
    let cache = KvCache::new(ctx, "test", case.cache_len, case.n_kv_heads, case.head_dim);
    let rounded = |v: &[f32]| -> Vec<f64> {
        v.iter().map(|&x| if cache.f16 { f16::from_f32(x).to_f64() } else { x as f64 }).collect()
    };

    let max_tokens = case.history.max(case.n_tokens) as usize;
    let rows = |label: &str, rows: usize, width: usize| {
        GpuTensor::zeroed(ctx, label, rows as u32, width as u32, Element::F32)
    };
    let k_buf = rows("k", max_tokens, kv_dim);
    let v_buf = rows("v", max_tokens, kv_dim);
    let q_buf = f32_tensor(ctx, q_dim, &queries);
    let out = rows("out", case.n_tokens as usize, q_dim);
    let step = step_buffer(ctx, 0, case.history);
    let mut store = OpList::new();
    record_kv_store(ctx, &mut store, "store", &cache, &k_buf, &v_buf, &step).unwrap();
    // A decode step's merge writes the output in Q8 form too where heads hold whole blocks.
    let q8_output =
        (case.split && case.head_dim.is_multiple_of(32)).then(|| Q8Vector::new(ctx, "out q8", q_dim as u32));
    // The tensor-core kernel runs twice: each block of queries in one workgroup, then with its
    // keys split over several where there are partials for them (the engine's prefill; a step
    // of a few blocks deep enough in the cache splits).
    let flash = !case.split && FlashTile::for_cache(ctx, &cache).is_some();
    let partials =
        flash.then(|| FlashPartials::new(ctx, case.n_tokens, case.n_heads, case.head_dim)).flatten();
    let record = |flash_partials: Option<&FlashPartials>| {
        let layer = AttentionLayer {
            cache: &cache,
            output: &out,
            output_q8: q8_output.as_ref(),
            flash_partials,
            step: &step,
            window: case.window,
            scale,
        };
        let mut attend = OpList::new();
        if case.split {
            record_decode_attention(ctx, &mut attend, "attention", &q_buf, &layer).unwrap();
        } else {
            record_attention(ctx, &mut attend, "attention", &q_buf, &layer).unwrap();
        }
        attend
    };
    let mut variants = vec![(record(None), false)];
    if let Some(partials) = &partials {
        variants.push((record(Some(partials)), true));
    }

    // History goes in batches no larger than the step under test, as the engine's prefill
    // does: a ring holds window + one batch, so a single larger batch would overwrite itself.
    // A cache that is no ring takes the history in one batch.
    let batch =
        if case.cache_len >= case.history + case.n_tokens { case.history.max(1) } else { case.n_tokens };
    let mut batches: Vec<(u32, u32)> =
        (0..case.history).step_by(batch as usize).map(|p| (p, batch.min(case.history - p))).collect();
    batches.push((case.history, case.n_tokens));
    for (pos, n) in batches {
        let range = pos as usize * kv_dim..(pos + n) as usize * kv_dim;
        ctx.queue.write_buffer(k_buf.buffer(), 0, bytemuck::cast_slice(&keys[range.clone()]));
        ctx.queue.write_buffer(v_buf.buffer(), 0, bytemuck::cast_slice(&vals[range]));
        step.write(&ctx.queue, pos, n);
        run(ctx, &store, n);
    }

    let (k64, v64) = (rounded(&keys), rounded(&vals));
    let group = (case.n_heads / case.n_kv_heads) as usize;
    let hd = case.head_dim as usize;
    let mut expected = vec![0.0f64; case.n_tokens as usize * q_dim];
    for t in 0..case.n_tokens as usize {
        let q_pos = case.history as usize + t;
        let first = if case.window > 0 { (q_pos + 1).saturating_sub(case.window as usize) } else { 0 };
        for h in 0..case.n_heads as usize {
            let kv_h = h / group;
            let q = &queries[(t * case.n_heads as usize + h) * hd..][..hd];
            let scores: Vec<f64> = (first..=q_pos)
                .map(|p| (0..hd).map(|d| q[d] as f64 * scale as f64 * k64[p * kv_dim + kv_h * hd + d]).sum())
                .collect();
            let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
            let sum: f64 = weights.iter().sum();
            for d in 0..hd {
                let value: f64 =
                    (first..=q_pos).zip(&weights).map(|(p, w)| w * v64[p * kv_dim + kv_h * hd + d]).sum();
                expected[(t * case.n_heads as usize + h) * hd + d] = value / sum;
            }
        }
    }
    // Queries stay f32 on the GPU and scores accumulate in f32 over head_dim terms, except on
    // the tensor cores, whose operands (queries and weights in [0, 1]) are f16: relative errors
    // of 2⁻¹¹ in each, on scores of a few units and averages of values in [-1, 1].
    let (abs_tol, rel_tol) = if flash { (3e-3, 3e-3) } else { (2e-5, 1e-4) };
    for (attend, key_splits) in &variants {
        // Zeros first, so that a variant that leaves rows unwritten cannot pass on the last one's.
        ctx.queue.write_buffer(out.buffer(), 0, bytemuck::cast_slice(&vec![0f32; expected.len()]));
        run(ctx, attend, case.n_tokens);
        let actual = read_tensor(ctx, &out);
        assert_close(
            &format!(
                "attention (f16 cache: {}, subgroups: {}, split: {}, tensor cores: {flash}, key splits: {key_splits}, {} queries at {})",
                cache.f16, ctx.caps.subgroups, case.split, case.n_tokens, case.history
            ),
            &actual,
            &expected,
            abs_tol,
            rel_tol,
        );
    }
    if let Some(q8) = q8_output {
        // Bit for bit the standalone quantization of the f32 output.
        let quantized = Q8Vector::new(ctx, "quantized", q_dim as u32);
        let mut ops = OpList::new();
        record_quantize_q8(ctx, &mut ops, "quantize", &out, &quantized).unwrap();
        run(ctx, &ops, 1);
        let read = |v: &Q8Vector| {
            let words = ctx.read_u32(v.words.buffer(), q_dim / 4).unwrap();
            let scales = ctx.read_f32(v.scales.buffer(), q_dim / 32).unwrap();
            (words, scales)
        };
        assert!(read(&q8) == read(&quantized), "the merge's Q8 output differs from the quantized output");
    }
}

#[test]
fn attention_matches_reference_with_gqa_windows_and_rings() {
    let cases = [
        // Llama-like: GQA 3:1, full attention, more keys than one tile.
        AttentionCase {
            n_heads: 6,
            n_kv_heads: 2,
            head_dim: 64,
            window: 0,
            cache_len: 256,
            history: 70,
            n_tokens: 5,
            split: false,
            key_ramp: 0.0,
        },
        // Gemma-like: one kv head, head_dim 256, sliding window over a ring of window + batch.
        AttentionCase {
            n_heads: 4,
            n_kv_heads: 1,
            head_dim: 256,
            window: 9,
            cache_len: 9 + 6,
            history: 20,
            n_tokens: 6,
            split: false,
            key_ramp: 0.0,
        },
        // Prefill blocks of 4 queries: 19 tokens (a partial last block), head_dim 128 (several
        // thread groups per column), GQA 2:1, full attention.
        AttentionCase {
            n_heads: 4,
            n_kv_heads: 2,
            head_dim: 128,
            window: 0,
            cache_len: 512,
            history: 150,
            n_tokens: 19,
            split: false,
            key_ramp: 0.0,
        },
        // Prefill over more keys than one 256-key tile, so the online softmax rescales.
        AttentionCase {
            n_heads: 2,
            n_kv_heads: 1,
            head_dim: 64,
            window: 0,
            cache_len: 640,
            history: 520,
            n_tokens: 9,
            split: false,
            key_ramp: 0.0,
        },
        // Gemma-like prefill: a window shorter than the block's span, on a wrapped ring.
        AttentionCase {
            n_heads: 4,
            n_kv_heads: 1,
            head_dim: 256,
            window: 12,
            cache_len: 12 + 21,
            history: 40,
            n_tokens: 21,
            split: false,
            key_ramp: 0.0,
        },
        // Gemma-like prefill on a ring of 32: the window starts mid-tile and the ring wraps.
        AttentionCase {
            n_heads: 4,
            n_kv_heads: 1,
            head_dim: 256,
            window: 11,
            cache_len: 32,
            history: 45,
            n_tokens: 21,
            split: false,
            key_ramp: 0.0,
        },
        // Prefill of 45 queries (a partial second block of 32) over five 64-key tiles, GQA 4:1.
        AttentionCase {
            n_heads: 8,
            n_kv_heads: 2,
            head_dim: 128,
            window: 0,
            cache_len: 352,
            history: 300,
            n_tokens: 45,
            split: false,
            key_ramp: 0.0,
        },
        // Phi-3's heads of 96 values on the tensor-core kernel's slabs of 32 dimensions (6
        // subgroups, 4 lanes per query row): 45 queries over five 64-key tiles, GQA 2:1.
        AttentionCase {
            n_heads: 4,
            n_kv_heads: 2,
            head_dim: 96,
            window: 0,
            cache_len: 352,
            history: 300,
            n_tokens: 45,
            split: false,
            key_ramp: 0.0,
        },
        // Qwen-like GQA 7:1, a partial block of 13 queries.
        AttentionCase {
            n_heads: 7,
            n_kv_heads: 1,
            head_dim: 128,
            window: 0,
            cache_len: 128,
            history: 50,
            n_tokens: 13,
            split: false,
            key_ramp: 0.0,
        },
        // head_dim 24: not a divisor of the workgroup in vec4 columns, so the general kernel.
        AttentionCase {
            n_heads: 2,
            n_kv_heads: 1,
            head_dim: 24,
            window: 0,
            cache_len: 64,
            history: 10,
            n_tokens: 7,
            split: false,
            key_ramp: 0.0,
        },
        // Decode: one token.
        AttentionCase {
            n_heads: 2,
            n_kv_heads: 2,
            head_dim: 32,
            window: 0,
            cache_len: 64,
            history: 33,
            n_tokens: 1,
            split: false,
            key_ramp: 0.0,
        },
        // Decode split over the keys, a workgroup per query head: 5 of 8 slices filled (four of 8
        // keys, one of 2), GQA 2:1.
        AttentionCase {
            n_heads: 4,
            n_kv_heads: 2,
            head_dim: 32,
            window: 0,
            cache_len: 64,
            history: 33,
            n_tokens: 1,
            split: true,
            key_ramp: 0.0,
        },
        // 32 slices but 6 keys: all but the first are empty and must not count.
        AttentionCase {
            n_heads: 2,
            n_kv_heads: 1,
            head_dim: 64,
            window: 0,
            cache_len: 1024,
            history: 5,
            n_tokens: 1,
            split: true,
            key_ramp: 0.0,
        },
        // Gemma-like sliding window on a wrapped ring: 32 slices of 19 keys (the last 11).
        AttentionCase {
            n_heads: 4,
            n_kv_heads: 1,
            head_dim: 256,
            window: 600,
            cache_len: 601,
            history: 700,
            n_tokens: 1,
            split: true,
            key_ramp: 0.0,
        },
        // 3000 keys over 32 slices of 94.
        AttentionCase {
            n_heads: 2,
            n_kv_heads: 1,
            head_dim: 64,
            window: 0,
            cache_len: 4096,
            history: 2999,
            n_tokens: 1,
            split: true,
            key_ramp: 0.0,
        },
        // Slices of 300 keys: more than one 256-key tile each, so the online softmax rescales.
        AttentionCase {
            n_heads: 2,
            n_kv_heads: 1,
            head_dim: 64,
            window: 0,
            cache_len: 9600,
            history: 9599,
            n_tokens: 1,
            split: true,
            key_ramp: 0.0,
        },
        // Phi-3's heads of 96 values: 24 columns do not divide the 256 threads, so the last 16
        // threads only join the reductions; slices of 300 keys, GQA.
        AttentionCase {
            n_heads: 4,
            n_kv_heads: 2,
            head_dim: 96,
            window: 0,
            cache_len: 9600,
            history: 9599,
            n_tokens: 1,
            split: true,
            key_ramp: 0.0,
        },
        // Qwen2.5-7B-like 7:1 GQA, head_dim 128, packed: two packs (4 and 3 query heads) each
        // read a key and value row once for all their queries; 32 slices of 251 keys, many
        // rounds of the streams, with scores moving along the keys.
        AttentionCase {
            n_heads: 28,
            n_kv_heads: 4,
            head_dim: 128,
            window: 0,
            cache_len: 8192,
            history: 8000,
            n_tokens: 1,
            split: true,
            key_ramp: 300.0,
        },
        // Heads of 96 values, packed: 12 chunks of 8 f16 values in teams of 16 lanes, the last
        // 4 holding zeros; GQA 4:1.
        AttentionCase {
            n_heads: 8,
            n_kv_heads: 2,
            head_dim: 96,
            window: 0,
            cache_len: 600,
            history: 500,
            n_tokens: 1,
            split: true,
            key_ramp: 0.0,
        },
        // 12 query heads of one kv head: three packs per slice; 13 of 16 slices filled.
        AttentionCase {
            n_heads: 12,
            n_kv_heads: 1,
            head_dim: 64,
            window: 0,
            cache_len: 256,
            history: 200,
            n_tokens: 1,
            split: true,
            key_ramp: 0.0,
        },
        // Scores that rise or fall along the keys by up to ~25 (dimension 0 ramps to 300, scaled
        // by 1/√128), so that a query's largest score keeps moving from tile to tile, where the
        // other cases' scores stay within a few units; 45 queries over six 64-key tiles, GQA 2:1.
        AttentionCase {
            n_heads: 4,
            n_kv_heads: 2,
            head_dim: 128,
            window: 0,
            cache_len: 384,
            history: 300,
            n_tokens: 45,
            split: false,
            key_ramp: 300.0,
        },
        // Short steps deep in the cache: on the tensor cores each block's keys split over several
        // workgroups (flash_splits.wgsl: here 3-13 splits of at least 8 tiles) and merged. Llama
        // 1B's heads of 64 (64-key tiles): three blocks, the last partial, over 2,130 keys, GQA
        // 4:1.
        AttentionCase {
            n_heads: 8,
            n_kv_heads: 2,
            head_dim: 64,
            window: 0,
            cache_len: 2200,
            history: 2000,
            n_tokens: 130,
            split: false,
            key_ramp: 0.0,
        },
        // A long step on an empty cache: its last block has 18 tiles, so the step takes several
        // splits, and the first blocks, with fewer tiles than splits, leave some empty.
        AttentionCase {
            n_heads: 2,
            n_kv_heads: 1,
            head_dim: 64,
            window: 0,
            cache_len: 1100,
            history: 0,
            n_tokens: 1100,
            split: false,
            key_ramp: 0.0,
        },
        // Phi-3's heads of 96 (32-key tiles): one block over 2,550 keys.
        AttentionCase {
            n_heads: 4,
            n_kv_heads: 4,
            head_dim: 96,
            window: 0,
            cache_len: 2600,
            history: 2500,
            n_tokens: 50,
            split: false,
            key_ramp: 0.0,
        },
        // Heads of 128 over 3,100 keys whose scores move along them (as the key_ramp case above),
        // so the splits' maxima differ widely; GQA 4:1.
        AttentionCase {
            n_heads: 8,
            n_kv_heads: 2,
            head_dim: 128,
            window: 0,
            cache_len: 3100,
            history: 3000,
            n_tokens: 100,
            split: false,
            key_ramp: 300.0,
        },
        // Gemma's heads of 256 (blocks of 32 queries): a global layer over 2,040 keys...
        AttentionCase {
            n_heads: 4,
            n_kv_heads: 1,
            head_dim: 256,
            window: 0,
            cache_len: 2048,
            history: 2000,
            n_tokens: 40,
            split: false,
            key_ramp: 0.0,
        },
        // ...and a sliding one: a window of 700 on a ring of window + batch that wrapped three
        // times; the block's rows start seeing keys in different splits.
        AttentionCase {
            n_heads: 4,
            n_kv_heads: 1,
            head_dim: 256,
            window: 700,
            cache_len: 740,
            history: 2500,
            n_tokens: 40,
            split: false,
            key_ramp: 0.0,
        },
    ];
    for ctx in &attention_contexts() {
        for case in &cases {
            check_attention(ctx, case);
        }
    }
}

#[test]
fn gated_activations_add_and_last_row_match_reference() {
    let ctx = gpu(GpuOptions::default());
    let (row_len, n_tokens) = (300u32, 3u32);
    let count = (row_len * n_tokens) as usize;
    let gate: Vec<f32> = values(count, 20).iter().map(|v| v * 8.0).collect();
    let up = values(count, 21);
    let step = step_buffer(&ctx, 0, n_tokens);
    for activation in [Activation::GeluTanh, Activation::Silu] {
        let gate_buf = f32_tensor(&ctx, row_len as usize, &gate);
        let up_buf = f32_tensor(&ctx, row_len as usize, &up);
        let mut ops = OpList::new();
        record_gated_activation(&ctx, &mut ops, "act", &gate_buf, &up_buf, &step, activation).unwrap();
        run(&ctx, &ops, n_tokens);
        let expected: Vec<f64> = gate
            .iter()
            .zip(&up)
            .map(|(&g, &u)| {
                let g = g as f64;
                let a = match activation {
                    Activation::GeluTanh => {
                        0.5 * g * (1.0 + (0.7978845608028654 * (g + 0.044715 * g.powi(3))).tanh())
                    }
                    Activation::Silu => g / (1.0 + (-g).exp()),
                };
                a * u as f64
            })
            .collect();
        assert_close(&format!("{activation:?}"), &read_tensor(&ctx, &gate_buf), &expected, 1e-5, 1e-5);
    }

    let a = f32_tensor(&ctx, row_len as usize, &gate);
    let b = f32_tensor(&ctx, row_len as usize, &up);
    let last = GpuTensor::zeroed(&ctx, "last", 1, row_len, Element::F32);
    let mut ops = OpList::new();
    record_add(&ctx, &mut ops, "add", &a, &b, &step).unwrap();
    record_copy_last_row(&ctx, &mut ops, "last", &a, &last, &step).unwrap();
    run(&ctx, &ops, n_tokens);
    let sums: Vec<f64> = gate.iter().zip(&up).map(|(&x, &y)| x as f64 + y as f64).collect();
    assert_close("add", &read_tensor(&ctx, &a), &sums, 1e-6, 1e-6);
    assert_close("last row", &read_tensor(&ctx, &last), &sums[count - row_len as usize..], 1e-6, 1e-6);
}

/// Reads back a KV cache buffer as f64, whichever precision it holds.
fn read_cache(ctx: &GpuContext, cache: &KvCache, buffer: &wgpu::Buffer, count: usize) -> Vec<f64> {
    if cache.f16 {
        let bytes = ctx.read_buffer(buffer, 0, (count * 2) as u64).unwrap();
        bytemuck::cast_slice::<u8, u16>(&bytes).iter().map(|&h| f16::from_bits(h).to_f64()).collect()
    } else {
        ctx.read_f32(buffer, count).unwrap().iter().map(|&x| x as f64).collect()
    }
}

/// RoPE of one head row in f64 with the given table, pairs per style, tail past rot_dim kept.
fn rotate_reference(row: &mut [f64], table: &[[f32; 2]], pos: usize, rot_dim: usize, style: RopeStyle) {
    let pairs = rot_dim / 2;
    for i in 0..pairs {
        let [c, s] = table[pos * pairs + i];
        let (a, b) = match style {
            RopeStyle::Interleaved => (2 * i, 2 * i + 1),
            RopeStyle::Neox => (i, i + pairs),
        };
        let (x0, x1) = (row[a], row[b]);
        row[a] = x0 * c as f64 - x1 * s as f64;
        row[b] = x0 * s as f64 + x1 * c as f64;
    }
}

struct QkCase {
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    rot_dim: u32,
    cache_len: u32,
    pos: u32,
    n_tokens: u32,
    style: RopeStyle,
    norm: bool,
    /// q, k and v biases added first (Qwen 2).
    bias: bool,
}

fn check_qk_rope_store(ctx: &GpuContext, case: &QkCase) {
    let (hd, n_tokens) = (case.head_dim as usize, case.n_tokens as usize);
    let q_dim = case.n_heads as usize * hd;
    let kv_dim = case.n_kv_heads as usize * hd;
    let q: Vec<f32> = values(n_tokens * q_dim, 30).iter().map(|v| v * 3.0).collect();
    let k: Vec<f32> = values(n_tokens * kv_dim, 31).iter().map(|v| v * 3.0).collect();
    let v = values(n_tokens * kv_dim, 32);
    let q_norm = values(hd, 33);
    let k_norm = values(hd, 34);
    let bias: Vec<f32> =
        if case.bias { values(q_dim + 2 * kv_dim, 35) } else { vec![0.0; q_dim + 2 * kv_dim] };
    let (q_bias, k_bias, v_bias) = (&bias[..q_dim], &bias[q_dim..q_dim + kv_dim], &bias[q_dim + kv_dim..]);
    let max_positions = 64;
    let table = rope_table(&RopeFrequencies::plain(10_000.0), case.rot_dim, max_positions);
    let gpu_table = RopeTable::new(ctx, &RopeFrequencies::plain(10_000.0), case.rot_dim, max_positions);
    let cache = KvCache::new(ctx, "test", case.cache_len, case.n_kv_heads, case.head_dim);
    let (q_buf, k_buf, v_buf) =
        (f32_tensor(ctx, q_dim, &q), f32_tensor(ctx, kv_dim, &k), f32_tensor(ctx, kv_dim, &v));
    let (qn_buf, kn_buf) = (f32_tensor(ctx, hd, &q_norm), f32_tensor(ctx, hd, &k_norm));
    let step = step_buffer(ctx, case.pos, case.n_tokens);
    let eps = 1e-6;
    let norms = case.norm.then_some(QkNorms { q: &qn_buf, k: &kn_buf, eps });
    let bias_buf = f32_tensor(ctx, bias.len(), &bias);
    let mut ops = OpList::new();
    let qk = QkStep {
        rows: QkvRows { q: &q_buf, k: &k_buf, v: &v_buf },
        norms,
        table: &gpu_table,
        style: case.style,
        bias: case.bias.then_some(&bias_buf),
    };
    record_qk_rope_store(ctx, &mut ops, "qk", &qk, &cache, &step).unwrap();
    run(ctx, &ops, case.n_tokens);

    let transform = |x: &[f32], b: &[f32], w: &[f32], pos: usize| -> Vec<f64> {
        let x: Vec<f32> = x.iter().zip(b).map(|(x, b)| x + b).collect();
        let mut row: Vec<f64> = if case.norm {
            rms_norm_reference(&x, w, hd, eps)
        } else {
            x.iter().map(|&v| v as f64).collect()
        };
        rotate_reference(&mut row, &table, pos, case.rot_dim as usize, case.style);
        row
    };
    let mut expected_q = Vec::new();
    let cache_floats = case.cache_len as usize * kv_dim;
    let (mut expected_k, mut expected_v) = (vec![0.0f64; cache_floats], vec![0.0f64; cache_floats]);
    let round = |x: f64| if cache.f16 { f16::from_f64(x).to_f64() } else { x };
    for t in 0..n_tokens {
        let pos = case.pos as usize + t;
        for h in 0..case.n_heads as usize {
            expected_q.extend(transform(
                &q[(t * case.n_heads as usize + h) * hd..][..hd],
                &q_bias[h * hd..],
                &q_norm,
                pos,
            ));
        }
        let slot = pos % case.cache_len as usize;
        for h in 0..case.n_kv_heads as usize {
            let src = (t * case.n_kv_heads as usize + h) * hd;
            let dst = (slot * case.n_kv_heads as usize + h) * hd;
            for (d, value) in
                transform(&k[src..][..hd], &k_bias[h * hd..], &k_norm, pos).into_iter().enumerate()
            {
                expected_k[dst + d] = value;
                expected_v[dst + d] = (v[src + d] + v_bias[h * hd + d]) as f64;
            }
        }
    }
    let label = format!("{:?} norm {} bias {} f16 {}", case.style, case.norm, case.bias, cache.f16);
    // f32 norm and rotation as in the unfused kernels; the cache adds f16 rounding (2^-11 relative).
    assert_close(&format!("q ({label})"), &read_tensor(ctx, &q_buf), &expected_q, 1e-5, 1e-5);
    let cache_tol = if cache.f16 { 1e-3 } else { 1e-5 };
    let got_k = read_cache(ctx, &cache, &cache.k, cache_floats);
    let got_v = read_cache(ctx, &cache, &cache.v, cache_floats);
    for (i, ((gk, ek), (gv, ev))) in
        got_k.iter().zip(&expected_k).zip(got_v.iter().zip(&expected_v)).enumerate()
    {
        assert!(
            (gk - ek).abs() <= 1e-5 + cache_tol * ek.abs(),
            "k cache ({label})[{i}]: got {gk}, expected {ek}"
        );
        assert!((gv - round(*ev)).abs() <= 1e-6, "v cache ({label})[{i}]: got {gv}, expected {ev}");
    }
}

#[test]
fn fused_qk_norm_rope_store_matches_separate_steps() {
    let cases = [
        // Gemma-like: q/k norms, NEOX, 4:1 GQA, head_dim 256, a ring that wraps in the batch.
        QkCase {
            n_heads: 4,
            n_kv_heads: 1,
            head_dim: 256,
            rot_dim: 256,
            cache_len: 5,
            pos: 3,
            n_tokens: 3,
            style: RopeStyle::Neox,
            norm: true,
            bias: false,
        },
        // Llama-like: no norms, interleaved pairs.
        QkCase {
            n_heads: 3,
            n_kv_heads: 3,
            head_dim: 64,
            rot_dim: 64,
            cache_len: 32,
            pos: 9,
            n_tokens: 2,
            style: RopeStyle::Interleaved,
            norm: false,
            bias: false,
        },
        // Partial rotation: dimensions past rot_dim pass through, in both styles.
        QkCase {
            n_heads: 2,
            n_kv_heads: 1,
            head_dim: 32,
            rot_dim: 16,
            cache_len: 8,
            pos: 0,
            n_tokens: 1,
            style: RopeStyle::Neox,
            norm: true,
            bias: false,
        },
        QkCase {
            n_heads: 2,
            n_kv_heads: 1,
            head_dim: 32,
            rot_dim: 16,
            cache_len: 8,
            pos: 40,
            n_tokens: 1,
            style: RopeStyle::Interleaved,
            norm: false,
            bias: false,
        },
        // Qwen 2-like: q, k and v biases, NEOX, 2:1 GQA, several tokens.
        QkCase {
            n_heads: 4,
            n_kv_heads: 2,
            head_dim: 64,
            rot_dim: 64,
            cache_len: 16,
            pos: 5,
            n_tokens: 3,
            style: RopeStyle::Neox,
            norm: false,
            bias: true,
        },
    ];
    let contexts = [gpu(GpuOptions::default()), gpu(GpuOptions { disable_f16: true, ..Default::default() })];
    for ctx in &contexts {
        for case in &cases {
            check_qk_rope_store(ctx, case);
        }
    }
}

struct DecodeQkCase {
    n_heads: u32,
    n_kv_heads: u32,
    head_dim: u32,
    rot_dim: u32,
    window: u32,
    cache_len: u32,
    /// Tokens cached before the decode step.
    history: u32,
    style: RopeStyle,
    norm: bool,
}

/// Decode attention whose slices do the q/k step against that step's kernel followed by plain
/// decode attention, on two caches with the same history: the outputs and both caches must
/// agree (the same f32 operations, so to rounding).
fn check_decode_attention_with_qk_step(ctx: &GpuContext, case: &DecodeQkCase) {
    let hd = case.head_dim as usize;
    let (q_dim, kv_dim) = (case.n_heads as usize * hd, case.n_kv_heads as usize * hd);
    let history_k = values(case.history as usize * kv_dim, 40);
    let history_v = values(case.history as usize * kv_dim, 41);
    let q: Vec<f32> = values(q_dim, 42).iter().map(|v| v * 3.0).collect();
    let k: Vec<f32> = values(kv_dim, 43).iter().map(|v| v * 3.0).collect();
    let v = values(kv_dim, 44);
    let (q_norm, k_norm) = (values(hd, 45), values(hd, 46));
    let table = RopeTable::new(ctx, &RopeFrequencies::plain(10_000.0), case.rot_dim, 4096);
    let (qn_buf, kn_buf) = (f32_tensor(ctx, hd, &q_norm), f32_tensor(ctx, hd, &k_norm));
    let norms = case.norm.then_some(QkNorms { q: &qn_buf, k: &kn_buf, eps: 1e-6 });
    let scale = 1.0 / (case.head_dim as f32).sqrt();
    let label = format!(
        "{:?} norm {} heads {}/{} history {} (f16 cache: {})",
        case.style, case.norm, case.n_heads, case.n_kv_heads, case.history, ctx.caps.shader_f16
    );

    let mut results = Vec::new();
    for fused in [false, true] {
        let cache = KvCache::new(ctx, "test", case.cache_len, case.n_kv_heads, case.head_dim);
        // The history, one token at a time, so a ring keeps the window's last keys.
        let row = |label: &str| GpuTensor::zeroed(ctx, label, 1, kv_dim as u32, Element::F32);
        let (k_row, v_row) = (row("k row"), row("v row"));
        let step = step_buffer(ctx, 0, 1);
        let mut store = OpList::new();
        record_kv_store(ctx, &mut store, "store", &cache, &k_row, &v_row, &step).unwrap();
        for pos in 0..case.history as usize {
            let write = |tensor: &GpuTensor, values: &[f32]| {
                ctx.queue.write_buffer(
                    tensor.buffer(),
                    0,
                    bytemuck::cast_slice(&values[pos * kv_dim..][..kv_dim]),
                )
            };
            write(&k_row, &history_k);
            write(&v_row, &history_v);
            step.write(&ctx.queue, pos as u32, 1);
            run(ctx, &store, 1);
        }
        step.write(&ctx.queue, case.history, 1);
        let (q_buf, k_buf, v_buf) =
            (f32_tensor(ctx, q_dim, &q), f32_tensor(ctx, kv_dim, &k), f32_tensor(ctx, kv_dim, &v));
        let out = GpuTensor::zeroed(ctx, "out", 1, q_dim as u32, Element::F32);
        let qk = QkStep {
            rows: QkvRows { q: &q_buf, k: &k_buf, v: &v_buf },
            norms,
            table: &table,
            style: case.style,
            bias: None,
        };
        let mut ops = OpList::new();
        let layer = AttentionLayer {
            cache: &cache,
            output: &out,
            output_q8: None,
            flash_partials: None,
            step: &step,
            window: case.window,
            scale,
        };
        if fused {
            record_decode_attention_with_qk_step(ctx, &mut ops, "qk", "attention", &qk, &layer).unwrap();
            // Slices (with the q/k step) and merge: one dispatch fewer than the separate path.
            assert_eq!(ops.len(), 2, "{label}: the slices did not take the q/k step over");
        } else {
            record_qk_rope_store(ctx, &mut ops, "qk", &qk, &cache, &step).unwrap();
            record_decode_attention(ctx, &mut ops, "attention", &q_buf, &layer).unwrap();
        }
        run(ctx, &ops, 1);
        let cache_values = case.cache_len as usize * kv_dim;
        results.push((
            read_tensor(ctx, &out),
            read_cache(ctx, &cache, &cache.k, cache_values),
            read_cache(ctx, &cache, &cache.v, cache_values),
        ));
    }
    let (separate, fused) = (&results[0], &results[1]);
    let as_f64 = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
    assert_close(&format!("output ({label})"), &fused.0, &as_f64(&separate.0), 1e-6, 1e-5);
    // The two paths reduce a key's norm over different trees: its values can differ in the
    // last f32 bit, or by one f16 step after rounding. The values are copied as they are.
    let as_f32 = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<_>>();
    assert_close(&format!("k cache ({label})"), &as_f32(&fused.1), &separate.1, 1e-7, 1e-3);
    assert!(fused.2 == separate.2, "v cache differs ({label})");
}

#[test]
fn decode_attention_with_qk_step_matches_qk_step_then_attention() {
    let cases = [
        // Gemma-like: q/k norms, NEOX, 4:1 GQA, head_dim 256, sliding window on a wrapped ring.
        DecodeQkCase {
            n_heads: 4,
            n_kv_heads: 1,
            head_dim: 256,
            rot_dim: 256,
            window: 9,
            cache_len: 10,
            history: 20,
            style: RopeStyle::Neox,
            norm: true,
        },
        // Llama-like: no norms, interleaved pairs, 3:1 GQA over 33 keys in several slices.
        DecodeQkCase {
            n_heads: 6,
            n_kv_heads: 2,
            head_dim: 64,
            rot_dim: 64,
            window: 0,
            cache_len: 64,
            history: 33,
            style: RopeStyle::Interleaved,
            norm: false,
        },
        // Partial rotation; 32 slices over 6 keys, most of them empty.
        DecodeQkCase {
            n_heads: 2,
            n_kv_heads: 1,
            head_dim: 64,
            rot_dim: 32,
            window: 0,
            cache_len: 1024,
            history: 5,
            style: RopeStyle::Neox,
            norm: true,
        },
        // The first token: the only key is the step's own.
        DecodeQkCase {
            n_heads: 4,
            n_kv_heads: 1,
            head_dim: 256,
            rot_dim: 256,
            window: 0,
            cache_len: 64,
            history: 0,
            style: RopeStyle::Neox,
            norm: true,
        },
        // 7:1 GQA (Qwen2.5-7B), head_dim 128: packs of 4 and 3 queries rotate theirs.
        DecodeQkCase {
            n_heads: 28,
            n_kv_heads: 4,
            head_dim: 128,
            rot_dim: 128,
            window: 0,
            cache_len: 512,
            history: 100,
            style: RopeStyle::Neox,
            norm: false,
        },
        // 12 query heads of one kv head: three packs hold the step's slice and each stores its
        // key and value.
        DecodeQkCase {
            n_heads: 12,
            n_kv_heads: 1,
            head_dim: 64,
            rot_dim: 64,
            window: 0,
            cache_len: 128,
            history: 40,
            style: RopeStyle::Interleaved,
            norm: true,
        },
        // Phi-3's heads of 96 values (4 lanes of 3 chunks a key).
        DecodeQkCase {
            n_heads: 4,
            n_kv_heads: 4,
            head_dim: 96,
            rot_dim: 96,
            window: 0,
            cache_len: 512,
            history: 300,
            style: RopeStyle::Neox,
            norm: false,
        },
    ];
    for ctx in &default_and_f32_contexts() {
        for case in &cases {
            check_decode_attention_with_qk_step(ctx, case);
        }
    }
}

/// Rows of fewer values than threads, about a thread per 4 values (Gemma 3 1B), and more
/// than 4 per thread (each thread then holds several rounds), with and without subgroups.
#[test]
fn fused_residual_norm_matches_add_then_norm() {
    for ctx in [gpu(GpuOptions::default()), without_subgroups()] {
        fused_residual_norm_every_shape(&ctx);
    }
}

fn fused_residual_norm_every_shape(ctx: &Arc<GpuContext>) {
    for dim in [1000usize, 1152, 8200] {
        let (n_tokens, eps) = (3u32, 1e-6f32);
        let count = dim * n_tokens as usize;
        let block_out: Vec<f32> = values(count, 40).iter().map(|v| v * 5.0).collect();
        let hidden = values(count, 41);
        let post_w = values(dim, 42);
        let next_w = values(dim, 43);
        let step = step_buffer(ctx, 0, n_tokens);
        for post in [false, true] {
            let (x_buf, h_buf) = (f32_tensor(ctx, dim, &block_out), f32_tensor(ctx, dim, &hidden));
            let (post_buf, next_buf) = (f32_tensor(ctx, dim, &post_w), f32_tensor(ctx, dim, &next_w));
            let normed = GpuTensor::zeroed(ctx, "normed", n_tokens, dim as u32, Element::F32);
            let mut ops = OpList::new();
            let rows = ResidualRows { block_out: &x_buf, hidden: &h_buf, normed: &normed, normed_q8: None };
            let norms = ResidualNorms { post_norm: post.then_some(&post_buf), next_norm: &next_buf, eps };
            record_residual_norm(ctx, &mut ops, "residual", rows, norms, &step).unwrap();
            run(ctx, &ops, n_tokens);
            let added: Vec<f64> = if post {
                rms_norm_reference(&block_out, &post_w, dim, eps)
            } else {
                block_out.iter().map(|&v| v as f64).collect()
            };
            let new_hidden: Vec<f64> = added.iter().zip(&hidden).map(|(a, &h)| a + h as f64).collect();
            let as_f32: Vec<f32> = new_hidden.iter().map(|&v| v as f32).collect();
            let expected_normed = rms_norm_reference(&as_f32, &next_w, dim, eps);
            let label = format!("dim {dim}, post norm {post}");
            assert_close(&format!("hidden ({label})"), &read_tensor(ctx, &h_buf), &new_hidden, 1e-5, 1e-5);
            assert_close(
                &format!("normed ({label})"),
                &read_tensor(ctx, &normed),
                &expected_normed,
                1e-5,
                1e-5,
            );
        }
    }
}
