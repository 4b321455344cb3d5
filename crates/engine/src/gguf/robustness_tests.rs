use super::*;

fn small_file() -> Vec<u8> {
    let mut w = GgufWriter::new();
    w.add_metadata("general.architecture", "llama").unwrap();
    w.add_metadata("llama.block_count", 2u32).unwrap();
    w.add_tensor("a", &[4, 2], GgmlType::F32, vec![1u8; 32]).unwrap();
    w.add_tensor("b", &[32], GgmlType::Q8_0, vec![2u8; 34]).unwrap();
    w.to_bytes().unwrap()
}

#[test]
fn written_file_reads_back() {
    let file = GgufFile::from_bytes(small_file()).unwrap();
    assert_eq!(file.version(), 3);
    assert_eq!(file.architecture().unwrap(), "llama");
    assert_eq!(file.tensors().len(), 2);
    let b = file.tensor("b").unwrap();
    assert_eq!(b.offset % 32, 0);
    assert_eq!(file.tensor_data(b), &[2u8; 34][..]);
}
