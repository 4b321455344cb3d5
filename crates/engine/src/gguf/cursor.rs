use super::error::{Malformation, Section};

/// A little-endian reader over untrusted bytes: every read is bounds-checked and reports
/// the section and item being read when the bytes run out.
#[derive(Clone)]
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    pub(crate) section: Section,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, pos: 0, section: Section::Header }
    }

    pub(crate) fn position(&self) -> u64 {
        self.pos as u64
    }

    pub(crate) fn remaining(&self) -> u64 {
        (self.bytes.len() - self.pos) as u64
    }

    pub(crate) fn take(&mut self, n: u64, what: &dyn Fn() -> String) -> Result<&'a [u8], Malformation> {
        if n > self.remaining() {
            return Err(Malformation::Truncated {
                section: self.section,
                what: what(),
                offset: self.position(),
                needed: n,
                file_size: self.bytes.len() as u64,
            });
        }
        // n <= remaining, which is a usize, so the cast is lossless.
        let slice = &self.bytes[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self, what: &dyn Fn() -> String) -> Result<[u8; N], Malformation> {
        let bytes = self.take(N as u64, what)?;
        Ok(bytes.try_into().expect("take returned N bytes"))
    }

    pub(crate) fn u8(&mut self, what: &dyn Fn() -> String) -> Result<u8, Malformation> {
        Ok(self.array::<1>(what)?[0])
    }
    pub(crate) fn i8(&mut self, what: &dyn Fn() -> String) -> Result<i8, Malformation> {
        Ok(i8::from_le_bytes(self.array(what)?))
    }
    pub(crate) fn u16(&mut self, what: &dyn Fn() -> String) -> Result<u16, Malformation> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }
    pub(crate) fn i16(&mut self, what: &dyn Fn() -> String) -> Result<i16, Malformation> {
        Ok(i16::from_le_bytes(self.array(what)?))
    }
    pub(crate) fn u32(&mut self, what: &dyn Fn() -> String) -> Result<u32, Malformation> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }
    pub(crate) fn i32(&mut self, what: &dyn Fn() -> String) -> Result<i32, Malformation> {
        Ok(i32::from_le_bytes(self.array(what)?))
    }
    pub(crate) fn u64(&mut self, what: &dyn Fn() -> String) -> Result<u64, Malformation> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }
    pub(crate) fn i64(&mut self, what: &dyn Fn() -> String) -> Result<i64, Malformation> {
        Ok(i64::from_le_bytes(self.array(what)?))
    }
    pub(crate) fn f32(&mut self, what: &dyn Fn() -> String) -> Result<f32, Malformation> {
        Ok(f32::from_le_bytes(self.array(what)?))
    }
    pub(crate) fn f64(&mut self, what: &dyn Fn() -> String) -> Result<f64, Malformation> {
        Ok(f64::from_le_bytes(self.array(what)?))
    }

    /// A GGUF string: u64 byte length, then UTF-8 bytes. The length is checked against the
    /// bytes left before anything is allocated.
    pub(crate) fn str(&mut self, what: &dyn Fn() -> String) -> Result<&'a str, Malformation> {
        let len = self.u64(&|| format!("length of {}", what()))?;
        let start = self.position();
        let bytes = self.take(len, what)?;
        std::str::from_utf8(bytes).map_err(|_| Malformation::InvalidUtf8 {
            section: self.section,
            what: what(),
            offset: start,
        })
    }

    /// Checks a count read from the file against a fixed limit, for counts whose items cost far
    /// more memory once parsed than their few bytes in the file.
    pub(crate) fn check_limit(
        &self,
        count: u64,
        limit: u64,
        what: &dyn Fn() -> String,
    ) -> Result<(), Malformation> {
        if count > limit {
            return Err(Malformation::CountOverLimit { section: self.section, what: what(), count, limit });
        }
        Ok(())
    }

    /// Checks that `count` items of at least `min_item_len` bytes each can fit in what is left,
    /// so a count read from the file can size an allocation.
    pub(crate) fn check_count(
        &self,
        count: u64,
        min_item_len: u64,
        what: &dyn Fn() -> String,
    ) -> Result<usize, Malformation> {
        let fits = count.checked_mul(min_item_len).is_some_and(|n| n <= self.remaining());
        if !fits {
            return Err(Malformation::CountTooLarge {
                section: self.section,
                what: what(),
                count,
                offset: self.position(),
                remaining: self.remaining(),
            });
        }
        // count * min_item_len <= remaining, a usize; min_item_len >= 1 so count fits too.
        Ok(count as usize)
    }
}
