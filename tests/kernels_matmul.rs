//! The fused dequant matrix-vector (decode), tiled matrix-matrix (prefill) and embedding
//! kernels against the CPU reference (`quant::dequantize_row`, then f64 sums), for every
//! weight type the kernels support, on whatever adapter wgpu finds (lavapipe in CI). The
//! matrix-vector kernel runs with subgroup reductions where the adapter has them and always
//! with the shared-memory fallback.
//!
//! Tolerance: each output is a sum of K products accumulated in f32, so its error is bounded
//! relative to the magnitude of the terms, not of the result: |gpu - ref| ≤ 1e-5 · Σ_k |w_k·x_k|
//! + 1e-6. (Typical f32 rounding is ~sqrt(K)·6e-8 of that magnitude: about 3e-6 at K = 2304.)
//!
//! The tiled kernel's cooperative-matrix variant (tensor cores, where the adapter has them:
//! not lavapipe) rounds both factors to f16 first, each off by at most 2^-11 of itself, so its
//! products are within 2 · 2^-11 ≈ 9.8e-4 of theirs: there the bound is
//! 1.5e-3 · Σ_k |w_k·x_k| + 1e-6. On such adapters the tiled tests run both variants.

mod support;

use std::sync::Arc;

use doppler_engine::{
    gguf::GgmlType,
    gpu::{Element, GpuContext, GpuMatrix, GpuOptions, GpuTensor, OpList, StackedMatrix},
    kernels::{
        elementwise::Activation,
        embedding::{record_embedding, ScaledTable},
        fused_norm::{record_residual_norm, ResidualNorms, ResidualRows},
        matmul::{
            record_gated_matmul, record_gated_matvec, record_matmul, record_matmul_parts, record_matmul_rows,
            record_matvec, record_matvec_of, record_quantize_q8, record_stacked_matvec, takes_q8_input,
            MatrixRows, MatvecInput, NormedInput, PartProduct, ProductOutput, Q8Vector, ResidualStream,
            SUPPORTED_TYPES,
        },
        matmul_half::{record_dequantize_half, HalfOperands, HalfShape, MIN_TOKENS as HALF_MIN_TOKENS},
    },
    quant::{dequantize_row, random_quantized},
};
use support::gpu::{f32_tensor, gpu, read_tensor, run, step_buffer, values, without_subgroups};

const RELATIVE_TOLERANCE: f64 = 1e-5;
const ABSOLUTE_TOLERANCE: f64 = 1e-6;
const COOPERATIVE_MATRIX_RELATIVE_TOLERANCE: f64 = 1.5e-3;

/// The tiled kernel's contexts: the default one (shaped as for a GPU on lavapipe too, where
/// products would otherwise never split K), and one without cooperative matrices where the
/// default uses them.
fn matmul_contexts() -> Vec<Arc<GpuContext>> {
    let default = gpu(GpuOptions { gpu_shapes_on_cpu: true, ..Default::default() });
    println!("cooperative matrix: {}", default.caps.cooperative_matrix);
    if default.caps.cooperative_matrix {
        vec![default, gpu(GpuOptions { disable_cooperative_matrix: true, ..Default::default() })]
    } else {
        vec![default]
    }
}

fn matmul_tolerance(ctx: &GpuContext) -> f64 {
    if ctx.caps.cooperative_matrix {
        COOPERATIVE_MATRIX_RELATIVE_TOLERANCE
    } else {
        RELATIVE_TOLERANCE
    }
}

/// Row lengths to test: not multiples of 256 where the block allows it.
fn row_lens(ty: GgmlType) -> [usize; 2] {
    if ty.block_len() == 256 {
        [256, 2304]
    } else {
        [640, 1152]
    }
}

/// A random matrix of `ty` in GGUF bytes and its CPU dequantization.
struct TestMatrix {
    ty: GgmlType,
    row_len: usize,
    rows: usize,
    bytes: Vec<u8>,
    dequantized: Vec<f32>,
}

impl TestMatrix {
    fn random(ty: GgmlType, row_len: usize, rows: usize, seed: u64) -> Self {
        let bytes = random_quantized(ty, row_len, rows, seed);
        let mut dequantized = vec![0.0; row_len * rows];
        dequantize_row(ty, &bytes, &mut dequantized).expect("CPU reference dequantizes");
        Self { ty, row_len, rows, bytes, dequantized }
    }

    fn upload(&self, ctx: &GpuContext) -> GpuMatrix {
        GpuMatrix::upload(ctx, "w", self.ty, self.row_len as u64, self.rows as u64, &self.bytes)
            .expect("upload")
    }

    /// Split into chunks of at most `rows_per_chunk` rows.
    fn upload_chunked(&self, ctx: &GpuContext, rows_per_chunk: usize) -> GpuMatrix {
        let row_bytes = self.bytes.len() / self.rows;
        let limit = (rows_per_chunk * row_bytes) as u64;
        let w = GpuMatrix::upload_with_chunk_limit(
            ctx,
            "w",
            self.ty,
            self.row_len as u64,
            self.rows as u64,
            &self.bytes,
            limit,
        )
        .expect("upload");
        assert_eq!(w.chunks.len(), self.rows.div_ceil(rows_per_chunk), "chunk count");
        w
    }

    fn row(&self, r: usize) -> &[f32] {
        &self.dequantized[r * self.row_len..(r + 1) * self.row_len]
    }

    /// (Σ w·x, Σ |w·x|) for row `r` in f64.
    fn dot(&self, r: usize, x: &[f32]) -> (f64, f64) {
        self.row(r).iter().zip(x).fold((0.0, 0.0), |(sum, magnitude), (&w, &x)| {
            let term = f64::from(w) * f64::from(x);
            (sum + term, magnitude + term.abs())
        })
    }
}

/// Compares outputs with (reference, magnitude) pairs; returns the worst error relative to
/// the magnitude, or a description of the first value out of tolerance.
fn compare(label: &str, actual: &[f32], expected: &[(f64, f64)]) -> Result<f64, String> {
    compare_within(label, actual, expected, RELATIVE_TOLERANCE)
}

/// As `compare` with bound `relative` · magnitude + ABSOLUTE_TOLERANCE.
fn compare_within(
    label: &str,
    actual: &[f32],
    expected: &[(f64, f64)],
    relative: f64,
) -> Result<f64, String> {
    assert_eq!(actual.len(), expected.len(), "{label}: length");
    let mut worst = 0.0f64;
    for (i, (&a, &(e, magnitude))) in actual.iter().zip(expected).enumerate() {
        let error = (f64::from(a) - e).abs();
        let tolerance = relative * magnitude + ABSOLUTE_TOLERANCE;
        if error.is_nan() || error > tolerance {
            return Err(format!(
                "{label}[{i}]: got {a}, expected {e} (error {error:e}, tolerance {tolerance:e})"
            ));
        }
        worst = worst.max(error / magnitude.max(1e-30));
    }
    Ok(worst)
}

/// Runs the matrix-vector kernel on `w` and checks it against `m`.
fn check_matvec(ctx: &GpuContext, label: &str, m: &TestMatrix, w: &GpuMatrix) -> Result<f64, String> {
    let x = values(m.row_len, m.rows as u64 + 7);
    let input = f32_tensor(ctx, m.row_len, &x);
    let output = GpuTensor::zeroed(ctx, "y", 1, m.rows as u32, Element::F32);
    let mut ops = OpList::new();
    record_matvec(ctx, &mut ops, label, w, &input, &output).map_err(|e| format!("{label}: {e}"))?;
    run(ctx, &ops, 1);
    let actual = read_tensor(ctx, &output);
    let expected: Vec<_> = (0..m.rows).map(|r| m.dot(r, &x)).collect();
    compare(label, &actual, &expected)
}

fn matvec_every_type(ctx: &GpuContext) {
    let mut failures = Vec::new();
    for ty in SUPPORTED_TYPES {
        let mut worst = 0.0f64;
        for row_len in row_lens(ty) {
            // The larger counts take the kernel's 2- and 4-rows-per-workgroup shapes.
            for rows in [3, 97, 1000, 2051, 4099] {
                let m = TestMatrix::random(ty, row_len, rows, (row_len * rows) as u64);
                let label = format!("matvec {} {rows}x{row_len}", ty.name());
                match check_matvec(ctx, &label, &m, &m.upload(ctx)) {
                    Ok(w) => worst = worst.max(w),
                    Err(failure) => failures.push(failure),
                }
            }
        }
        println!(
            "matvec {:5} (subgroups: {}): worst error / Σ|w·x| = {worst:.2e}",
            ty.name(),
            ctx.caps.subgroups
        );
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// The f16 prefill product (tensor cores only: not lavapipe) for every weight type, in steps
/// on both sides of the token count where it takes over from the tiled kernel, over rows that
/// fill no whole tile and weight slices of 128 rows (many per matrix).
#[test]
fn half_matmul_matches_reference_for_every_type() {
    let ctx = gpu(GpuOptions::default());
    if !ctx.caps.cooperative_matrix {
        println!("no cooperative matrices: the f16 product does not run here");
        return;
    }
    let token_counts = [5, HALF_MIN_TOKENS, HALF_MIN_TOKENS + 37];
    let mut failures = Vec::new();
    for ty in SUPPORTED_TYPES {
        let mut worst = 0.0f64;
        for (row_len, rows) in row_lens(ty).into_iter().zip([1000, 3]) {
            let m = TestMatrix::random(ty, row_len, rows, (row_len * rows) as u64 + 5);
            let shape = HalfShape { max_row_len: row_len as u32, max_matrix_values: (rows * row_len) as u64 };
            let operands =
                HalfOperands::with_slice_bytes(&ctx, HALF_MIN_TOKENS + 37, shape, 128 * row_len as u64 * 2);
            let label = format!("f16 matmul {} {rows}x{row_len}", ty.name());
            let whole = ProductScratch { split: None, half: Some(&operands) };
            let whole = check_matmul_with(&ctx, &label, &m, &m.upload(&ctx), &token_counts, whole);
            // K split (these few rows launch few workgroups), over chunks that end inside a
            // tile and inside a slice.
            let splits = GpuTensor::zeroed(
                &ctx,
                "splits",
                1,
                (8 * (HALF_MIN_TOKENS + 37) as usize * rows) as u32,
                Element::F32,
            );
            let split = ProductScratch { split: Some(&splits), half: Some(&operands) };
            let chunked = m.upload_chunked(&ctx, rows.div_ceil(2));
            let chunked = check_matmul_with(
                &ctx,
                &format!("{label} chunked, K split"),
                &m,
                &chunked,
                &token_counts,
                split,
            );
            for result in [whole, chunked] {
                match result {
                    Ok(w) => worst = worst.max(w),
                    Err(failure) => failures.push(failure),
                }
            }
        }
        println!("f16 matmul {:5}: worst error / Σ|w·x| = {worst:.2e}", ty.name());
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// The f16 products' dequantization on its own (it needs no tensor cores, so lavapipe runs it)
/// for every weight type, over a whole chunk and over rows from inside a later one (Q6_K's
/// 210-byte rows then start at every even offset). Each value is the CPU reference rounded to f16: within
/// 2^-11 of itself, plus what computing it in another order in f32 moves it (1e-6 absolute).
#[test]
fn dequantize_half_matches_reference_for_every_type() {
    let ctx = gpu(GpuOptions::default());
    for ty in SUPPORTED_TYPES {
        for row_len in row_lens(ty) {
            let m = TestMatrix::random(ty, row_len, 23, row_len as u64 + 7);
            let w = m.upload_chunked(&ctx, 10);
            for rows in [0..10, 13..20] {
                let label = format!("f16 dequantization {} {row_len} rows {rows:?}", ty.name());
                let words = rows.len() * row_len / 2;
                let out = GpuTensor::zeroed(&ctx, "f16 rows", 1, words as u32, Element::U32);
                let mut ops = OpList::new();
                let part = MatrixRows { matrix: &w, rows: rows.start as u32..rows.end as u32 };
                record_dequantize_half(&ctx, &mut ops, &label, part, &out).unwrap();
                run(&ctx, &ops, 1);
                let bits = read_tensor(&ctx, &out);
                let actual = bits.iter().flat_map(|v| {
                    let word = v.to_bits();
                    [half::f16::from_bits(word as u16), half::f16::from_bits((word >> 16) as u16)]
                });
                let expected = &m.dequantized[rows.start * row_len..rows.end * row_len];
                for (i, (a, &e)) in actual.zip(expected).enumerate() {
                    let error = (f64::from(a.to_f32()) - f64::from(e)).abs();
                    let bound = f64::from(e).abs() * 2f64.powi(-11) + 1e-6;
                    assert!(error <= bound, "{label}: value {i} is {a}, expected {e}");
                }
            }
        }
    }
}

#[test]
fn matvec_matches_reference_for_every_type_with_default_reductions() {
    let ctx = gpu(GpuOptions::default());
    println!(
        "adapter: {} (subgroups: {}, sizes {}..{})",
        ctx.describe(),
        ctx.caps.subgroups,
        ctx.caps.subgroup_min_size,
        ctx.caps.subgroup_max_size
    );
    matvec_every_type(&ctx);
}

#[test]
fn matvec_matches_reference_for_every_type_with_shared_memory_reduction() {
    matvec_every_type(&without_subgroups());
}

#[test]
fn matvec_reads_and_writes_the_first_row_and_leaves_the_rest() {
    let ctx = gpu(GpuOptions::default());
    let m = TestMatrix::random(GgmlType::Q4_K, 512, 37, 11);
    let x_rows = values(3 * m.row_len, 12);
    let sentinel = 1234.5f32;
    let input = f32_tensor(&ctx, m.row_len, &x_rows);
    let output = f32_tensor(&ctx, m.rows, &vec![sentinel; 2 * m.rows]);
    let mut ops = OpList::new();
    record_matvec(&ctx, &mut ops, "first row", &m.upload(&ctx), &input, &output).unwrap();
    run(&ctx, &ops, 1);
    let actual = read_tensor(&ctx, &output);
    assert!(actual[m.rows..].iter().all(|&v| v == sentinel), "the second output row changed");
    let expected: Vec<_> = (0..m.rows).map(|r| m.dot(r, &x_rows[..m.row_len])).collect();
    compare("matvec of the first row", &actual[..m.rows], &expected).unwrap();
}

/// Runs the tiled kernel on `w` for each token count in `token_counts` and checks it.
fn check_matmul(
    ctx: &GpuContext,
    label: &str,
    m: &TestMatrix,
    w: &GpuMatrix,
    token_counts: &[u32],
) -> Result<f64, String> {
    check_matmul_with(ctx, label, m, w, token_counts, ProductScratch::default())
}

/// What a product under test may use beside its output.
#[derive(Default, Clone, Copy)]
struct ProductScratch<'a> {
    split: Option<&'a GpuTensor>,
    half: Option<&'a HalfOperands>,
}

/// As `check_matmul`, splitting K over `scratch` where the kernel chooses to.
fn check_matmul_with(
    ctx: &GpuContext,
    label: &str,
    m: &TestMatrix,
    w: &GpuMatrix,
    token_counts: &[u32],
    scratch: ProductScratch,
) -> Result<f64, String> {
    let max_tokens = *token_counts.iter().max().unwrap();
    let x = values(max_tokens as usize * m.row_len, m.rows as u64 + 3);
    let input = f32_tensor(ctx, m.row_len, &x);
    let sentinel = -777.0f32;
    let mut worst = 0.0f64;
    for &n in token_counts {
        let output = f32_tensor(ctx, m.rows, &vec![sentinel; max_tokens as usize * m.rows]);
        let step = step_buffer(ctx, 0, n);
        let mut ops = OpList::new();
        let part = MatrixRows { matrix: w, rows: 0..w.rows };
        let product =
            ProductOutput { output: &output, split_scratch: scratch.split, half_operands: scratch.half };
        record_matmul_rows(ctx, &mut ops, label, part, &input, product, &step)
            .map_err(|e| format!("{label}: {e}"))?;
        if scratch.split.is_some() && scratch.half.is_none() && ops.len() < 2 {
            return Err(format!("{label}: K was not split"));
        }
        run(ctx, &ops, n);
        let actual = read_tensor(ctx, &output);
        let n = n as usize;
        if actual[n * m.rows..].iter().any(|&v| v != sentinel) {
            return Err(format!("{label}: wrote past token {n}"));
        }
        let expected: Vec<_> = (0..n)
            .flat_map(|t| (0..m.rows).map(move |r| (t, r)))
            .map(|(t, r)| m.dot(r, &x[t * m.row_len..(t + 1) * m.row_len]))
            .collect();
        worst = worst.max(compare_within(
            &format!("{label} n={n}"),
            &actual[..n * m.rows],
            &expected,
            matmul_tolerance(ctx),
        )?);
    }
    Ok(worst)
}

#[test]
fn matmul_matches_reference_for_every_type() {
    let mut failures = Vec::new();
    for (ctx, ty) in matmul_contexts().iter().flat_map(|ctx| SUPPORTED_TYPES.map(|ty| (ctx.clone(), ty))) {
        let mut worst = 0.0f64;
        for (row_len, rows) in row_lens(ty).into_iter().zip([97, 3]).chain([(row_lens(ty)[0], 1000)]) {
            let m = TestMatrix::random(ty, row_len, rows, (row_len * rows) as u64 + 1);
            let label = format!("matmul {} {rows}x{row_len}", ty.name());
            match check_matmul(&ctx, &label, &m, &m.upload(&ctx), &[1, 5, 17]) {
                Ok(w) => worst = worst.max(w),
                Err(failure) => failures.push(failure),
            }
        }
        println!(
            "matmul {:5} (cooperative matrix: {}): worst error / Σ|w·x| = {worst:.2e}",
            ty.name(),
            ctx.caps.cooperative_matrix
        );
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn matmul_covers_several_token_tiles() {
    for ctx in matmul_contexts() {
        let m = TestMatrix::random(GgmlType::Q8_0, 640, 130, 5);
        check_matmul(&ctx, "matmul 70 tokens", &m, &m.upload(&ctx), &[33, 70]).unwrap();
    }
}

#[test]
fn chunked_matrices_match_reference() {
    let ctx = gpu(GpuOptions::default());
    for (ty, row_len) in [(GgmlType::Q6_K, 256), (GgmlType::Q8_0, 640), (GgmlType::F16, 640)] {
        let m = TestMatrix::random(ty, row_len, 97, 21);
        // 97 rows in chunks of 10: the chunk boundaries fall inside workgroup tiles.
        let w = m.upload_chunked(&ctx, 10);
        let label = format!("chunked {}", ty.name());
        check_matvec(&ctx, &format!("{label} matvec"), &m, &w).unwrap();
        check_matmul(&ctx, &format!("{label} matmul"), &m, &w, &[5, 17]).unwrap();
    }
}

/// Random matrices of one type and row length with `rows` rows each, stacked on the GPU.
fn stack(
    ctx: &GpuContext,
    ty: GgmlType,
    row_len: usize,
    rows: &[usize],
    seed: u64,
) -> (Vec<TestMatrix>, StackedMatrix) {
    let parts: Vec<TestMatrix> =
        rows.iter().enumerate().map(|(i, &r)| TestMatrix::random(ty, row_len, r, seed + i as u64)).collect();
    let names: Vec<String> = (0..parts.len()).map(|i| format!("part{i}")).collect();
    let data: Vec<(&str, u64, &[u8])> = parts
        .iter()
        .zip(&names)
        .map(|(m, name)| (name.as_str(), m.rows as u64, m.bytes.as_slice()))
        .collect();
    let stacked = StackedMatrix::upload(ctx, "stack", ty, row_len as u64, &data).expect("stack upload");
    (parts, stacked)
}

/// Stacked products write each part to its own buffer (q, k, v in one dispatch).
fn stacked_matvec_every_shape(ctx: &GpuContext) {
    for (ty, row_len, rows) in [
        (GgmlType::Q5_0, 640, vec![1024, 256, 256]),
        (GgmlType::Q8_0, 1152, vec![97, 33]),
        (GgmlType::Q4_K, 256, vec![2051, 1000, 1000]),
        (GgmlType::Q6_K, 512, vec![5]),
        (GgmlType::Q4_1, 576, vec![4099, 3]),
    ] {
        let (parts, stacked) = stack(ctx, ty, row_len, &rows, 3);
        let x = values(row_len, 17);
        let input = f32_tensor(ctx, row_len, &x);
        // A bias for every row of the stack (Qwen 2's q, k and v).
        let total_rows: usize = rows.iter().sum();
        let bias_values: Vec<f32> = (0..total_rows).map(|r| (r % 7) as f32 - 3.0).collect();
        let bias = f32_tensor(ctx, total_rows, &bias_values);
        let sentinel = 55.5f32;
        // Two rows each: the product writes the first only.
        let outputs: Vec<GpuTensor> =
            parts.iter().map(|m| f32_tensor(ctx, m.rows, &vec![sentinel; 2 * m.rows])).collect();
        let mut ops = OpList::new();
        record_stacked_matvec(
            ctx,
            &mut ops,
            "stacked",
            &stacked,
            MatvecInput::Vector(&input),
            &outputs.iter().collect::<Vec<_>>(),
            Some(&bias),
        )
        .unwrap();
        assert_eq!(ops.len(), 1, "one dispatch for the whole stack");
        run(ctx, &ops, 1);
        for (i, (m, output)) in parts.iter().zip(&outputs).enumerate() {
            let actual = read_tensor(ctx, output);
            assert!(
                actual[m.rows..].iter().all(|&v| v == sentinel),
                "{} {rows:?}: part {i} written past its row",
                ty.name()
            );
            let first_row: usize = rows[..i].iter().sum();
            let expected: Vec<_> = (0..m.rows)
                .map(|r| {
                    let (sum, magnitude) = m.dot(r, &x);
                    let bias = f64::from(bias_values[first_row + r]);
                    (sum + bias, magnitude + bias.abs())
                })
                .collect();
            compare(
                &format!("stacked {} {rows:?} part {i} (subgroups: {})", ty.name(), ctx.caps.subgroups),
                &actual[..m.rows],
                &expected,
            )
            .unwrap();
        }
    }
}

#[test]
fn stacked_matvec_writes_each_part_to_its_output() {
    stacked_matvec_every_shape(&gpu(GpuOptions::default()));
    stacked_matvec_every_shape(&without_subgroups());
}

/// f64 references of the activations (activation.wgsl) and their largest slope.
fn activation(kind: Activation, x: f64) -> f64 {
    match kind {
        Activation::GeluTanh => {
            0.5 * x * (1.0 + (0.797_884_560_802_865_4 * (x + 0.044715 * x * x * x)).tanh())
        }
        Activation::Silu => x / (1.0 + (-x).exp()),
    }
}
const ACTIVATION_MAX_SLOPE: f64 = 1.13;

fn gated_matvec_every_shape(ctx: &GpuContext) {
    for kind in [Activation::GeluTanh, Activation::Silu] {
        // 97 rows: one row per workgroup; 1100 and 2051: two, from a stack of 2200 or 4102.
        for (ty, row_len, rows) in
            [(GgmlType::Q5_0, 640, 97), (GgmlType::Q4_K, 512, 1100), (GgmlType::Q8_0, 1152, 2051)]
        {
            let (parts, stacked) = stack(ctx, ty, row_len, &[rows, rows], 9);
            // Scaled so the gate sums reach the activations' curved range and beyond.
            let x: Vec<f32> = values(row_len, 23).iter().map(|v| v * 0.2).collect();
            let input = f32_tensor(ctx, row_len, &x);
            let output = f32_tensor(ctx, rows, &vec![-1.0; 2 * rows]);
            let mut ops = OpList::new();
            record_gated_matvec(ctx, &mut ops, "gated", &stacked, MatvecInput::Vector(&input), &output, kind)
                .unwrap();
            assert_eq!(ops.len(), 1);
            run(ctx, &ops, 1);
            check_gated(
                ctx,
                &format!("gated {kind:?} {} {rows}x{row_len} (subgroups: {})", ty.name(), ctx.caps.subgroups),
                kind,
                &parts,
                &x,
                (&output, 1, RELATIVE_TOLERANCE),
            );
        }
    }
}

/// Checks `act(G·x) · U·x` of gate and up `parts` in `output` for `tokens` rows of `x`, each
/// product within `relative` of its magnitude, and nothing written past them.
fn check_gated(
    ctx: &GpuContext,
    label: &str,
    kind: Activation,
    parts: &[TestMatrix],
    x: &[f32],
    (output, tokens, relative): (&GpuTensor, usize, f64),
) {
    let (rows, row_len) = (parts[0].rows, parts[0].row_len);
    let actual = read_tensor(ctx, output);
    assert!(actual[tokens * rows..].iter().all(|&v| v == -1.0), "{label}: written past token {tokens}");
    for (i, &got) in actual[..tokens * rows].iter().enumerate() {
        let (t, r) = (i / rows, i % rows);
        let x = &x[t * row_len..(t + 1) * row_len];
        let ((g, g_magnitude), (u, u_magnitude)) = (parts[0].dot(r, x), parts[1].dot(r, x));
        let expected = activation(kind, g) * u;
        // The two sums' tolerances carried through act(g)·u, plus f32 rounding of it.
        let tolerance_g = relative * g_magnitude + ABSOLUTE_TOLERANCE;
        let tolerance_u = relative * u_magnitude + ABSOLUTE_TOLERANCE;
        let tolerance = ACTIVATION_MAX_SLOPE * tolerance_g * (u.abs() + tolerance_u)
            + activation(kind, g).abs() * tolerance_u
            + 1e-6 * expected.abs();
        let got = f64::from(got);
        assert!(
            (got - expected).abs() <= tolerance,
            "{label} token {t} row {r}: got {got}, expected {expected}"
        );
    }
}

/// Prefill's gated feed-forward input (`record_gated_matmul`): two products and the
/// activation in steps under HALF_MIN_TOKENS and everywhere on lavapipe; on adapters with
/// cooperative matrices, from HALF_MIN_TOKENS on, one product that applies the activation as it
/// stores, over slices of 128 gate rows and a last one of 16.
#[test]
fn gated_matmul_matches_reference() {
    let ctx = gpu(GpuOptions::default());
    let max_tokens = HALF_MIN_TOKENS + 37;
    let rows = 272;
    for kind in [Activation::GeluTanh, Activation::Silu] {
        for (ty, row_len) in [(GgmlType::Q4_K, 512), (GgmlType::Q6_K, 256), (GgmlType::Q8_0, 640)] {
            let (parts, stacked) = stack(&ctx, ty, row_len, &[rows, rows], 41);
            let shape =
                HalfShape { max_row_len: row_len as u32, max_matrix_values: (2 * rows * row_len) as u64 };
            let operands = HalfOperands::with_slice_bytes(&ctx, max_tokens, shape, 256 * row_len as u64 * 2);
            // Scaled so the gate sums reach the activations' curved range and beyond.
            let x: Vec<f32> = values(max_tokens as usize * row_len, 23).iter().map(|v| v * 0.2).collect();
            let input = f32_tensor(&ctx, row_len, &x);
            for n in [5, HALF_MIN_TOKENS, max_tokens] {
                let gate = f32_tensor(&ctx, rows, &vec![-1.0; max_tokens as usize * rows]);
                let up = f32_tensor(&ctx, rows, &vec![0.0; max_tokens as usize * rows]);
                let products = [(0, &gate), (1, &up)].map(|(index, output)| PartProduct {
                    label: format!("part{index}"),
                    part: MatrixRows { matrix: &stacked.matrix, rows: stacked.part_rows(index) },
                    output: ProductOutput { output, split_scratch: None, half_operands: Some(&operands) },
                });
                let step = step_buffer(&ctx, 0, n);
                let mut ops = OpList::new();
                record_gated_matmul(&ctx, &mut ops, "act", &products, &input, kind, &step).unwrap();
                run(&ctx, &ops, n);
                let fused = ctx.caps.cooperative_matrix && n >= HALF_MIN_TOKENS;
                let relative =
                    if fused { COOPERATIVE_MATRIX_RELATIVE_TOLERANCE } else { matmul_tolerance(&ctx) };
                let label = format!("gated matmul {kind:?} {} {rows}x{row_len} n={n}", ty.name());
                check_gated(&ctx, &label, kind, &parts, &x, (&gate, n as usize, relative));
            }
        }
    }
}

#[test]
fn gated_matvec_matches_reference() {
    gated_matvec_every_shape(&gpu(GpuOptions::default()));
    gated_matvec_every_shape(&without_subgroups());
}

/// The CPU form of quantize_q8.wgsl: (signed bytes, one scale per 32 values).
fn quantize_q8(x: &[f32]) -> (Vec<i8>, Vec<f32>) {
    let mut bytes = Vec::with_capacity(x.len());
    let mut scales = Vec::new();
    for block in x.chunks(32) {
        let largest = block.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let inverse = if largest > 0.0 { 127.0 / largest } else { 0.0 };
        bytes.extend(block.iter().map(|v| (v * inverse).round_ties_even() as i8));
        scales.push(largest / 127.0);
    }
    (bytes, scales)
}

/// The values the Q8 form of `x` stands for.
fn dequantized_q8(x: &[f32]) -> Vec<f32> {
    let (bytes, scales) = quantize_q8(x);
    bytes.iter().enumerate().map(|(i, &q)| f32::from(q) * scales[i / 32]).collect()
}

#[test]
fn quantize_q8_matches_reference() {
    let ctx = gpu(GpuOptions::default());
    // Blocks of one sign, of zeros only, and of one large value among small ones.
    let mut x: Vec<f32> = values(4096, 31).iter().map(|v| v * 3.0).collect();
    x[32..64].fill(0.0);
    x[64..96].iter_mut().for_each(|v| *v = v.abs());
    x[100] = 1e4;
    let q8 = Q8Vector::new(&ctx, "x", x.len() as u32);
    let mut ops = OpList::new();
    record_quantize_q8(&ctx, &mut ops, "quantize", &f32_tensor(&ctx, x.len(), &x), &q8).unwrap();
    run(&ctx, &ops, 1);
    let (bytes, scales) = quantize_q8(&x);
    let words: Vec<u32> = read_tensor(&ctx, &q8.words).iter().map(|v| v.to_bits()).collect();
    let got_bytes: Vec<i8> = words.iter().flat_map(|w| w.to_le_bytes()).map(|b| b as i8).collect();
    // The shader's division may be a few ulps off the CPU's, moving a value at a rounding tie.
    for (i, (&got, &expected)) in got_bytes.iter().zip(&bytes).enumerate() {
        assert!((i16::from(got) - i16::from(expected)).abs() <= 1, "value {i}: {got} against {expected}");
    }
    let ties = got_bytes.iter().zip(&bytes).filter(|(a, b)| a != b).count();
    assert!(ties <= 2, "{ties} values off by one");
    for (block, (&got, &expected)) in read_tensor(&ctx, &q8.scales).iter().zip(&scales).enumerate() {
        assert!((got - expected).abs() <= 1e-6 * expected, "block {block}: scale {got} against {expected}");
    }
    assert_eq!(scales[1], 0.0);
}

/// The products of the types with a Q8 path on the input in Q8 form, against the CPU
/// reference on the values that form stands for: plain (one chunk and several) and gated.
fn q8_input_matvec_every_shape(ctx: &GpuContext) {
    let mut failures = Vec::new();
    for ty in SUPPORTED_TYPES.into_iter().filter(|&ty| takes_q8_input(ty)) {
        // 1,536 values: Q6_K rows of 24 wide parts (32 threads), Q4_K, Q5_K and IQ4_XS of 48;
        // 2,304 (nine blocks): IQ4_XS rows that start 8 bytes off a 16-byte boundary, and
        // wide rows of 72 parts (96 threads where the adapter has subgroups).
        let more = (ty.block_len() == 256).then_some(1536);
        for row_len in row_lens(ty).into_iter().chain(more) {
            for rows in [3, 1000, 4099] {
                let m = TestMatrix::random(ty, row_len, rows, (row_len * rows) as u64);
                let x = values(row_len, rows as u64);
                let q8 = Q8Vector::new(ctx, "x", row_len as u32);
                let output = GpuTensor::zeroed(ctx, "y", 1, rows as u32, Element::F32);
                let label =
                    format!("q8 matvec {} {rows}x{row_len} (subgroups: {})", ty.name(), ctx.caps.subgroups);
                let mut ops = OpList::new();
                record_quantize_q8(ctx, &mut ops, "quantize", &f32_tensor(ctx, row_len, &x), &q8).unwrap();
                let w = if rows > 1000 { m.upload_chunked(ctx, 1000) } else { m.upload(ctx) };
                record_matvec_of(ctx, &mut ops, &label, &w, MatvecInput::Q8(&q8), &output).unwrap();
                run(ctx, &ops, 1);
                let x_q8 = dequantized_q8(&x);
                let expected: Vec<_> = (0..rows).map(|r| m.dot(r, &x_q8)).collect();
                if let Err(failure) = compare(&label, &read_tensor(ctx, &output), &expected) {
                    failures.push(failure);
                }
            }
        }
        let (row_len, rows) = (row_lens(ty)[1], 1100);
        let (parts, stacked) = stack(ctx, ty, row_len, &[rows, rows], 9);
        let x: Vec<f32> = values(row_len, 23).iter().map(|v| v * 0.2).collect();
        let q8 = Q8Vector::new(ctx, "x", row_len as u32);
        let output = f32_tensor(ctx, rows, &vec![-1.0; 2 * rows]);
        let mut ops = OpList::new();
        record_quantize_q8(ctx, &mut ops, "quantize", &f32_tensor(ctx, row_len, &x), &q8).unwrap();
        record_gated_matvec(
            ctx,
            &mut ops,
            "gated",
            &stacked,
            MatvecInput::Q8(&q8),
            &output,
            Activation::Silu,
        )
        .unwrap();
        run(ctx, &ops, 1);
        let label = format!("q8 gated {} {rows}x{row_len} (subgroups: {})", ty.name(), ctx.caps.subgroups);
        check_gated(
            ctx,
            &label,
            Activation::Silu,
            &parts,
            &dequantized_q8(&x),
            (&output, 1, RELATIVE_TOLERANCE),
        );
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// In the default shapes, in a GPU's with subgroups (rows of 65-96 wide parts take 96 threads)
/// and in a GPU's without them (128: the shared-memory tree takes a power of two).
#[test]
fn q8_input_matvec_matches_reference() {
    q8_input_matvec_every_shape(&gpu(GpuOptions::default()));
    q8_input_matvec_every_shape(&gpu(GpuOptions { gpu_shapes_on_cpu: true, ..Default::default() }));
    q8_input_matvec_every_shape(&without_subgroups());
}

/// The residual norm's Q8 output (decode) is the standalone quantization of its first normed
/// row, bit for bit, and leaves the f32 outputs as they are without it. Rows of fewer vectors
/// than threads and of several rounds of them (8,192 values: 2,048 vectors, 1,024 threads).
#[test]
fn residual_norm_q8_output_is_the_quantized_normed_row() {
    let ctx = gpu(GpuOptions::default());
    for dim in [1152usize, 8192] {
        let n_tokens = 2u32;
        let count = dim * n_tokens as usize;
        let block_out: Vec<f32> = values(count, 40).iter().map(|v| v * 5.0).collect();
        let (hidden, next_w) = (values(count, 41), values(dim, 43));
        let step = step_buffer(&ctx, 0, n_tokens);
        let run_norm = |normed_q8: Option<&Q8Vector>| {
            let (x_buf, h_buf) = (f32_tensor(&ctx, dim, &block_out), f32_tensor(&ctx, dim, &hidden));
            let next_buf = f32_tensor(&ctx, dim, &next_w);
            let normed = GpuTensor::zeroed(&ctx, "normed", n_tokens, dim as u32, Element::F32);
            let rows = ResidualRows { block_out: &x_buf, hidden: &h_buf, normed: &normed, normed_q8 };
            let norms = ResidualNorms { post_norm: None, next_norm: &next_buf, eps: 1e-6 };
            let mut ops = OpList::new();
            record_residual_norm(&ctx, &mut ops, "residual", rows, norms, &step).unwrap();
            run(&ctx, &ops, n_tokens);
            (read_tensor(&ctx, &h_buf), read_tensor(&ctx, &normed))
        };
        let fused = Q8Vector::new(&ctx, "fused", dim as u32);
        let with_q8 = run_norm(Some(&fused));
        assert!(with_q8 == run_norm(None), "dim {dim}: the Q8 output changed the f32 outputs");
        let standalone = Q8Vector::new(&ctx, "standalone", dim as u32);
        let mut ops = OpList::new();
        let first_row = f32_tensor(&ctx, dim, &with_q8.1[..dim]);
        record_quantize_q8(&ctx, &mut ops, "quantize", &first_row, &standalone).unwrap();
        run(&ctx, &ops, 1);
        for (what, a, b) in
            [("values", &fused.words, &standalone.words), ("scales", &fused.scales, &standalone.scales)]
        {
            let bits = |t: &GpuTensor| read_tensor(&ctx, t).iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(a), bits(b), "dim {dim}: Q8 {what}");
        }
    }
}

#[test]
fn q8_input_of_a_type_without_a_q8_path_is_an_error() {
    let ctx = gpu(GpuOptions::default());
    let m = TestMatrix::random(GgmlType::Q2_K, 256, 4, 1);
    let q8 = Q8Vector::new(&ctx, "x", 256);
    let output = GpuTensor::zeroed(&ctx, "y", 1, 4, Element::F32);
    let error =
        record_matvec_of(&ctx, &mut OpList::new(), "q8", &m.upload(&ctx), MatvecInput::Q8(&q8), &output)
            .unwrap_err();
    assert!(error.to_string().contains("cannot take a Q8 input"), "{error}");
}

/// How a normed matrix-vector input is made (`NormedInput`): the norm of a vector, or of the
/// residual stream after a block output is added to it, plainly or post-normed (Gemma).
#[derive(Debug, Clone, Copy)]
enum NormCase {
    OfVector,
    AfterResidual,
    AfterPostNormedResidual,
}

const NORM_EPS: f64 = 1e-6;

fn rms_normed(v: &[f64], w: &[f32]) -> Vec<f64> {
    let scale = 1.0 / (v.iter().map(|x| x * x).sum::<f64>() / v.len() as f64 + NORM_EPS).sqrt();
    v.iter().zip(w).map(|(x, &w)| x * scale * f64::from(w)).collect()
}

/// The buffers of a normed input and the f64 references of the input it makes and of the
/// residual stream it leaves.
struct NormedCase {
    source: GpuTensor,
    norm: GpuTensor,
    post_norm: GpuTensor,
    stream_in: GpuTensor,
    stream_out: GpuTensor,
    input: Vec<f32>,
    stream: Vec<f64>,
}

const STREAM_SENTINEL: f32 = 77.0;

impl NormedCase {
    fn new(ctx: &GpuContext, case: NormCase, row_len: usize) -> Self {
        // A block output and a residual stream of different sizes, weights around 1 (GGUF
        // Gemma norms include the +1).
        let source: Vec<f32> = values(row_len, 41).iter().map(|v| v * 3.0).collect();
        let stream_in: Vec<f32> = values(row_len, 43).iter().map(|v| v * 20.0).collect();
        let norm: Vec<f32> = values(row_len, 47).iter().map(|v| 1.0 + 0.5 * v).collect();
        let post_norm: Vec<f32> = values(row_len, 53).iter().map(|v| 0.8 + 0.3 * v).collect();
        let wide = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
        let stream: Vec<f64> = match case {
            NormCase::OfVector => wide(&source),
            NormCase::AfterResidual => {
                source.iter().zip(&stream_in).map(|(&s, &h)| f64::from(h) + f64::from(s)).collect()
            }
            NormCase::AfterPostNormedResidual => rms_normed(&wide(&source), &post_norm)
                .iter()
                .zip(&stream_in)
                .map(|(s, &h)| f64::from(h) + s)
                .collect(),
        };
        let input = rms_normed(&stream, &norm).iter().map(|&v| v as f32).collect();
        Self {
            source: f32_tensor(ctx, row_len, &source),
            norm: f32_tensor(ctx, row_len, &norm),
            post_norm: f32_tensor(ctx, row_len, &post_norm),
            stream_in: f32_tensor(ctx, row_len, &stream_in),
            stream_out: f32_tensor(ctx, row_len, &vec![STREAM_SENTINEL; row_len]),
            input,
            stream,
        }
    }

    fn matvec_input(&self, case: NormCase) -> MatvecInput<'_> {
        let residual = |post_norm| {
            Some(ResidualStream { stream_in: &self.stream_in, stream_out: Some(&self.stream_out), post_norm })
        };
        let residual = match case {
            NormCase::OfVector => None,
            NormCase::AfterResidual => residual(None),
            NormCase::AfterPostNormedResidual => residual(Some(&self.post_norm)),
        };
        MatvecInput::Normed(NormedInput {
            source: &self.source,
            norm: &self.norm,
            residual,
            eps: NORM_EPS as f32,
        })
    }

    /// The updated stream is written once and exactly, or not at all without a residual.
    fn check_stream(&self, ctx: &GpuContext, label: &str, case: NormCase) {
        let written = read_tensor(ctx, &self.stream_out);
        for (i, (&got, &expected)) in written.iter().zip(&self.stream).enumerate() {
            let expected =
                if matches!(case, NormCase::OfVector) { f64::from(STREAM_SENTINEL) } else { expected };
            assert!(
                (f64::from(got) - expected).abs() <= 1e-5 * expected.abs().max(1.0),
                "{label}: stream[{i}] = {got}, expected {expected}"
            );
        }
    }
}

const NORM_CASES: [NormCase; 3] =
    [NormCase::OfVector, NormCase::AfterResidual, NormCase::AfterPostNormedResidual];

/// Stacked and gated products normalize their input in every workgroup as the separate
/// norm kernels would, and leave the residual stream where they are asked to.
fn normed_matvec_every_case(ctx: &GpuContext) {
    for case in NORM_CASES {
        for (ty, row_len, rows) in [
            (GgmlType::Q5_0, 640, vec![1024, 256, 256]),
            (GgmlType::Q4_K, 1280, vec![300]),
            (GgmlType::Q8_0, 1152, vec![2051, 7]),
        ] {
            let label = format!("normed {case:?} {} {rows:?} (subgroups: {})", ty.name(), ctx.caps.subgroups);
            let (parts, stacked) = stack(ctx, ty, row_len, &rows, 5);
            let normed = NormedCase::new(ctx, case, row_len);
            let outputs: Vec<GpuTensor> =
                parts.iter().map(|m| f32_tensor(ctx, m.rows, &vec![0.0; m.rows])).collect();
            let mut ops = OpList::new();
            record_stacked_matvec(
                ctx,
                &mut ops,
                "normed",
                &stacked,
                normed.matvec_input(case),
                &outputs.iter().collect::<Vec<_>>(),
                None,
            )
            .unwrap();
            assert_eq!(ops.len(), 1, "{label}: the norm takes no dispatch of its own");
            run(ctx, &ops, 1);
            for (i, (m, output)) in parts.iter().zip(&outputs).enumerate() {
                let expected: Vec<_> = (0..m.rows).map(|r| m.dot(r, &normed.input)).collect();
                compare(&format!("{label} part {i}"), &read_tensor(ctx, output), &expected).unwrap();
            }
            normed.check_stream(ctx, &label, case);
        }
        let (ty, row_len, rows) = (GgmlType::Q5_0, 1152, 1100);
        let label = format!(
            "normed gated {case:?} {} {rows}x{row_len} (subgroups: {})",
            ty.name(),
            ctx.caps.subgroups
        );
        let (parts, stacked) = stack(ctx, ty, row_len, &[rows, rows], 13);
        let normed = NormedCase::new(ctx, case, row_len);
        let output = f32_tensor(ctx, rows, &vec![-1.0; 2 * rows]);
        let mut ops = OpList::new();
        record_gated_matvec(
            ctx,
            &mut ops,
            "normed gated",
            &stacked,
            normed.matvec_input(case),
            &output,
            Activation::GeluTanh,
        )
        .unwrap();
        run(ctx, &ops, 1);
        check_gated(
            ctx,
            &label,
            Activation::GeluTanh,
            &parts,
            &normed.input,
            (&output, 1, RELATIVE_TOLERANCE),
        );
        normed.check_stream(ctx, &label, case);
    }
}

#[test]
fn normed_input_matvec_matches_norm_then_matvec() {
    normed_matvec_every_case(&gpu(GpuOptions::default()));
    normed_matvec_every_case(&without_subgroups());
}

/// A product that folds in a norm another product writes the stream for (`stream_out`
/// None) computes the same rows and leaves the stream alone.
#[test]
fn normed_input_without_stream_out_leaves_the_stream() {
    let ctx = gpu(GpuOptions::default());
    let (ty, row_len) = (GgmlType::Q5_0, 1152);
    let (parts, stacked) = stack(&ctx, ty, row_len, &[256], 17);
    let case = NormCase::AfterPostNormedResidual;
    let normed = NormedCase::new(&ctx, case, row_len);
    let output = f32_tensor(&ctx, 256, &[0.0; 256]);
    let MatvecInput::Normed(mut input) = normed.matvec_input(case) else { unreachable!("a normed case") };
    input.residual.as_mut().expect("a residual case").stream_out = None;
    let mut ops = OpList::new();
    record_stacked_matvec(
        &ctx,
        &mut ops,
        "normed, stream written elsewhere",
        &stacked,
        MatvecInput::Normed(input),
        &[&output],
        None,
    )
    .unwrap();
    run(&ctx, &ops, 1);
    let expected: Vec<_> = (0..parts[0].rows).map(|r| parts[0].dot(r, &normed.input)).collect();
    compare("normed without stream out", &read_tensor(&ctx, &output), &expected).unwrap();
    normed.check_stream(&ctx, "normed without stream out", NormCase::OfVector);
}

#[test]
fn normed_input_that_reads_and_writes_one_stream_buffer_is_an_error() {
    let ctx = gpu(GpuOptions::default());
    let (_, stacked) = stack(&ctx, GgmlType::Q8_0, 640, &[64], 3);
    let normed = NormedCase::new(&ctx, NormCase::AfterResidual, 640);
    let output = f32_tensor(&ctx, 64, &[0.0; 64]);
    let input = MatvecInput::Normed(NormedInput {
        source: &normed.source,
        norm: &normed.norm,
        residual: Some(ResidualStream {
            stream_in: &normed.stream_in,
            stream_out: Some(&normed.stream_in),
            post_norm: None,
        }),
        eps: 1e-6,
    });
    assert!(record_stacked_matvec(&ctx, &mut OpList::new(), "aliased", &stacked, input, &[&output], None)
        .is_err());
}

/// Each part of a stack whose chunks end inside the parts, alone: in a step of the tiled kernel
/// and, on tensor cores, in one of the f16 products, where some chunks hold none of the part's
/// rows.
#[test]
fn matmul_over_parts_of_a_chunked_stack_matches_reference() {
    let ctx = gpu(GpuOptions::default());
    let ty = GgmlType::Q5_0;
    let parts: Vec<TestMatrix> = [70, 13, 40]
        .iter()
        .enumerate()
        .map(|(i, &rows)| TestMatrix::random(ty, 640, rows, 60 + i as u64))
        .collect();
    let bytes: Vec<u8> = parts.iter().flat_map(|m| m.bytes.iter().copied()).collect();
    let row_bytes = parts[0].bytes.len() / parts[0].rows;
    // Chunks of 32 rows: every part starts or ends inside a chunk, the second within one.
    let w =
        GpuMatrix::upload_with_chunk_limit(&ctx, "w", ty, 640, 123, &bytes, (32 * row_bytes) as u64).unwrap();
    assert_eq!(w.chunks.len(), 4);
    let max_tokens = HALF_MIN_TOKENS + 37;
    let shape = HalfShape { max_row_len: 640, max_matrix_values: 123 * 640 };
    let operands = HalfOperands::new(&ctx, max_tokens, shape);
    let x = values(max_tokens as usize * 640, 61);
    let input = f32_tensor(&ctx, 640, &x);
    for n_tokens in [5, max_tokens] {
        let step = step_buffer(&ctx, 0, n_tokens);
        let mut first = 0u32;
        for (i, m) in parts.iter().enumerate() {
            let rows = first..first + m.rows as u32;
            first = rows.end;
            let output = GpuTensor::zeroed(&ctx, "Y", max_tokens, m.rows as u32, Element::F32);
            let mut ops = OpList::new();
            let part = MatrixRows { matrix: &w, rows };
            let product =
                ProductOutput { output: &output, split_scratch: None, half_operands: Some(&operands) };
            record_matmul_rows(&ctx, &mut ops, "part", part, &input, product, &step).unwrap();
            run(&ctx, &ops, n_tokens);
            let actual = read_tensor(&ctx, &output);
            let expected: Vec<_> = (0..n_tokens as usize)
                .flat_map(|t| (0..m.rows).map(move |r| (t, r)))
                .map(|(t, r)| m.dot(r, &x[t * 640..(t + 1) * 640]))
                .collect();
            let label = format!("matmul rows of part {i}, {n_tokens} tokens");
            let written = &actual[..expected.len()];
            compare_within(&label, written, &expected, matmul_tolerance(&ctx)).unwrap();
        }
    }
}

/// The parts of stacks as products of one input (`record_matmul_parts`, prefill's q, k and
/// v): on tensor cores (not lavapipe), in a step of the f16 products, one conversion of the
/// input serves every part's product: three parts in whole tiles of rows in one product, from
/// one stack or from two of different types (q and k in one, v in another, as Q4_K_M mixes
/// them), other parts one product each, unsplit (large parts) or splitting K (small ones);
/// elsewhere the tiled kernel per part.
#[test]
fn matmul_over_the_parts_of_a_stack_on_one_input_matches_reference() {
    let ctx = gpu(GpuOptions::default());
    let n_tokens = HALF_MIN_TOKENS + 37;
    let row_len = 256;
    let cases: [&[(GgmlType, &[usize])]; 3] = [
        &[(GgmlType::Q4_K, &[4096, 2048, 2048])],
        &[(GgmlType::Q4_K, &[300, 64, 64])],
        &[(GgmlType::Q4_K, &[256, 128]), (GgmlType::Q6_K, &[128])],
    ];
    for stacks in cases {
        let built: Vec<(Vec<TestMatrix>, StackedMatrix)> = stacks
            .iter()
            .enumerate()
            .map(|(i, &(ty, rows))| stack(&ctx, ty, row_len, rows, 81 + 10 * i as u64))
            .collect();
        // (matrix, its rows, the stack holding them, index there) for every part, in order.
        let parts: Vec<(&TestMatrix, &StackedMatrix, usize)> = built
            .iter()
            .flat_map(|(parts, stacked)| parts.iter().enumerate().map(move |(index, m)| (m, stacked, index)))
            .collect();
        let rows: usize = parts.iter().map(|(m, ..)| m.rows).sum();
        let shape = HalfShape { max_row_len: row_len as u32, max_matrix_values: (rows * row_len) as u64 };
        let operands = HalfOperands::new(&ctx, n_tokens, shape);
        let splits = GpuTensor::zeroed(&ctx, "splits", 1, 8 * n_tokens * rows as u32, Element::F32);
        let x = values(n_tokens as usize * row_len, 82);
        let input = f32_tensor(&ctx, row_len, &x);
        let outputs: Vec<GpuTensor> = parts
            .iter()
            .map(|(m, ..)| GpuTensor::zeroed(&ctx, "Y", n_tokens, m.rows as u32, Element::F32))
            .collect();
        let products: Vec<PartProduct> = parts
            .iter()
            .zip(&outputs)
            .enumerate()
            .map(|(i, ((_, stacked, index), output))| PartProduct {
                label: format!("part{i}"),
                part: MatrixRows { matrix: &stacked.matrix, rows: stacked.part_rows(*index) },
                output: ProductOutput {
                    output,
                    split_scratch: Some(&splits),
                    half_operands: Some(&operands),
                },
            })
            .collect();
        let step = step_buffer(&ctx, 0, n_tokens);
        let mut ops = OpList::new();
        record_matmul_parts(&ctx, &mut ops, &products, &input, &step).unwrap();
        run(&ctx, &ops, n_tokens);
        for (index, ((m, ..), output)) in parts.iter().zip(&outputs).enumerate() {
            let expected: Vec<_> = (0..n_tokens as usize)
                .flat_map(|t| (0..m.rows).map(move |r| (t, r)))
                .map(|(t, r)| m.dot(r, &x[t * row_len..(t + 1) * row_len]))
                .collect();
            let label = format!("part {index} of the stacks {stacks:?}");
            compare_within(&label, &read_tensor(&ctx, output), &expected, matmul_tolerance(&ctx)).unwrap();
        }
    }
}

#[test]
fn split_k_matmul_matches_reference() {
    // Few rows and long rows: the kernel splits K and adds the slices in a second dispatch.
    for (ctx, (ty, row_len, rows)) in matmul_contexts().iter().flat_map(|ctx| {
        [(GgmlType::Q6_K, 2304, 64), (GgmlType::Q5_0, 6912, 97), (GgmlType::Q8_0, 640, 3)]
            .map(|shape| (ctx.clone(), shape))
    }) {
        let m = TestMatrix::random(ty, row_len, rows, 71);
        // Room for a few slices only: the split count also follows the scratch size.
        let scratch = GpuTensor::zeroed(&ctx, "splits", 1, (3 * 70 * rows) as u32, Element::F32);
        let label = format!(
            "split-K {} {rows}x{row_len} (cooperative matrix: {})",
            ty.name(),
            ctx.caps.cooperative_matrix
        );
        let scratch = ProductScratch { split: Some(&scratch), half: None };
        check_matmul_with(&ctx, &label, &m, &m.upload(&ctx), &[1, 5, 70], scratch).unwrap();
        check_matmul_with(
            &ctx,
            &format!("{label} chunked"),
            &m,
            &m.upload_chunked(&ctx, rows.div_ceil(2)),
            &[70],
            scratch,
        )
        .unwrap();
    }
}

/// Gathers `tokens` from `table` (uploaded by the caller) and checks them against `m`.
fn check_embedding(ctx: &GpuContext, m: &TestMatrix, table: &GpuMatrix, tokens: &[u32], scale: f32) {
    let max_tokens = tokens.len() as u32 + 3;
    let mut token_data = tokens.to_vec();
    token_data.resize(max_tokens as usize, 0);
    let token_tensor = GpuTensor::from_u32(ctx, "tokens", 1, &token_data);
    let sentinel = 99.0f32;
    let output = f32_tensor(ctx, m.row_len, &vec![sentinel; max_tokens as usize * m.row_len]);
    let step = step_buffer(ctx, 0, tokens.len() as u32);
    let mut ops = OpList::new();
    record_embedding(ctx, &mut ops, "embedding", ScaledTable { table, scale }, &token_tensor, &output, &step)
        .unwrap();
    run(ctx, &ops, tokens.len() as u32);
    let actual = read_tensor(ctx, &output);
    for (t, &id) in tokens.iter().enumerate() {
        let row = &actual[t * m.row_len..(t + 1) * m.row_len];
        for (k, &a) in row.iter().enumerate() {
            // Dequantization and one scaling, both in f32: a few ulps of terms of magnitude
            // up to about 1 (K-quant values are d·scale·q - dmin·min, which can cancel).
            let reference = if (id as usize) < m.rows { f64::from(m.row(id as usize)[k]) } else { 0.0 };
            let expected = reference * f64::from(scale);
            let tolerance = f64::from(scale) * 1e-6 * (1.0 + reference.abs());
            assert!(
                (f64::from(a) - expected).abs() <= tolerance,
                "{} token {t} (id {id}) value {k}: got {a}, expected {expected}",
                m.ty.name()
            );
        }
    }
    assert!(
        actual[tokens.len() * m.row_len..].iter().all(|&v| v == sentinel),
        "{}: wrote past the step's tokens",
        m.ty.name()
    );
}

#[test]
fn embedding_matches_reference_for_every_type() {
    let ctx = gpu(GpuOptions::default());
    for ty in SUPPORTED_TYPES {
        let m = TestMatrix::random(ty, row_lens(ty)[0], 50, 31);
        check_embedding(&ctx, &m, &m.upload(&ctx), &[7, 0, 49, 7, 23], 2.5);
    }
}

#[test]
fn embedding_gathers_across_chunks_and_zeroes_ids_past_the_table() {
    let ctx = gpu(GpuOptions::default());
    for ty in [GgmlType::Q8_0, GgmlType::Q6_K] {
        let m = TestMatrix::random(ty, row_lens(ty)[1], 45, 41);
        let table = m.upload_chunked(&ctx, 8);
        // Ids in the first, middle and last (partial) chunks, on chunk edges, and past the end.
        check_embedding(&ctx, &m, &table, &[44, 0, 8, 7, 23, 40, 45, 1_000_000, 16], 25.3);
    }
}

#[test]
fn unsupported_types_and_shapes_are_errors() {
    let ctx = gpu(GpuOptions::default());
    let zeros = |rows: u32, width: u32| GpuTensor::zeroed(&ctx, "x", rows, width, Element::F32);
    let (x32, y2) = (zeros(1, 32), zeros(1, 2));
    let q8_1 = GpuMatrix::upload(&ctx, "q8_1", GgmlType::Q8_1, 32, 2, &[0u8; 72]).unwrap();
    let mut ops = OpList::new();
    assert!(record_matvec(&ctx, &mut ops, "q8_1", &q8_1, &x32, &y2).is_err());
    // Plain types are walked in blocks of 16 values.
    let odd = GpuMatrix::upload(&ctx, "odd", GgmlType::F32, 24, 2, &[0u8; 192]).unwrap();
    assert!(record_matvec(&ctx, &mut ops, "odd", &odd, &zeros(1, 24), &y2).is_err());
    let m = TestMatrix::random(GgmlType::Q4_0, 640, 4, 1);
    let w = m.upload(&ctx);
    let (input, output) = (zeros(10, 640), zeros(10, 4));
    assert!(record_matvec(&ctx, &mut ops, "short input", &w, &zeros(1, 639), &output).is_err());
    assert!(record_matvec(&ctx, &mut ops, "wide output", &w, &input, &zeros(1, 5)).is_err());
    let tokens = GpuTensor::zeroed(&ctx, "tokens", 10, 640, Element::U32);
    assert!(record_matvec(&ctx, &mut ops, "token ids as input", &w, &tokens, &output).is_err());
    let step = step_buffer(&ctx, 0, 10);
    assert!(record_matmul(&ctx, &mut ops, "fewer output rows", &w, &input, &zeros(9, 4), &step).is_err());
    assert!(record_matmul(&ctx, &mut ops, "fits", &w, &input, &output, &step).is_ok());
    assert_eq!(ops.len(), 1);
    ops = OpList::new();
    assert!(ops.is_empty());
}
