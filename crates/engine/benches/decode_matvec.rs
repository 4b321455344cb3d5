//! The decode matrix-vector kernels on their own, on the shapes of Gemma 3 1B and 270M: each
//! case is dispatched `--chain` times back to back in one compute pass, as a decode step
//! chains its kernels (every dispatch waits for the one before), and timed end to end over
//! the submit. Prints one JSON object per case: microseconds per dispatch and the weight
//! bytes read per second, so a kernel change can be judged away from the rest of the model.
//!
//! `cargo bench -p doppler-engine --bench decode_matvec -- [--chain N] [--repeats N] [--filter S]`

use std::{sync::Arc, time::Instant};

use doppler_engine::{
    gguf::GgmlType,
    gpu::{Element, GpuContext, GpuMatrix, GpuOptions, GpuTensor, OpList, StackedMatrix},
    kernels::{
        elementwise::Activation,
        matmul::{
            record_gated_matvec, record_matvec, record_matvec_of, record_quantize_q8, record_stacked_matvec,
            MatvecInput, NormedInput, Q8Vector, ResidualStream,
        },
    },
    quant::random_quantized,
};

/// How a case's product runs.
#[derive(Clone, Copy)]
enum Product {
    /// `record_matvec` on a plain input.
    Plain,
    /// `record_stacked_matvec` over parts of these rows, on a post-normed residual input.
    NormedStack(&'static [u64]),
    /// `record_gated_matvec` (GELU) over gate and up of `rows` rows each.
    Gated {
        normed: bool,
    },
    /// As `Plain` and `Gated` without a norm, on the input in Q8 form (quantized once, before
    /// the chain: the quantize kernel is a case of its own).
    PlainQ8,
    GatedQ8,
    /// `record_quantize_q8` of a row of `row_len` values.
    Quantize,
}

struct Case {
    name: &'static str,
    ty: GgmlType,
    rows: u64,
    row_len: u64,
    product: Product,
}

const CASES: &[Case] = &[
    // Next to nothing to read: what a dispatch in a chain costs by itself.
    Case { name: "tiny", ty: GgmlType::Q8_0, rows: 64, row_len: 256, product: Product::Plain },
    Case {
        name: "1b ffn_gate+up",
        ty: GgmlType::Q5_0,
        rows: 6912,
        row_len: 1152,
        product: Product::Gated { normed: false },
    },
    Case {
        name: "1b ffn_gate+up normed",
        ty: GgmlType::Q5_0,
        rows: 6912,
        row_len: 1152,
        product: Product::Gated { normed: true },
    },
    Case { name: "1b ffn_down q6_k", ty: GgmlType::Q6_K, rows: 1152, row_len: 6912, product: Product::Plain },
    Case { name: "1b ffn_down q4_k", ty: GgmlType::Q4_K, rows: 1152, row_len: 6912, product: Product::Plain },
    // The same shape in the types of smaller files (Q3_K_M, Q2_K, IQ4_XS mixes; gpt-oss).
    Case { name: "1b ffn_down q2_k", ty: GgmlType::Q2_K, rows: 1152, row_len: 6912, product: Product::Plain },
    Case { name: "1b ffn_down q3_k", ty: GgmlType::Q3_K, rows: 1152, row_len: 6912, product: Product::Plain },
    Case {
        name: "1b ffn_down iq4_nl",
        ty: GgmlType::IQ4_NL,
        rows: 1152,
        row_len: 6912,
        product: Product::Plain,
    },
    Case {
        name: "1b ffn_down iq4_xs",
        ty: GgmlType::IQ4_XS,
        rows: 1152,
        row_len: 6912,
        product: Product::Plain,
    },
    Case {
        name: "1b ffn_down mxfp4",
        ty: GgmlType::MXFP4,
        rows: 1152,
        row_len: 6912,
        product: Product::Plain,
    },
    Case { name: "1b attn_output", ty: GgmlType::Q4_K, rows: 1152, row_len: 1024, product: Product::Plain },
    Case {
        name: "1b attn_qkv normed",
        ty: GgmlType::Q5_0,
        rows: 1536,
        row_len: 1152,
        product: Product::NormedStack(&[1024, 256, 256]),
    },
    Case {
        name: "1b lm_head slice",
        ty: GgmlType::Q8_0,
        rows: 32768,
        row_len: 1152,
        product: Product::Plain,
    },
    // Llama 3.1 8B in its Q4_K_M mix: rows of 4,096 and 14,336 values, where the kernels tuned
    // on Gemma's 640-1,152-wide rows must still reach bandwidth.
    Case {
        name: "8b ffn_gate+up normed",
        ty: GgmlType::Q4_K,
        rows: 14336,
        row_len: 4096,
        product: Product::Gated { normed: true },
    },
    Case {
        name: "8b ffn_gate+up",
        ty: GgmlType::Q4_K,
        rows: 14336,
        row_len: 4096,
        product: Product::Gated { normed: false },
    },
    Case {
        name: "8b ffn_down q6_k",
        ty: GgmlType::Q6_K,
        rows: 4096,
        row_len: 14336,
        product: Product::Plain,
    },
    Case {
        name: "8b ffn_down q4_k",
        ty: GgmlType::Q4_K,
        rows: 4096,
        row_len: 14336,
        product: Product::Plain,
    },
    Case { name: "8b attn_output", ty: GgmlType::Q4_K, rows: 4096, row_len: 4096, product: Product::Plain },
    Case {
        name: "8b ffn_gate+up q8",
        ty: GgmlType::Q4_K,
        rows: 14336,
        row_len: 4096,
        product: Product::GatedQ8,
    },
    Case {
        name: "8b ffn_down q6_k q8",
        ty: GgmlType::Q6_K,
        rows: 4096,
        row_len: 14336,
        product: Product::PlainQ8,
    },
    Case {
        name: "8b ffn_down q4_k q8",
        ty: GgmlType::Q4_K,
        rows: 4096,
        row_len: 14336,
        product: Product::PlainQ8,
    },
    Case {
        name: "8b attn_output q8",
        ty: GgmlType::Q4_K,
        rows: 4096,
        row_len: 4096,
        product: Product::PlainQ8,
    },
    // The Q6_K lm heads of Llama 3.2 1B and Qwen2.5 1.5B (rows of 2,048 and 1,536 values).
    Case {
        name: "1b lm_head slice q6_k q8",
        ty: GgmlType::Q6_K,
        rows: 32768,
        row_len: 2048,
        product: Product::PlainQ8,
    },
    Case {
        name: "1.5b lm_head slice q6_k q8",
        ty: GgmlType::Q6_K,
        rows: 32768,
        row_len: 1536,
        product: Product::PlainQ8,
    },
    Case {
        name: "4b ffn_down q6_k q8",
        ty: GgmlType::Q6_K,
        rows: 2560,
        row_len: 9728,
        product: Product::PlainQ8,
    },
    Case {
        name: "4b ffn_down q4_k q8",
        ty: GgmlType::Q4_K,
        rows: 2560,
        row_len: 9728,
        product: Product::PlainQ8,
    },
    Case {
        name: "4b attn_output q8",
        ty: GgmlType::Q4_K,
        rows: 2560,
        row_len: 4096,
        product: Product::PlainQ8,
    },
    Case {
        name: "4b ffn_gate+up q8",
        ty: GgmlType::Q4_K,
        rows: 9728,
        row_len: 2560,
        product: Product::GatedQ8,
    },
    Case {
        name: "3b ffn_down q6_k q8",
        ty: GgmlType::Q6_K,
        rows: 3072,
        row_len: 8192,
        product: Product::PlainQ8,
    },
    Case {
        name: "3b attn_output q8",
        ty: GgmlType::Q4_K,
        rows: 3072,
        row_len: 3072,
        product: Product::PlainQ8,
    },
    Case {
        name: "3b ffn_down q4_k q8",
        ty: GgmlType::Q4_K,
        rows: 3072,
        row_len: 8192,
        product: Product::PlainQ8,
    },
    Case {
        name: "3b ffn_down iq4_xs q8",
        ty: GgmlType::IQ4_XS,
        rows: 3072,
        row_len: 8192,
        product: Product::PlainQ8,
    },
    Case {
        name: "3b attn_output iq4_xs q8",
        ty: GgmlType::IQ4_XS,
        rows: 3072,
        row_len: 3072,
        product: Product::PlainQ8,
    },
    Case { name: "3b attn_qkv q8", ty: GgmlType::Q4_K, rows: 5120, row_len: 3072, product: Product::PlainQ8 },
    Case {
        name: "3b attn_qkv iq4_xs q8",
        ty: GgmlType::IQ4_XS,
        rows: 5120,
        row_len: 3072,
        product: Product::PlainQ8,
    },
    Case {
        name: "3b ffn_gate+up q8",
        ty: GgmlType::Q4_K,
        rows: 8192,
        row_len: 3072,
        product: Product::GatedQ8,
    },
    Case {
        name: "3b ffn_gate+up iq4_xs q8",
        ty: GgmlType::IQ4_XS,
        rows: 8192,
        row_len: 3072,
        product: Product::GatedQ8,
    },
    Case {
        name: "1.5b ffn_down q6_k q8",
        ty: GgmlType::Q6_K,
        rows: 1536,
        row_len: 8960,
        product: Product::PlainQ8,
    },
    Case {
        name: "1.5b ffn_down q4_k q8",
        ty: GgmlType::Q4_K,
        rows: 1536,
        row_len: 8960,
        product: Product::PlainQ8,
    },
    Case {
        name: "4b attn_v q6_k q8",
        ty: GgmlType::Q6_K,
        rows: 1024,
        row_len: 2560,
        product: Product::PlainQ8,
    },
    Case { name: "8b quantize 4096", ty: GgmlType::Q8_0, rows: 1, row_len: 4096, product: Product::Quantize },
    Case {
        name: "8b quantize 14336",
        ty: GgmlType::Q8_0,
        rows: 1,
        row_len: 14336,
        product: Product::Quantize,
    },
    Case {
        name: "8b attn_qkv normed",
        ty: GgmlType::Q4_K,
        rows: 6144,
        row_len: 4096,
        product: Product::NormedStack(&[4096, 1024, 1024]),
    },
    Case {
        name: "8b lm_head slice q6_k",
        ty: GgmlType::Q6_K,
        rows: 32768,
        row_len: 4096,
        product: Product::Plain,
    },
    Case {
        name: "270m ffn_gate+up normed",
        ty: GgmlType::Q5_0,
        rows: 2048,
        row_len: 640,
        product: Product::Gated { normed: true },
    },
    Case {
        name: "270m ffn_down q6_k",
        ty: GgmlType::Q6_K,
        rows: 640,
        row_len: 2048,
        product: Product::Plain,
    },
    Case {
        name: "270m attn_qkv normed",
        ty: GgmlType::Q5_0,
        rows: 1536,
        row_len: 640,
        product: Product::NormedStack(&[1024, 256, 256]),
    },
];

struct Options {
    chain: usize,
    repeats: usize,
    filter: Option<String>,
}

fn options() -> Options {
    let mut options = Options { chain: 200, repeats: 7, filter: None };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--chain" => options.chain = value().parse().expect("--chain N"),
            "--repeats" => options.repeats = value().parse().expect("--repeats N"),
            "--filter" => options.filter = Some(value()),
            // cargo bench passes --bench.
            _ => {}
        }
    }
    options
}

fn row(ctx: &GpuContext, label: &str, values: &[f32]) -> GpuTensor {
    GpuTensor::from_f32(ctx, label, values.len() as u32, values)
}

fn zeroed_row(ctx: &GpuContext, label: &str, width: u64) -> GpuTensor {
    GpuTensor::zeroed(ctx, label, 1, width as u32, Element::F32)
}

/// A decode step's vectors: an input, a residual stream, norms around 1.
struct Vectors {
    input: GpuTensor,
    norm: GpuTensor,
    stream_in: GpuTensor,
    stream_out: GpuTensor,
    output: GpuTensor,
    outputs: Vec<GpuTensor>,
    q8: Q8Vector,
}

impl Vectors {
    fn new(ctx: &GpuContext, case: &Case) -> Self {
        let n = case.row_len as usize;
        let ramp: Vec<f32> = (0..n).map(|i| ((i % 17) as f32 - 8.0) * 0.05).collect();
        let outputs = match case.product {
            Product::NormedStack(parts) => {
                parts.iter().map(|&rows| zeroed_row(ctx, "output part", rows)).collect()
            }
            _ => Vec::new(),
        };
        Self {
            input: row(ctx, "input", &ramp),
            norm: row(ctx, "norm", &vec![1.0; n]),
            stream_in: row(ctx, "stream in", &ramp),
            stream_out: zeroed_row(ctx, "stream out", case.row_len),
            output: zeroed_row(ctx, "output", case.rows),
            outputs,
            q8: Q8Vector::new(ctx, "input", case.row_len as u32),
        }
    }

    fn normed(&self) -> MatvecInput<'_> {
        let residual = Some(ResidualStream {
            stream_in: &self.stream_in,
            stream_out: Some(&self.stream_out),
            post_norm: Some(&self.norm),
        });
        MatvecInput::Normed(NormedInput { source: &self.input, norm: &self.norm, residual, eps: 1e-6 })
    }
}

/// One dispatch of `case`, recorded `chain` times.
fn record(ctx: &GpuContext, case: &Case, vectors: &Vectors, chain: usize) -> OpList {
    let mut ops = OpList::new();
    let bytes = |rows: u64| random_quantized(case.ty, case.row_len as usize, rows as usize, 7);
    match case.product {
        Product::Plain => {
            let w = GpuMatrix::upload(ctx, case.name, case.ty, case.row_len, case.rows, &bytes(case.rows))
                .expect("upload");
            for _ in 0..chain {
                record_matvec(ctx, &mut ops, case.name, &w, &vectors.input, &vectors.output).expect("record");
            }
        }
        Product::NormedStack(parts) => {
            let data: Vec<Vec<u8>> = parts.iter().map(|&rows| bytes(rows)).collect();
            let named: Vec<(&str, u64, &[u8])> =
                parts.iter().zip(&data).map(|(&rows, data)| ("part", rows, data.as_slice())).collect();
            let stack = StackedMatrix::upload(ctx, case.name, case.ty, case.row_len, &named).expect("upload");
            let outputs: Vec<&GpuTensor> = vectors.outputs.iter().collect();
            for _ in 0..chain {
                record_stacked_matvec(ctx, &mut ops, case.name, &stack, vectors.normed(), &outputs, None)
                    .expect("record");
            }
        }
        Product::Quantize => {
            for _ in 0..chain {
                record_quantize_q8(ctx, &mut ops, case.name, &vectors.input, &vectors.q8).expect("record");
            }
        }
        Product::PlainQ8 => {
            let w = GpuMatrix::upload(ctx, case.name, case.ty, case.row_len, case.rows, &bytes(case.rows))
                .expect("upload");
            record_quantize_q8(ctx, &mut ops, case.name, &vectors.input, &vectors.q8).expect("record");
            for _ in 0..chain {
                record_matvec_of(ctx, &mut ops, case.name, &w, MatvecInput::Q8(&vectors.q8), &vectors.output)
                    .expect("record");
            }
        }
        Product::Gated { .. } | Product::GatedQ8 => {
            let (gate, up) = (bytes(case.rows), bytes(case.rows));
            let stack = StackedMatrix::upload(
                ctx,
                case.name,
                case.ty,
                case.row_len,
                &[("gate", case.rows, &gate), ("up", case.rows, &up)],
            )
            .expect("upload");
            let input = match case.product {
                Product::Gated { normed: true } => vectors.normed(),
                Product::GatedQ8 => {
                    record_quantize_q8(ctx, &mut ops, case.name, &vectors.input, &vectors.q8)
                        .expect("record");
                    MatvecInput::Q8(&vectors.q8)
                }
                _ => MatvecInput::Vector(&vectors.input),
            };
            for _ in 0..chain {
                record_gated_matvec(
                    ctx,
                    &mut ops,
                    case.name,
                    &stack,
                    input,
                    &vectors.output,
                    Activation::GeluTanh,
                )
                .expect("record");
            }
        }
    }
    ops
}

fn weight_bytes(case: &Case) -> u64 {
    let rows = match case.product {
        Product::Gated { .. } | Product::GatedQ8 => 2 * case.rows,
        Product::Quantize => return case.row_len * 4,
        _ => case.rows,
    };
    rows * case.row_len / case.ty.block_len() as u64 * case.ty.block_bytes() as u64
}

/// Seconds for one submit of `ops` and the wait for it.
fn time_submit(ctx: &GpuContext, ops: &OpList) -> f64 {
    let start = Instant::now();
    let mut encoder =
        ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bench") });
    ops.encode(&mut encoder, 1, None);
    let submission = ctx.queue.submit([encoder.finish()]);
    ctx.device
        .poll(wgpu::PollType::Wait { submission_index: Some(submission), timeout: None })
        .expect("poll");
    start.elapsed().as_secs_f64()
}

fn main() {
    let options = options();
    let ctx: Arc<GpuContext> = GpuContext::new(&GpuOptions::from_env()).expect("a wgpu adapter");
    eprintln!("{}", ctx.describe());
    for case in CASES {
        if options.filter.as_ref().is_some_and(|filter| !case.name.contains(filter.as_str())) {
            continue;
        }
        let vectors = Vectors::new(&ctx, case);
        let ops = record(&ctx, case, &vectors, options.chain);
        time_submit(&ctx, &ops);
        let mut seconds: Vec<f64> = (0..options.repeats).map(|_| time_submit(&ctx, &ops)).collect();
        seconds.sort_by(f64::total_cmp);
        let per_dispatch = seconds[seconds.len() / 2] / options.chain as f64;
        let bytes = weight_bytes(case);
        println!(
            "{}",
            serde_json::json!({
                "case": case.name,
                "type": case.ty.name(),
                "rows": case.rows,
                "row_len": case.row_len,
                "dispatches_per_case": ops.len() / options.chain,
                "weight_bytes": bytes,
                "microseconds_per_dispatch": per_dispatch * 1e6,
                "weight_gb_per_second": bytes as f64 / per_dispatch / 1e9,
            })
        );
    }
}
