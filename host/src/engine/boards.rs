//! Boards shared by several engines (one pool per served kernel or per application): the policy's
//! [`Books`] behind a lock, and one [`BoardShare`] handle per engine. The live server's pools each run
//! on a thread of their own; the evaluator's shared replay runs its engines on one.
//!
//! The rule is the policy's ([`crate::policy::arbitrate`]); this only makes its books reachable from
//! every engine and keeps what was granted.

use std::sync::{Arc, Mutex, PoisonError};

use crate::policy::arbitrate::{Bid, BoardShare, Books, Sharing};

/// Boards shared by `pools` pools.
#[derive(Clone, Debug)]
pub struct SharedBoards {
    books: Arc<Mutex<Books>>,
    /// Per pool: its latest bid's want and the cap it was granted.
    last: Arc<Mutex<Vec<(u32, u32)>>>,
}

impl SharedBoards {
    /// `boards` boards for `pools` pools, shared by `sharing`.
    pub fn new(boards: u32, pools: usize, sharing: Sharing) -> SharedBoards {
        SharedBoards {
            books: Arc::new(Mutex::new(Books::new(boards, pools, sharing))),
            last: Arc::new(Mutex::new(vec![(0, 0); pools])),
        }
    }

    /// The boards shared.
    pub fn boards(&self) -> u32 {
        self.books.lock().unwrap_or_else(PoisonError::into_inner).boards()
    }

    /// Pool `pool`'s handle, for its engine.
    pub fn handle(&self, pool: usize) -> Box<dyn BoardShare> {
        Box::new(Handle { boards: self.clone(), pool })
    }

    /// Per pool: what it last wanted, and the cap it was granted.
    pub fn grants(&self) -> Vec<(u32, u32)> {
        self.last.lock().unwrap_or_else(PoisonError::into_inner).clone()
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
        let cap = self.boards.books.lock().unwrap_or_else(PoisonError::into_inner).claim(self.pool, bid);
        if let Some(slot) = self.boards.last.lock().unwrap_or_else(PoisonError::into_inner).get_mut(self.pool)
        {
            *slot = (bid.want, cap);
        }
        cap
    }
}
