//! A loaded model's sessions, each with its own KV cache, so that clients taking turns (two
//! conversations in the app, several connections to the server) each find their own prefix
//! still cached instead of evicting one another's.

use std::sync::Arc;

use doppler_engine::{gpu::MemoryKind, GenerateError, LoadedModel, Session};

/// Sessions a model keeps at most unless told otherwise.
pub const DEFAULT_SESSIONS_PER_MODEL: usize = 4;

/// A new session is made only while the GPU reports at least this many times its size free,
/// so the KV caches of idle clients never crowd out the model or the rest of the system.
const FREE_MEMORY_FACTOR: u64 = 2;

pub(crate) struct SessionPool {
    sessions: Vec<PooledSession>,
    max_sessions: usize,
    /// Counts uses, so the least recently used session is the one to give up.
    clock: u64,
}

struct PooledSession {
    session: Session,
    last_used: u64,
}

impl SessionPool {
    pub fn new(first: Session, max_sessions: usize) -> SessionPool {
        SessionPool { sessions: vec![PooledSession { session: first, last_used: 0 }], max_sessions, clock: 0 }
    }

    pub fn model(&self) -> &Arc<LoadedModel> {
        self.sessions[0].session.model()
    }

    /// The session to run `prompt` on: the one whose cache shares the longest prefix with it.
    /// Where that would throw away most of what the session caches (another client's
    /// conversation), a new session is made while the pool has room and the GPU the memory;
    /// otherwise the best one is taken, or with nothing shared the least recently used.
    pub fn session_for(&mut self, prompt: &[u32]) -> Result<&mut Session, GenerateError> {
        self.clock += 1;
        let shared = |pooled: &PooledSession| common_prefix(pooled.session.cached_tokens(), prompt);
        let (best, best_shared) = self
            .sessions
            .iter()
            .enumerate()
            .map(|(index, pooled)| (index, shared(pooled)))
            .max_by_key(|&(index, shared)| (shared, self.sessions[index].last_used))
            .expect("a pool holds a session");
        let cached = self.sessions[best].session.cached_tokens().len();
        let continues = cached == 0 || best_shared * 2 >= cached;
        let index = if continues {
            best
        } else if self.sessions.len() < self.max_sessions && self.has_memory_for_another() {
            let session = self.model().new_session()?;
            tracing::debug!(
                sessions = self.sessions.len() + 1,
                "a new session for a prompt no cache continues"
            );
            self.sessions.push(PooledSession { session, last_used: 0 });
            self.sessions.len() - 1
        } else if best_shared > 0 {
            best
        } else {
            self.least_recently_used()
        };
        let pooled = &mut self.sessions[index];
        pooled.last_used = self.clock;
        Ok(&mut pooled.session)
    }

    fn least_recently_used(&self) -> usize {
        (0..self.sessions.len())
            .min_by_key(|&index| self.sessions[index].last_used)
            .expect("a pool holds a session")
    }

    /// Whether the GPU (or, for unified and CPU adapters, the host) reports room for another
    /// session; never where it reports nothing.
    fn has_memory_for_another(&self) -> bool {
        let bytes = self.sessions[0].session.gpu_bytes();
        let memory = self.model().gpu().memory();
        let available = match memory.memory_kind {
            MemoryKind::Dedicated => memory.device_available,
            MemoryKind::Unified => memory.device_available.or(Some(memory.host_available)),
        };
        available.is_some_and(|available| available >= bytes.saturating_mul(FREE_MEMORY_FACTOR))
    }
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::common_prefix;

    #[test]
    fn common_prefix_counts_equal_leading_tokens() {
        assert_eq!(common_prefix(&[1, 2, 3], &[1, 2, 4, 5]), 2);
        assert_eq!(common_prefix(&[], &[1]), 0);
        assert_eq!(common_prefix(&[1, 2], &[1, 2]), 2);
    }
}
