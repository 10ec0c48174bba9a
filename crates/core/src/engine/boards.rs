//! Boards shared by several engines (one pool per served kernel or per application): the policy's
//! [`Books`] behind a lock, and one [`BoardShare`] handle per engine. The live server's pools each run
//! on a thread of their own; the evaluator's shared replay runs its engines on one.
//!
//! The rule is the policy's ([`crate::policy::arbitrate`]); this only makes its books reachable from
//! every engine (the grants show in each pool's `Status`, read from its engine).

use std::sync::{Arc, Mutex, PoisonError};

use crate::policy::arbitrate::{Bid, BoardShare, Books, Sharing};

/// Boards shared by `pools` pools.
#[derive(Clone, Debug)]
pub struct SharedBoards {
    books: Arc<Mutex<Books>>,
}

impl SharedBoards {
    /// `boards` boards for `pools` pools, shared by `sharing`.
    pub fn new(boards: u32, pools: usize, sharing: Sharing) -> SharedBoards {
        SharedBoards { books: Arc::new(Mutex::new(Books::new(boards, pools, sharing))) }
    }

    /// The machine now has `boards` boards (worker hosts joined or left): later claims see it.
    pub fn set_boards(&self, boards: u32) {
        self.books.lock().unwrap_or_else(PoisonError::into_inner).set_boards(boards);
    }

    /// A pool joins at run time (a model loaded): its index for [`SharedBoards::handle`].
    pub fn add_pool(&self) -> usize {
        self.books.lock().unwrap_or_else(PoisonError::into_inner).add_pool()
    }

    /// Pool `pool` has stopped: its boards go to the others.
    pub fn retire(&self, pool: usize) {
        self.books.lock().unwrap_or_else(PoisonError::into_inner).retire(pool);
    }

    /// Pool `pool`'s handle, for its engine.
    pub fn handle(&self, pool: usize) -> Box<dyn BoardShare> {
        Box::new(Handle { boards: self.clone(), pool })
    }
}

/// One pool's access to the shared books.
struct Handle {
    boards: SharedBoards,
    pool: usize,
}

impl BoardShare for Handle {
    fn claim(&mut self, bid: Bid) -> u32 {
        // A pool that panicked mid-claim left the books consistent (a claim writes whole values), so a
        // poisoned lock is still usable.
        self.boards.books.lock().unwrap_or_else(PoisonError::into_inner).claim(self.pool, bid)
    }
}
