use super::test_models::{model_path, GEMMA, SMOLLM2};
use super::*;

#[test]
fn reads_gemma3() {
    let Some(path) = model_path(GEMMA) else { return };
    let file = GgufFile::open(&path).unwrap();
    assert_eq!(file.version(), 3);
    assert_eq!(file.architecture().unwrap(), "gemma3");
    assert_eq!(file.tensors().len(), 236);
    let embd = file.tensor("token_embd.weight").unwrap();
    assert_eq!(embd.ggml_type, GgmlType::Q8_0);
    assert_eq!(embd.dims, [640, 262144]);
    assert_eq!(embd.n_bytes, 262144 * 20 * 34);
    let meta = file.metadata();
    assert_eq!(meta.get_u32("gemma3.block_count").unwrap(), Some(18));
    assert_eq!(meta.get_u32("gemma3.embedding_length").unwrap(), Some(640));
    assert_eq!(meta.get_string_array("tokenizer.ggml.tokens").unwrap().unwrap().len(), 262144);
    assert_eq!(meta.get_f32_array("tokenizer.ggml.scores").unwrap().unwrap().len(), 262144);
    assert_eq!(meta.get_i32_array("tokenizer.ggml.token_type").unwrap().unwrap().len(), 262144);
    let last = file.tensors().iter().max_by_key(|t| t.offset).unwrap();
    assert!(last.offset + last.n_bytes <= file.file_size());
}

#[test]
fn reads_smollm2() {
    let Some(path) = model_path(SMOLLM2) else { return };
    let file = GgufFile::open(&path).unwrap();
    assert_eq!(file.architecture().unwrap(), "llama");
    assert_eq!(file.tensors().len(), 272);
    let tokens = file.metadata().get_str_array("tokenizer.ggml.tokens").unwrap().unwrap();
    assert_eq!(tokens.len(), 49152);
}

#[test]
fn open_names_missing_path() {
    let err = GgufFile::open(std::path::Path::new("/nonexistent/model.gguf")).unwrap_err();
    assert!(err.to_string().starts_with("/nonexistent/model.gguf: "), "{err}");
}
