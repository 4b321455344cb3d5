// The non-linear table of IQ4_NL and IQ4_XS (ggml's kvalues_iq4nl: -127, -104, -83, -65,
// -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113), each entry plus 128 as one byte, four
// to a word, for quant_value_table.wgsl.
const IQ4_TABLE = vec4<u32>(0x3f2d1801u, 0x766a5d4fu, 0xa6998d81u, 0xf1d9c5b5u);
