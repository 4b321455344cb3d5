//! A render target that refuses to grow past a size, so a template cannot write without end.

use std::io;

pub(super) struct CappedOutput {
    bytes: Vec<u8>,
    limit: usize,
    overflowed: bool,
}

impl CappedOutput {
    pub(super) fn new(limit: usize) -> Self {
        CappedOutput { bytes: Vec::new(), limit, overflowed: false }
    }

    /// Whether a write was refused for going past the limit.
    pub(super) fn overflowed(&self) -> bool {
        self.overflowed
    }

    pub(super) fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

impl io::Write for CappedOutput {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.bytes.len() + buf.len() > self.limit {
            self.overflowed = true;
            return Err(io::Error::other("the rendered chat is over its size limit"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
