//! A model's shared arenas: memory its requests are decoded into and its kernels write their answers
//! into, mapped by the server and by each of the model's kernel processes, so that a call hands a
//! kernel process offsets instead of copying its tensors in and out. The books (which bytes are
//! whose) live in the server only: a kernel process sees bytes, never the free lists. The inputs'
//! arena is written by the server alone ([`Writers::Server`]): a kernel cannot change a request it
//! is given, so a re-run or a cross-check after it sees the request as the client sent it.

use std::sync::{Arc, Mutex, PoisonError};

use offset_allocator::{Allocation, Allocator};

use super::shm::{Window, Writers};

/// The allocator's unit: a cache line, so every block is 64-byte aligned (the ABI asks for 8).
const UNIT: usize = 64;

/// The most blocks one arena holds at once (the allocator's books are sized to it).
const MAX_BLOCKS: u32 = 4096;

/// A block freed past this offset gives its pages back (in an arena whose owner may), so an arena
/// keeps at most this much resident beyond the blocks in use.
const KEEP: usize = 8 << 20;

/// One shared arena.
pub struct Arena {
    window: Window,
    books: Mutex<Allocator>,
    writers: Writers,
}

// SAFETY: the mapping is shared memory whose bytes are reached only through `Block`s, each owned
// by one tensor; the books are behind a mutex.
unsafe impl Sync for Arena {}

impl std::fmt::Debug for Arena {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Arena({} bytes, {:?} write)", self.window.len(), self.writers)
    }
}

impl Arena {
    /// A new arena of `len` bytes (sparse: pages exist where a block touched them).
    pub fn create(len: usize, writers: Writers) -> std::io::Result<Arc<Arena>> {
        let units =
            u32::try_from(len.div_ceil(UNIT)).map_err(|_| std::io::Error::other("arena too large"))?;
        let window = Window::create(units as usize * UNIT, writers)?;
        let books = Mutex::new(Allocator::with_max_allocs(units, MAX_BLOCKS));
        Ok(Arc::new(Arena { window, books, writers }))
    }

    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.window.len()
    }

    /// Whether it has no byte (never: an arena is at least a page).
    pub fn is_empty(&self) -> bool {
        self.window.is_empty()
    }

    /// Its memfd, for a kernel process to inherit.
    pub fn raw_fd(&self) -> std::os::fd::RawFd {
        self.window.raw_fd()
    }

    /// Who may write its bytes.
    pub fn writers(&self) -> Writers {
        self.writers
    }

    /// A block of `len` zeroed bytes, or `None` when the arena has no room (the caller keeps the
    /// tensor on its own heap).
    pub fn zeroed(self: &Arc<Self>, len: usize) -> Option<Block> {
        let mut b = self.block(len)?;
        b.bytes_mut().fill(0);
        Some(b)
    }

    /// A block holding a copy of `bytes`, or `None` when the arena has no room.
    pub fn copy_of(self: &Arc<Self>, bytes: &[u8]) -> Option<Block> {
        let mut b = self.block(bytes.len())?;
        b.bytes_mut().copy_from_slice(bytes);
        Some(b)
    }

    fn block(self: &Arc<Self>, len: usize) -> Option<Block> {
        let units = u32::try_from(len.div_ceil(UNIT)).ok().filter(|&u| u > 0)?;
        let at = self.books.lock().unwrap_or_else(PoisonError::into_inner).allocate(units)?;
        let offset = at.offset as usize * UNIT;
        self.window.slice(offset, len)?;
        Some(Block { arena: self.clone(), at, offset, len })
    }
}

/// Bytes of an arena owned by one tensor; given back when dropped.
pub struct Block {
    arena: Arc<Arena>,
    at: Allocation,
    offset: usize,
    len: usize,
}

impl Block {
    /// The arena it lies in.
    pub fn arena(&self) -> &Arc<Arena> {
        &self.arena
    }

    /// Its first byte's offset in the arena.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Its bytes.
    pub fn bytes(&self) -> &[u8] {
        self.arena.window.slice(self.offset, self.len).unwrap_or_default()
    }

    /// Its bytes, to write (the server's mapping is writable in every arena).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let Some(ptr) = self.arena.window.span(self.offset, self.len) else { return &mut [] };
        // SAFETY: `offset..offset + len` was checked inside the mapping when the block was made, and
        // the books give those bytes to this block alone, uniquely borrowed here.
        unsafe { std::slice::from_raw_parts_mut(ptr, self.len) }
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        let mut books = self.arena.books.lock().unwrap_or_else(PoisonError::into_inner);
        books.free(self.at);
        let end = self.offset + self.len;
        // Only an arena the kernels write is punched: the sealed one refuses it, and its size is
        // what bounds it.
        if end > KEEP && self.arena.writers == Writers::All {
            let from = self.offset.max(KEEP);
            self.arena.window.punch(from, end - from);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_aligned_apart_zeroed_and_given_back_and_a_full_arena_says_no() {
        let arena = Arena::create(1 << 20, Writers::All).unwrap();
        let mut a = arena.copy_of(&[7; 100]).unwrap();
        let b = arena.zeroed(100).unwrap();
        assert_eq!(a.offset() % UNIT, 0);
        assert_eq!(b.offset() % UNIT, 0);
        assert!(a.offset() + 100 <= b.offset() || b.offset() + 100 <= a.offset(), "apart");
        assert!(b.bytes().iter().all(|&x| x == 0));
        a.bytes_mut()[0] = 9;
        assert_eq!(a.bytes()[..2], [9, 7]);
        assert!(arena.zeroed(2 << 20).is_none(), "past the arena");
        assert!(arena.zeroed(0).is_none(), "an empty tensor needs no block");
        let big = arena.zeroed(900 << 10);
        assert!(big.is_some(), "room left");
        drop(big);
        drop((a, b));
        assert!(arena.zeroed(1 << 20).is_some(), "everything given back");
    }

    #[test]
    fn a_block_freed_past_keep_gives_its_pages_back_and_reads_zero_when_reused() {
        let arena = Arena::create(2 * KEEP, Writers::All).unwrap();
        let low = arena.zeroed(KEEP).unwrap();
        let mut high = arena.zeroed(1 << 20).unwrap();
        high.bytes_mut().fill(5);
        let at = high.offset();
        drop(high);
        assert!(arena.window.slice(at, 1 << 20).unwrap().iter().all(|&x| x == 0), "punched");
        drop(low);
    }
}
