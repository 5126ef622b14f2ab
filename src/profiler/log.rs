//! A thread's append-only record log ([`Log`]): written by its thread with plain stores,
//! read by [`super::stop`] from another thread.
//!
//! Records go in fixed-size chunks that never move. The writer fills the current chunk
//! through its own [`Cursor`] and publishes each record with one Release store of the
//! count (a plain `mov` on x86-64: no locked instruction per record); the chunk lock is
//! taken once per chunk, to file a full chunk and start the next. A reader takes the lock,
//! moves the full chunks out and copies the current chunk's published records: the writer
//! only writes slots past the published count, so the two never touch the same record.
//! Records written after a reader's snapshot stay in the log, unread, and are dropped
//! with it.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Where a chunk comes from and goes back to (the events' pool reuses warm memory).
pub(super) trait Chunks<T> {
    fn fresh(&self) -> Vec<T>;
}

/// An append-only log of `T`s, in chunks of `CHUNK` records.
pub(super) struct Log<T, const CHUNK: usize> {
    chunks: Mutex<Inner<T>>,
    /// how many records of `Inner::current` are written (its `len` stays 0 while it is
    /// current: the records are written through the cursor's raw pointer)
    published: AtomicUsize,
}

struct Inner<T> {
    full: Vec<Vec<T>>,
    current: Vec<T>,
}

/// The writer's end of a [`Log`]: where the next record goes. Kept by the writing thread
/// (in its thread-local state), never shared.
pub(super) struct Cursor<T> {
    base: *mut T,
    len: usize,
}

impl<T> Cursor<T> {
    /// A cursor of no log: its first push files nothing and starts a chunk.
    pub(super) const fn new() -> Cursor<T> {
        Cursor {
            base: std::ptr::null_mut(),
            len: usize::MAX,
        }
    }
}

impl<T: Clone, const CHUNK: usize> Log<T, CHUNK> {
    /// An empty log (its writer starts with a [`Cursor::new`]).
    pub(super) fn new() -> Log<T, CHUNK> {
        Log {
            chunks: Mutex::new(Inner {
                full: Vec::new(),
                current: Vec::new(),
            }),
            published: AtomicUsize::new(0),
        }
    }

    /// Appends `record`.
    ///
    /// # Safety
    /// Only one thread writes a log, always with the same `cursor` (which starts as
    /// [`Cursor::new`]): the cursor's slots are written without synchronization.
    #[inline]
    pub(super) unsafe fn push(&self, cursor: &mut Cursor<T>, record: T, pool: &impl Chunks<T>) {
        // SAFETY: the caller's guarantee; the slot is initialized here.
        unsafe { self.push_with(cursor, pool, |slot| slot.write(record)) }
    }

    /// Appends the record that `write` writes into the slot it is given (a record can
    /// then be moved into the log in one copy, where `push` of a value just taken from
    /// elsewhere copies it twice).
    ///
    /// # Safety
    /// `write` must initialize the slot. Only one thread writes a log, always with the
    /// same `cursor`.
    #[inline]
    pub(super) unsafe fn push_with(
        &self,
        cursor: &mut Cursor<T>,
        pool: &impl Chunks<T>,
        write: impl FnOnce(*mut T),
    ) {
        if cursor.len >= CHUNK {
            self.next_chunk(cursor, pool);
        }
        // SAFETY: `base` points at the current chunk's `CHUNK` slots (`next_chunk`), and
        // slot `len` is past the published count, so no reader looks at it; the caller
        // initializes it.
        write(unsafe { cursor.base.add(cursor.len) });
        cursor.len += 1;
        self.published.store(cursor.len, Ordering::Release);
    }

    #[cold]
    #[inline(never)]
    fn next_chunk(&self, cursor: &mut Cursor<T>, pool: &impl Chunks<T>) {
        let mut fresh = pool.fresh();
        fresh.clear();
        fresh.reserve_exact(CHUNK);
        let mut inner = self.chunks.lock();
        if !cursor.base.is_null() {
            let mut full = std::mem::replace(&mut inner.current, fresh);
            // SAFETY: the cursor wrote every slot of the chunk it filled.
            unsafe { full.set_len(cursor.len) };
            inner.full.push(full);
        } else {
            inner.current = fresh;
        }
        self.published.store(0, Ordering::Relaxed);
        cursor.base = inner.current.as_mut_ptr();
        cursor.len = 0;
    }

    /// Everything published so far, in order: the full chunks (moved out of the log) and
    /// a copy of the current chunk's published records. The writer may go on writing
    /// meanwhile.
    pub(super) fn take(&self) -> (Vec<Vec<T>>, Vec<T>) {
        let mut inner = self.chunks.lock();
        let full = std::mem::take(&mut inner.full);
        // (under the lock: the writer cannot switch chunks while this reads)
        let n = self.published.load(Ordering::Acquire);
        // SAFETY: the first `n` slots are written (Acquire pairs with the writer's Release
        // of `n`) and the writer no longer touches them; `as_ptr` makes no reference to
        // the slots the writer may be writing.
        let written = unsafe { std::slice::from_raw_parts(inner.current.as_ptr(), n) };
        (full, written.to_vec())
    }
}

impl<T, const CHUNK: usize> Drop for Log<T, CHUNK> {
    fn drop(&mut self) {
        // no writer is left (it holds the log while it writes): drop what it wrote
        let n = *self.published.get_mut();
        let inner = self.chunks.get_mut();
        if inner.current.capacity() >= n {
            // SAFETY: the first `n` slots of the current chunk are written.
            unsafe { inner.current.set_len(n) };
        }
    }
}

// SAFETY: the current chunk's slots are written by the cursor's thread only, past the
// published count; readers read below it, under the lock (see the module comment).
unsafe impl<T: Send, const CHUNK: usize> Sync for Log<T, CHUNK> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    struct Fresh;
    impl<T> Chunks<T> for Fresh {
        fn fresh(&self) -> Vec<T> {
            Vec::new()
        }
    }

    #[test]
    fn a_reader_sees_each_published_record_once_and_in_order() {
        // 8 writers, each log read concurrently from this thread while it is written,
        // many trials: every record is seen once, in order, whole
        const N: u64 = 20_000;
        for _ in 0..20 {
            // (a boxed copy of each number: a torn or doubly dropped record would show)
            type Record = (u64, Box<u64>);
            let logs: Vec<Arc<Log<Record, 64>>> = (0..8).map(|_| Arc::new(Log::new())).collect();
            let writers: Vec<_> = logs
                .iter()
                .map(|log| {
                    let log = log.clone();
                    std::thread::spawn(move || {
                        let mut cursor = Cursor::new();
                        for i in 0..N {
                            // SAFETY: this thread alone writes this log, with this cursor.
                            unsafe { log.push(&mut cursor, (i, Box::new(i)), &Fresh) };
                        }
                    })
                })
                .collect();
            let mut seen = vec![Vec::new(); logs.len()];
            let read = |last: bool, seen: &mut Vec<Vec<u64>>| {
                for (log, seen) in logs.iter().zip(seen.iter_mut()) {
                    // full chunks are moved out once; the current one is copied each time
                    let (full, current) = log.take();
                    for c in &full {
                        assert_eq!(c.len(), 64);
                        for r in c {
                            assert_eq!(r.0, *r.1);
                            seen.push(r.0);
                        }
                    }
                    assert!(current.len() <= 64);
                    for (k, r) in current.iter().enumerate() {
                        assert_eq!(r.0, *r.1);
                        assert_eq!(r.0, seen.len() as u64 + k as u64);
                    }
                    if last {
                        seen.extend(current.iter().map(|r| r.0));
                    }
                }
            };
            while !writers.iter().all(|w| w.is_finished()) {
                read(false, &mut seen);
            }
            for w in writers {
                w.join().unwrap();
            }
            read(true, &mut seen);
            for seen in &seen {
                assert_eq!(seen.len() as u64, N);
                assert!(seen.iter().enumerate().all(|(k, &v)| v == k as u64));
            }
        }
    }
}
