//! The shared window a call's tensors pass through: a memfd, sized once and sparse (pages exist only
//! where a request has touched them), mapped by the server and by its kernel process.

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

impl Window {
    /// A new window of `len` bytes (rounded up to a page), backed by a fresh memfd.
    pub fn create(len: usize) -> std::io::Result<Window> {
        let len = len.max(1).next_multiple_of(4096);
        // SAFETY: a NUL-terminated name and valid flags.
        let raw = unsafe { libc::memfd_create(c"spork-kernel".as_ptr(), libc::MFD_CLOEXEC) };
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
        Window::map(fd, len)
    }

    /// Maps `fd` (a window made by [`Window::create`], inherited by a kernel process) of `len` bytes.
    pub fn map(fd: OwnedFd, len: usize) -> std::io::Result<Window> {
        // SAFETY: a fresh shared mapping of a descriptor we own; checked for failure below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
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

    /// The address of `offset`, for a kernel's tensor (inside: checked by the caller's `slice_mut`).
    pub fn ptr_at(&mut self, offset: usize) -> *mut u8 {
        // SAFETY: callers pass offsets they checked with `slice_mut`.
        unsafe { self.ptr.add(offset.min(self.len)) }
    }

    /// Gives back the pages past [`KEEP`] after a call that used `used` bytes.
    pub fn trim(&self, used: usize) {
        if used <= KEEP {
            return;
        }
        let (Ok(at), Ok(len)) = (libc::off_t::try_from(KEEP), libc::off_t::try_from(self.len - KEEP)) else {
            return;
        };
        // SAFETY: a valid descriptor; punching a hole only zeroes the range (the size stays).
        unsafe {
            libc::fallocate(
                self.fd.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                at,
                len,
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
        let mut a = Window::create(16 << 20).unwrap();
        // SAFETY: a duplicate of a's descriptor.
        let dup = unsafe { OwnedFd::from_raw_fd(libc::dup(a.raw_fd())) };
        let b = Window::map(dup, a.len()).unwrap();
        a.slice_mut(100, 3).unwrap().copy_from_slice(b"abc");
        assert_eq!(b.slice(100, 3).unwrap(), b"abc");
        assert!(a.slice(a.len() - 1, 2).is_none(), "past the end");
        a.slice_mut(KEEP + 10, 1).unwrap()[0] = 7;
        a.trim(KEEP + 11);
        assert_eq!(b.slice(KEEP + 10, 1).unwrap(), &[0], "the hole reads as zeros");
        assert_eq!(b.slice(100, 3).unwrap(), b"abc", "below KEEP is kept");
    }
}
