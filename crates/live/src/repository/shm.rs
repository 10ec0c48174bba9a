//! Shared memory between the server and its kernel processes: a memfd, sized once and sparse (pages
//! exist only where a request has touched them), mapped by both. Its size is sealed, so a kernel
//! process cannot shrink it under the server's mapping (which would fault the server); a memfd for
//! the server's writing only is sealed against any other writer too.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Calls past this many bytes give their pages back afterwards, so one large request does not keep
/// its size resident in both processes.
const KEEP: usize = 8 << 20;

/// A mapped window.
pub struct Window {
    fd: OwnedFd,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain shared memory; access is through `&self`/`&mut self` borrows, and
// the one other writer is the kernel process, which writes only while the server waits for it.
unsafe impl Send for Window {}

/// Who may write a window's bytes once it is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writers {
    /// The server and every process it hands the memfd to.
    All,
    /// The server's own mapping only (sealed: a process handed the memfd can map it read-only).
    Server,
}

impl Window {
    /// A new window of `len` bytes (rounded up to a page), backed by a fresh memfd, mapped here to
    /// read and write; its size sealed, and its writing too unless `writers` is [`Writers::All`].
    pub fn create(len: usize, writers: Writers) -> std::io::Result<Window> {
        let len = len.max(1).next_multiple_of(4096);
        // SAFETY: a NUL-terminated name and valid flags.
        let raw = unsafe {
            libc::memfd_create(c"spork-kernel".as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING)
        };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `raw` is a new descriptor this function owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let size = libc::off_t::try_from(len).map_err(|_| std::io::Error::other("window too large"))?;
        // SAFETY: a valid descriptor.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), size) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let window = Window::map(fd, len, true)?;
        let mut seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
        if writers == Writers::Server {
            seals |= libc::F_SEAL_FUTURE_WRITE;
        }
        // SAFETY: a valid descriptor made with MFD_ALLOW_SEALING.
        if unsafe { libc::fcntl(window.raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(window)
    }

    /// Maps `fd` (a window made by [`Window::create`], inherited by a kernel process) of `len`
    /// bytes, to write too if `write`.
    pub fn map(fd: OwnedFd, len: usize, write: bool) -> std::io::Result<Window> {
        let prot = if write { libc::PROT_READ | libc::PROT_WRITE } else { libc::PROT_READ };
        // SAFETY: a fresh shared mapping of a descriptor we own; checked for failure below.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd.as_raw_fd(), 0) };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Window { fd, ptr: ptr.cast(), len })
    }

    /// Its size.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no byte (never: a window is at least a page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its descriptor, for a kernel process to inherit.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The bytes at `offset..offset + len`, if inside.
    pub fn slice(&self, offset: usize, len: usize) -> Option<&[u8]> {
        let end = offset.checked_add(len)?;
        // SAFETY: inside the mapping, which lives as long as `self`.
        (end <= self.len).then(|| unsafe { std::slice::from_raw_parts(self.ptr.add(offset), len) })
    }

    /// The bytes at `offset..offset + len`, to write, if inside.
    pub fn slice_mut(&mut self, offset: usize, len: usize) -> Option<&mut [u8]> {
        let end = offset.checked_add(len)?;
        // SAFETY: as in `slice`, uniquely borrowed.
        (end <= self.len).then(|| unsafe { std::slice::from_raw_parts_mut(self.ptr.add(offset), len) })
    }

    /// The address of `offset..offset + len` for a kernel's tensor, if inside and 8-byte aligned.
    pub fn span(&self, offset: usize, len: usize) -> Option<*mut u8> {
        let inside = offset.checked_add(len).is_some_and(|end| end <= self.len);
        // SAFETY: inside the mapping.
        (inside && offset.is_multiple_of(8)).then(|| unsafe { self.ptr.add(offset) })
    }

    /// Gives back the pages past [`KEEP`] after a call that used `used` bytes.
    pub fn trim(&self, used: usize) {
        if used > KEEP {
            self.punch(KEEP, self.len - KEEP);
        }
    }

    /// Gives back the whole pages inside `offset..offset + len` (they read as zeros after).
    pub fn punch(&self, offset: usize, len: usize) {
        let (start, end) =
            (offset.next_multiple_of(4096), offset.saturating_add(len).min(self.len) / 4096 * 4096);
        let (Ok(at), Ok(n)) =
            (libc::off_t::try_from(start), libc::off_t::try_from(end.saturating_sub(start)))
        else {
            return;
        };
        if n == 0 {
            return;
        }
        // SAFETY: a valid descriptor; punching a hole only zeroes the range (the size stays).
        unsafe {
            libc::fallocate(
                self.fd.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                at,
                n,
            );
        }
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_mappings_of_one_window_see_each_others_writes_and_a_trim_keeps_the_size() {
        let mut a = Window::create(16 << 20, Writers::All).unwrap();
        // SAFETY: a duplicate of a's descriptor.
        let dup = unsafe { OwnedFd::from_raw_fd(libc::dup(a.raw_fd())) };
        let b = Window::map(dup, a.len(), true).unwrap();
        a.slice_mut(100, 3).unwrap().copy_from_slice(b"abc");
        assert_eq!(b.slice(100, 3).unwrap(), b"abc");
        assert!(a.slice(a.len() - 1, 2).is_none(), "past the end");
        a.slice_mut(KEEP + 10, 1).unwrap()[0] = 7;
        a.trim(KEEP + 11);
        assert_eq!(b.slice(KEEP + 10, 1).unwrap(), &[0], "the hole reads as zeros");
        assert_eq!(b.slice(100, 3).unwrap(), b"abc", "below KEEP is kept");
        // SAFETY: a valid descriptor.
        assert_ne!(unsafe { libc::ftruncate(a.raw_fd(), 0) }, 0, "its size is sealed");
    }

    #[test]
    fn a_window_for_the_servers_writing_maps_read_only_elsewhere_and_cannot_be_written_through_its_fd() {
        let mut a = Window::create(1 << 20, Writers::Server).unwrap();
        a.slice_mut(8, 2).unwrap().copy_from_slice(b"ok");
        let dup = || unsafe { OwnedFd::from_raw_fd(libc::dup(a.raw_fd())) };
        assert!(Window::map(dup(), a.len(), true).is_err(), "no second writable mapping");
        let b = Window::map(dup(), a.len(), false).unwrap();
        assert_eq!(b.slice(8, 2).unwrap(), b"ok", "the server's writes show");
        // SAFETY: b's own mapping, made read-only: making it writable must fail.
        let rc = unsafe { libc::mprotect(b.ptr.cast(), b.len, libc::PROT_READ | libc::PROT_WRITE) };
        assert_ne!(rc, 0, "a read-only mapping cannot be made writable");
        // SAFETY: a valid descriptor and buffer.
        let wrote = unsafe { libc::pwrite(a.raw_fd(), b"no".as_ptr().cast(), 2, 8) };
        assert!(wrote < 0, "nor written through the descriptor");
        assert_eq!(b.slice(8, 2).unwrap(), b"ok");
    }
}
