//! Dequantizes real tensors of the two default models and compares with values computed by
//! the reference Python implementation, produced once with the `gguf` package 0.19.0 (PyPI)
//! and numpy:
//!
//! ```python
//! from gguf import GGUFReader
//! from gguf.quants import dequantize
//! t = {t.name: t for t in GGUFReader(path).tensors}[name]
//! v = dequantize(np.asarray(t.data).view(np.uint8).reshape(-1), t.tensor_type).reshape(-1).astype(np.float32)
//! sum = v.astype(np.float64).sum(); abs_sum = np.abs(v.astype(np.float64)).sum()
//! samples = [(i, v[i]) for i in (0, 1, 17, 31, 32, 100, 255, 256, 1000, 4097, len(v)//2 + 3, len(v)-1)]
//! ```
//!
//! Both compute every value in f32 with the same operation order as ggml, so samples must
//! match exactly; sums only differ by f64 summation order. The samples are Python's exact
//! decimal renderings of f32 values, hence longer than f32 needs.
#![allow(clippy::excessive_precision)]

use super::dequantize;
use crate::gguf::test_models::{model_path, GEMMA, SMOLLM2};
use crate::gguf::{GgmlType, GgufFile};

struct Expected {
    model: &'static str,
    tensor: &'static str,
    ggml_type: GgmlType,
    sum: f64,
    abs_sum: f64,
    samples: &'static [(usize, f32)],
}

const EXPECTED: &[Expected] = &[
    Expected {
        model: GEMMA,
        tensor: "blk.0.attn_q.weight",
        ggml_type: GgmlType::Q5_0,
        sum: -51.693368911743164,
        abs_sum: 17306.232625961304,
        samples: &[
            (0, -0.0037841796875),
            (1, 0.007568359375),
            (17, 0.0113525390625),
            (31, 0.00946044921875),
            (32, 0.00396728515625),
            (100, -0.02197265625),
            (255, -0.022003173828125),
            (256, -0.0079345703125),
            (1000, 0.027618408203125),
            (4097, 0.0),
            (327683, -0.0140380859375),
            (655359, 0.01312255859375),
        ],
    },
    Expected {
        model: GEMMA,
        tensor: "blk.0.attn_output.weight",
        ggml_type: GgmlType::Q4_K,
        sum: -1.8330761790275574,
        abs_sum: 18307.241332113743,
        samples: &[
            (0, -0.015705108642578125),
            (1, 0.04966926574707031),
            (17, 0.038773536682128906),
            (31, -0.05928802490234375),
            (32, 0.023014068603515625),
            (100, 0.01300811767578125),
            (255, 0.038992881774902344),
            (256, -0.023250937461853027),
            (1000, 0.023328781127929688),
            (4097, 0.02297687530517578),
            (327683, -0.07247734069824219),
            (655359, -0.011407613754272461),
        ],
    },
    Expected {
        model: GEMMA,
        tensor: "blk.0.ffn_down.weight",
        ggml_type: GgmlType::Q6_K,
        sum: 6.480193614959717,
        abs_sum: 21698.13850414753,
        samples: &[
            (0, 0.0052117109298706055),
            (1, 0.02171546220779419),
            (17, 0.003798365592956543),
            (31, -0.015193462371826172),
            (32, -0.014545679092407227),
            (100, 0.0297391414642334),
            (255, 0.018108487129211426),
            (256, -0.01659393310546875),
            (1000, -0.036128997802734375),
            (4097, -0.0017273426055908203),
            (655363, -0.0234832763671875),
            (1310719, -0.00941401720046997),
        ],
    },
    Expected {
        model: GEMMA,
        tensor: "blk.0.attn_v.weight",
        ggml_type: GgmlType::Q8_0,
        sum: 1.5544872283935547,
        abs_sum: 5098.4886202812195,
        samples: &[
            (0, 0.0060882568359375),
            (1, -0.03957366943359375),
            (17, -0.05175018310546875),
            (31, 0.0487060546875),
            (32, 0.020972728729248047),
            (100, 0.01989459991455078),
            (255, -0.03188800811767578),
            (256, -0.06503772735595703),
            (1000, 0.14848899841308594),
            (4097, -0.015568733215332031),
            (81923, -0.0064601898193359375),
            (163839, -0.05296611785888672),
        ],
    },
    Expected {
        model: SMOLLM2,
        tensor: "blk.0.attn_q.weight",
        ggml_type: GgmlType::Q4_1,
        sum: 59.22322082519531,
        abs_sum: 63395.39872741699,
        samples: &[
            (0, -0.0963134765625),
            (1, 0.1573486328125),
            (17, 0.2841796875),
            (31, -0.0963134765625),
            (32, -0.34619140625),
            (100, 0.214111328125),
            (255, 0.6903076171875),
            (256, 0.0103759765625),
            (1000, -0.138427734375),
            (4097, -0.34478759765625),
            (165891, -0.28125),
            (331775, -0.255859375),
        ],
    },
];

fn check_model(model: &str) {
    let Some(path) = model_path(model) else { return };
    let file = GgufFile::open(&path).unwrap();
    for expected in EXPECTED.iter().filter(|e| e.model == model) {
        let info = file.tensor(expected.tensor).unwrap();
        assert_eq!(info.ggml_type, expected.ggml_type, "{}", expected.tensor);
        let values = dequantize(info.ggml_type, &file.tensor_data(info)).unwrap();
        assert_eq!(values.len() as u64, info.n_elements());
        for &(index, value) in expected.samples {
            assert_eq!(values[index], value, "{} value {index}", expected.tensor);
        }
        let sum: f64 = values.iter().map(|&v| f64::from(v)).sum();
        let abs_sum: f64 = values.iter().map(|&v| f64::from(v).abs()).sum();
        let tolerance = 1e-9 * expected.abs_sum;
        assert!(
            (sum - expected.sum).abs() <= tolerance,
            "{}: sum {sum} vs {}",
            expected.tensor,
            expected.sum
        );
        assert!(
            (abs_sum - expected.abs_sum).abs() <= tolerance,
            "{}: abs sum {abs_sum} vs {}",
            expected.tensor,
            expected.abs_sum
        );
    }
}

#[test]
fn gemma_q5_0_q4_k_q6_k_q8_0_tensors_match_reference() {
    check_model(GEMMA);
}

#[test]
fn smollm2_q4_1_tensor_matches_reference() {
    check_model(SMOLLM2);
}
