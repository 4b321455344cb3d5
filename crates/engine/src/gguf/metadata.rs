use std::{collections::HashMap, fmt};

use serde::{
    de::{SeqAccess, Visitor},
    ser::SerializeSeq,
    Deserialize, Deserializer, Serialize, Serializer,
};

use super::GgufError;

/// One metadata value, as typed in the file. In JSON (an RDRR manifest) it is written with its
/// type, `{"u32": 30}`, `{"string": "…"}`, `{"array": {"string": […]}}`, so a round trip keeps
/// every type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetadataValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    F32(f32),
    F64(f64),
    Bool(bool),
    String(String),
    Array(MetadataArray),
}

/// A typed metadata array. Homogeneous element vectors keep 262,144-entry vocabularies
/// down to a handful of allocations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetadataArray {
    U8(Vec<u8>),
    I8(Vec<i8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    U32(Vec<u32>),
    I32(Vec<i32>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
    String(StringArray),
    Array(Vec<MetadataArray>),
}

/// An array of strings stored in one buffer, so a vocabulary costs two allocations, not one per token.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StringArray {
    text: String,
    ends: Vec<usize>,
}

impl StringArray {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, s: &str) {
        self.text.push_str(s);
        self.ends.push(self.text.len());
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn get(&self, index: usize) -> Option<&str> {
        let end = *self.ends.get(index)?;
        let start = if index == 0 { 0 } else { self.ends[index - 1] };
        Some(&self.text[start..end])
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        (0..self.len()).map(|i| self.get(i).expect("index below len"))
    }

    pub(crate) fn reserve(&mut self, strings: usize, bytes: usize) {
        self.ends.reserve(strings);
        self.text.reserve(bytes);
    }
}

impl<S: AsRef<str>> FromIterator<S> for StringArray {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        let mut array = StringArray::new();
        for s in iter {
            array.push(s.as_ref());
        }
        array
    }
}

/// A plain list of strings in JSON.
impl Serialize for StringArray {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.len()))?;
        for s in self.iter() {
            seq.serialize_element(s)?;
        }
        seq.end()
    }
}

/// Each string goes into the one buffer as it is read.
impl<'de> Deserialize<'de> for StringArray {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StringsVisitor;

        impl<'de> Visitor<'de> for StringsVisitor {
            type Value = StringArray;

            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("a list of strings")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StringArray, A::Error> {
                let mut array = StringArray::new();
                while let Some(s) = seq.next_element::<String>()? {
                    array.push(&s);
                }
                Ok(array)
            }
        }

        deserializer.deserialize_seq(StringsVisitor)
    }
}

/// GGUF's value type ids (gguf_type in gguf.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueType {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
}

impl ValueType {
    const ALL: [ValueType; 13] = {
        use ValueType::*;
        [U8, I8, U16, I16, U32, I32, F32, Bool, String, Array, U64, I64, F64]
    };

    pub(crate) fn from_id(id: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|&ty| ty as u32 == id)
    }

    /// The fewest bytes one value of this type can take in the file; bounds counts before allocating.
    pub(crate) fn min_encoded_len(self) -> u64 {
        use ValueType::*;
        match self {
            U8 | I8 | Bool => 1,
            U16 | I16 => 2,
            U32 | I32 | F32 => 4,
            U64 | I64 | F64 | String => 8,
            Array => 12,
        }
    }
}

impl MetadataValue {
    pub(crate) fn value_type(&self) -> ValueType {
        match self {
            MetadataValue::U8(_) => ValueType::U8,
            MetadataValue::I8(_) => ValueType::I8,
            MetadataValue::U16(_) => ValueType::U16,
            MetadataValue::I16(_) => ValueType::I16,
            MetadataValue::U32(_) => ValueType::U32,
            MetadataValue::I32(_) => ValueType::I32,
            MetadataValue::U64(_) => ValueType::U64,
            MetadataValue::I64(_) => ValueType::I64,
            MetadataValue::F32(_) => ValueType::F32,
            MetadataValue::F64(_) => ValueType::F64,
            MetadataValue::Bool(_) => ValueType::Bool,
            MetadataValue::String(_) => ValueType::String,
            MetadataValue::Array(_) => ValueType::Array,
        }
    }

    /// A short description of the value's type for error messages, e.g. `u32` or `array of string`.
    pub fn type_description(&self) -> String {
        match self {
            MetadataValue::Array(array) => array.type_description(),
            other => type_name(other.value_type()).to_string(),
        }
    }

    /// The value as an i128 if it is an integer, so every integer type converts without loss.
    fn as_integer(&self) -> Option<i128> {
        Some(match *self {
            MetadataValue::U8(v) => v.into(),
            MetadataValue::I8(v) => v.into(),
            MetadataValue::U16(v) => v.into(),
            MetadataValue::I16(v) => v.into(),
            MetadataValue::U32(v) => v.into(),
            MetadataValue::I32(v) => v.into(),
            MetadataValue::U64(v) => v.into(),
            MetadataValue::I64(v) => v.into(),
            _ => return None,
        })
    }
}

impl MetadataArray {
    pub(crate) fn element_type(&self) -> ValueType {
        match self {
            MetadataArray::U8(_) => ValueType::U8,
            MetadataArray::I8(_) => ValueType::I8,
            MetadataArray::U16(_) => ValueType::U16,
            MetadataArray::I16(_) => ValueType::I16,
            MetadataArray::U32(_) => ValueType::U32,
            MetadataArray::I32(_) => ValueType::I32,
            MetadataArray::U64(_) => ValueType::U64,
            MetadataArray::I64(_) => ValueType::I64,
            MetadataArray::F32(_) => ValueType::F32,
            MetadataArray::F64(_) => ValueType::F64,
            MetadataArray::Bool(_) => ValueType::Bool,
            MetadataArray::String(_) => ValueType::String,
            MetadataArray::Array(_) => ValueType::Array,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            MetadataArray::U8(v) => v.len(),
            MetadataArray::I8(v) => v.len(),
            MetadataArray::U16(v) => v.len(),
            MetadataArray::I16(v) => v.len(),
            MetadataArray::U32(v) => v.len(),
            MetadataArray::I32(v) => v.len(),
            MetadataArray::U64(v) => v.len(),
            MetadataArray::I64(v) => v.len(),
            MetadataArray::F32(v) => v.len(),
            MetadataArray::F64(v) => v.len(),
            MetadataArray::Bool(v) => v.len(),
            MetadataArray::String(v) => v.len(),
            MetadataArray::Array(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn type_description(&self) -> String {
        format!("array of {}", type_name(self.element_type()))
    }

    /// Every element as an i128, if this is an array of integers.
    fn integers(&self) -> Option<Vec<i128>> {
        fn widen<T: Copy + Into<i128>>(v: &[T]) -> Vec<i128> {
            v.iter().map(|&x| x.into()).collect()
        }
        Some(match self {
            MetadataArray::U8(v) => widen(v),
            MetadataArray::I8(v) => widen(v),
            MetadataArray::U16(v) => widen(v),
            MetadataArray::I16(v) => widen(v),
            MetadataArray::U32(v) => widen(v),
            MetadataArray::I32(v) => widen(v),
            MetadataArray::U64(v) => widen(v),
            MetadataArray::I64(v) => widen(v),
            _ => return None,
        })
    }
}

fn type_name(ty: ValueType) -> &'static str {
    match ty {
        ValueType::U8 => "u8",
        ValueType::I8 => "i8",
        ValueType::U16 => "u16",
        ValueType::I16 => "i16",
        ValueType::U32 => "u32",
        ValueType::I32 => "i32",
        ValueType::U64 => "u64",
        ValueType::I64 => "i64",
        ValueType::F32 => "f32",
        ValueType::F64 => "f64",
        ValueType::Bool => "bool",
        ValueType::String => "string",
        ValueType::Array => "array",
    }
}

impl From<u8> for MetadataValue {
    fn from(v: u8) -> Self {
        MetadataValue::U8(v)
    }
}
impl From<i8> for MetadataValue {
    fn from(v: i8) -> Self {
        MetadataValue::I8(v)
    }
}
impl From<u16> for MetadataValue {
    fn from(v: u16) -> Self {
        MetadataValue::U16(v)
    }
}
impl From<i16> for MetadataValue {
    fn from(v: i16) -> Self {
        MetadataValue::I16(v)
    }
}
impl From<u32> for MetadataValue {
    fn from(v: u32) -> Self {
        MetadataValue::U32(v)
    }
}
impl From<i32> for MetadataValue {
    fn from(v: i32) -> Self {
        MetadataValue::I32(v)
    }
}
impl From<u64> for MetadataValue {
    fn from(v: u64) -> Self {
        MetadataValue::U64(v)
    }
}
impl From<i64> for MetadataValue {
    fn from(v: i64) -> Self {
        MetadataValue::I64(v)
    }
}
impl From<f32> for MetadataValue {
    fn from(v: f32) -> Self {
        MetadataValue::F32(v)
    }
}
impl From<f64> for MetadataValue {
    fn from(v: f64) -> Self {
        MetadataValue::F64(v)
    }
}
impl From<bool> for MetadataValue {
    fn from(v: bool) -> Self {
        MetadataValue::Bool(v)
    }
}
impl From<&str> for MetadataValue {
    fn from(v: &str) -> Self {
        MetadataValue::String(v.to_string())
    }
}
impl From<String> for MetadataValue {
    fn from(v: String) -> Self {
        MetadataValue::String(v)
    }
}
impl From<MetadataArray> for MetadataValue {
    fn from(v: MetadataArray) -> Self {
        MetadataValue::Array(v)
    }
}
impl From<StringArray> for MetadataValue {
    fn from(v: StringArray) -> Self {
        MetadataValue::Array(MetadataArray::String(v))
    }
}
impl From<Vec<f32>> for MetadataValue {
    fn from(v: Vec<f32>) -> Self {
        MetadataValue::Array(MetadataArray::F32(v))
    }
}
impl From<Vec<i32>> for MetadataValue {
    fn from(v: Vec<i32>) -> Self {
        MetadataValue::Array(MetadataArray::I32(v))
    }
}

/// A GGUF file's key/value metadata, in file order, with keys unique.
#[derive(Debug, Clone, Default)]
pub struct Metadata {
    entries: Vec<(String, MetadataValue)>,
    index: HashMap<String, usize>,
}

impl Metadata {
    /// Adds an entry; gives the value back if the key is already present.
    pub(crate) fn insert_new(&mut self, key: String, value: MetadataValue) -> Result<(), String> {
        if self.index.contains_key(&key) {
            return Err(key);
        }
        self.index.insert(key.clone(), self.entries.len());
        self.entries.push((key, value));
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, key: &str) -> Option<&MetadataValue> {
        self.index.get(key).map(|&i| &self.entries[i].1)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &MetadataValue)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    fn type_error(key: &str, expected: &'static str, found: &MetadataValue) -> GgufError {
        GgufError::MetadataType { key: key.to_string(), expected, found: found.type_description() }
    }

    fn get_integer<T: TryFrom<i128>>(
        &self,
        key: &str,
        expected: &'static str,
    ) -> Result<Option<T>, GgufError> {
        let Some(value) = self.get(key) else {
            return Ok(None);
        };
        let converted = value.as_integer().and_then(|v| T::try_from(v).ok());
        match converted {
            Some(v) => Ok(Some(v)),
            None => Err(match value.as_integer() {
                Some(v) => GgufError::MetadataType {
                    key: key.to_string(),
                    expected,
                    found: format!("{} {v} (out of range)", value.type_description()),
                },
                None => Self::type_error(key, expected, value),
            }),
        }
    }

    /// Any integer type whose value fits in a u32.
    pub fn get_u32(&self, key: &str) -> Result<Option<u32>, GgufError> {
        self.get_integer(key, "an integer fitting u32")
    }

    /// Any integer type whose value fits in a u64.
    pub fn get_u64(&self, key: &str) -> Result<Option<u64>, GgufError> {
        self.get_integer(key, "an integer fitting u64")
    }

    /// Any integer type whose value fits in an i64.
    pub fn get_i64(&self, key: &str) -> Result<Option<i64>, GgufError> {
        self.get_integer(key, "an integer fitting i64")
    }

    /// F32, or F64 narrowed to f32.
    pub fn get_f32(&self, key: &str) -> Result<Option<f32>, GgufError> {
        match self.get(key) {
            None => Ok(None),
            Some(MetadataValue::F32(v)) => Ok(Some(*v)),
            Some(MetadataValue::F64(v)) => Ok(Some(*v as f32)),
            Some(other) => Err(Self::type_error(key, "f32 or f64", other)),
        }
    }

    pub fn get_bool(&self, key: &str) -> Result<Option<bool>, GgufError> {
        match self.get(key) {
            None => Ok(None),
            Some(MetadataValue::Bool(v)) => Ok(Some(*v)),
            Some(other) => Err(Self::type_error(key, "bool", other)),
        }
    }

    pub fn get_str(&self, key: &str) -> Result<Option<&str>, GgufError> {
        match self.get(key) {
            None => Ok(None),
            Some(MetadataValue::String(v)) => Ok(Some(v)),
            Some(other) => Err(Self::type_error(key, "string", other)),
        }
    }

    pub fn get_array(&self, key: &str) -> Result<Option<&MetadataArray>, GgufError> {
        match self.get(key) {
            None => Ok(None),
            Some(MetadataValue::Array(v)) => Ok(Some(v)),
            Some(other) => Err(Self::type_error(key, "array", other)),
        }
    }

    /// The string array itself, without building a Vec of slices.
    pub fn get_string_array(&self, key: &str) -> Result<Option<&StringArray>, GgufError> {
        match self.get(key) {
            None => Ok(None),
            Some(MetadataValue::Array(MetadataArray::String(v))) => Ok(Some(v)),
            Some(other) => Err(Self::type_error(key, "array of string", other)),
        }
    }

    pub fn get_str_array(&self, key: &str) -> Result<Option<Vec<&str>>, GgufError> {
        Ok(self.get_string_array(key)?.map(|a| a.iter().collect()))
    }

    /// An f32 array, or an f64 array narrowed to f32.
    pub fn get_f32_array(&self, key: &str) -> Result<Option<Vec<f32>>, GgufError> {
        match self.get(key) {
            None => Ok(None),
            Some(MetadataValue::Array(MetadataArray::F32(v))) => Ok(Some(v.clone())),
            Some(MetadataValue::Array(MetadataArray::F64(v))) => {
                Ok(Some(v.iter().map(|&x| x as f32).collect()))
            }
            Some(other) => Err(Self::type_error(key, "array of f32 or f64", other)),
        }
    }

    /// An array of any integer type whose every value fits in an i32.
    pub fn get_i32_array(&self, key: &str) -> Result<Option<Vec<i32>>, GgufError> {
        const EXPECTED: &str = "array of integers fitting i32";
        match self.get(key) {
            None => Ok(None),
            Some(MetadataValue::Array(MetadataArray::I32(v))) => Ok(Some(v.clone())),
            Some(value @ MetadataValue::Array(array)) => {
                let integers = array.integers().ok_or_else(|| Self::type_error(key, EXPECTED, value))?;
                integers.into_iter().map(i32::try_from).collect::<Result<Vec<i32>, _>>().map(Some).map_err(
                    |_| GgufError::MetadataType {
                        key: key.to_string(),
                        expected: EXPECTED,
                        found: format!("{} with out-of-range values", value.type_description()),
                    },
                )
            }
            Some(other) => Err(Self::type_error(key, EXPECTED, other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Metadata {
        let mut m = Metadata::default();
        for (k, v) in [
            ("u8", MetadataValue::U8(7)),
            ("neg", MetadataValue::I32(-1)),
            ("big", MetadataValue::U64(1 << 40)),
            ("f64", MetadataValue::F64(0.5)),
            ("name", MetadataValue::from("gemma")),
            ("tokens", MetadataValue::from(StringArray::from_iter(["a", "", "ccc"]))),
            ("types", MetadataValue::Array(MetadataArray::U8(vec![1, 2]))),
            ("wide", MetadataValue::Array(MetadataArray::I64(vec![1 << 40]))),
        ] {
            m.insert_new(k.to_string(), v).unwrap();
        }
        m
    }

    #[test]
    fn integer_getters_accept_any_fitting_integer() {
        let m = sample();
        assert_eq!(m.get_u32("u8").unwrap(), Some(7));
        assert_eq!(m.get_u64("big").unwrap(), Some(1 << 40));
        assert_eq!(m.get_i64("neg").unwrap(), Some(-1));
        assert_eq!(m.get_u32("absent").unwrap(), None);
        let err = m.get_u32("neg").unwrap_err();
        assert_eq!(
            err.to_string(),
            "metadata key 'neg' is i32 -1 (out of range), expected an integer fitting u32"
        );
        assert!(matches!(m.get_u32("big"), Err(GgufError::MetadataType { .. })));
        assert!(matches!(m.get_u32("name"), Err(GgufError::MetadataType { key, .. }) if key == "name"));
    }

    #[test]
    fn typed_getters_check_types() {
        let m = sample();
        assert_eq!(m.get_f32("f64").unwrap(), Some(0.5));
        assert_eq!(m.get_str("name").unwrap(), Some("gemma"));
        assert_eq!(m.get_str_array("tokens").unwrap(), Some(vec!["a", "", "ccc"]));
        assert_eq!(m.get_i32_array("types").unwrap(), Some(vec![1, 2]));
        assert!(m.get_i32_array("wide").is_err());
        let err = m.get_str("tokens").unwrap_err();
        assert_eq!(err.to_string(), "metadata key 'tokens' is array of string, expected string");
        assert!(m.get_bool("u8").is_err());
        assert!(m.get_f32_array("types").is_err());
    }

    /// The shape RDRR manifests (format version 1) store metadata in.
    #[test]
    fn values_are_written_to_json_with_their_types() {
        let tokens = MetadataValue::from(StringArray::from_iter(["a", "\"b\""]));
        let json = serde_json::to_string(&tokens).unwrap();
        assert_eq!(json, r#"{"array":{"string":["a","\"b\""]}}"#);
        assert_eq!(serde_json::from_str::<MetadataValue>(&json).unwrap(), tokens);
        let nested = MetadataValue::Array(MetadataArray::Array(vec![MetadataArray::U8(vec![1])]));
        assert_eq!(serde_json::to_string(&nested).unwrap(), r#"{"array":{"array":[{"u8":[1]}]}}"#);
        assert_eq!(serde_json::to_string(&MetadataValue::F32(0.5)).unwrap(), r#"{"f32":0.5}"#);
    }

    #[test]
    fn keys_keep_file_order_and_stay_unique() {
        let mut m = sample();
        let keys: Vec<&str> = m.iter().map(|(k, _)| k).collect();
        assert_eq!(keys[..3], ["u8", "neg", "big"]);
        assert_eq!(m.insert_new("u8".into(), MetadataValue::U8(1)), Err("u8".to_string()));
    }
}
