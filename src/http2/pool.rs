//! The memory nghttp2 allocates for one session, kept for reuse.
//!
//! For every request nghttp2 allocates and frees four small blocks: the
//! stream, the outbound HEADERS item, its copy of the header fields and a
//! decoded header value. Against a fast server that was a twentieth of a
//! client's CPU per request with glibc's allocator (h2load links
//! jemalloc). A session is used by one thread at a time, so its blocks can
//! go back on free lists of their size class, without locks: after the
//! first streams every allocation is a pop and every free a push.
//!
//! What a pool holds is bounded by the most the session had allocated at
//! once (nghttp2 bounds that: streams, header lists), and given back when
//! the session ends. Blocks larger than the largest class go to the
//! system allocator each time.

use std::alloc::{self, Layout};
use std::ffi::c_void;
use std::ptr;

use libnghttp2_sys as ng;

/// Size classes are multiples of this, which is also every block's
/// alignment (as malloc's on x86-64 and aarch64).
const GRAIN: usize = 16;
/// The largest pooled block: a stream, a HEADERS item and a header list of
/// a few hundred bytes fit with room.
const LARGEST: usize = 4096;
const CLASSES: usize = LARGEST / GRAIN;
/// Each block starts with a header of one grain: its class, and for a
/// block the pool does not keep, its size.
const HEADER: usize = GRAIN;
/// The class of a block the pool does not keep.
const UNPOOLED: usize = usize::MAX;

/// A block's header, [`HEADER`] bytes before the pointer nghttp2 gets.
#[repr(C, align(16))]
struct Header {
    class: usize,
    /// The bytes nghttp2 may use (for an unpooled block, what it asked).
    size: usize,
}

/// Free blocks of one session, by size class. A free block's first bytes
/// (after its header) hold the next free block of its class.
pub struct Pool {
    free: [*mut u8; CLASSES],
}

impl Pool {
    pub fn new() -> Pool {
        Pool { free: [ptr::null_mut(); CLASSES] }
    }

    /// The allocator for a session whose memory is `pool`.
    ///
    /// SAFETY (callers): `pool` outlives the session (and every block it
    /// holds is freed through the returned functions), and is used by one
    /// thread at a time, with no reference to it alive while nghttp2 runs.
    pub unsafe fn allocator(pool: *mut Pool) -> ng::nghttp2_mem {
        ng::nghttp2_mem {
            mem_user_data: pool.cast(),
            malloc: Some(pool_malloc),
            free: Some(pool_free),
            calloc: Some(pool_calloc),
            realloc: Some(pool_realloc),
        }
    }

    /// A block of at least `size` bytes, or null when memory ran out.
    fn allocate(&mut self, size: usize) -> *mut u8 {
        let Some(class) = class_of(size) else {
            return unpooled(size);
        };
        let head = self.free[class];
        if !head.is_null() {
            // SAFETY: a free block of this class holds the next one's
            // pointer in its first bytes (written in `release`).
            self.free[class] = unsafe { head.cast::<*mut u8>().read() };
            return head;
        }
        let capacity = (class + 1) * GRAIN;
        // SAFETY: a layout of non-zero size.
        let block = unsafe { alloc::alloc(block_layout(capacity)) };
        if block.is_null() {
            return block;
        }
        // SAFETY: the block is HEADER + capacity bytes, aligned for Header.
        unsafe {
            block.cast::<Header>().write(Header { class, size: capacity });
            block.add(HEADER)
        }
    }

    /// Takes back a block from [`Pool::allocate`].
    ///
    /// SAFETY (callers): `data` came from `allocate` of this pool and is
    /// not used again.
    unsafe fn release(&mut self, data: *mut u8) {
        let header = &*data.sub(HEADER).cast::<Header>();
        if header.class == UNPOOLED {
            alloc::dealloc(data.sub(HEADER), block_layout(header.size));
            return;
        }
        data.cast::<*mut u8>().write(self.free[header.class]);
        self.free[header.class] = data;
    }
}

impl Default for Pool {
    fn default() -> Pool {
        Pool::new()
    }
}

impl Drop for Pool {
    /// Gives the free blocks back (the session, gone first, freed all of
    /// its own).
    fn drop(&mut self) {
        for (class, head) in self.free.iter().enumerate() {
            let layout = block_layout((class + 1) * GRAIN);
            let mut block = *head;
            while !block.is_null() {
                // SAFETY: a free block of this class, as in `allocate`.
                unsafe {
                    let next = block.cast::<*mut u8>().read();
                    alloc::dealloc(block.sub(HEADER), layout);
                    block = next;
                }
            }
        }
    }
}

/// The class of a block of `size` bytes, None when too large to pool.
fn class_of(size: usize) -> Option<usize> {
    (size <= LARGEST).then(|| size.max(1).div_ceil(GRAIN) - 1)
}

/// The layout of a block with `capacity` bytes after its header. Callers
/// keep `capacity` below `isize::MAX - HEADER` ([`unpooled`] checks).
fn block_layout(capacity: usize) -> Layout {
    Layout::from_size_align(HEADER + capacity, GRAIN).expect("a size the pool checked")
}

/// A block of `size` bytes the pool does not keep, or null.
fn unpooled(size: usize) -> *mut u8 {
    if size > isize::MAX as usize - 2 * HEADER {
        return ptr::null_mut();
    }
    // SAFETY: a layout of non-zero size.
    let block = unsafe { alloc::alloc(block_layout(size)) };
    if block.is_null() {
        return block;
    }
    // SAFETY: as in `Pool::allocate`.
    unsafe {
        block.cast::<Header>().write(Header { class: UNPOOLED, size });
        block.add(HEADER)
    }
}

/// The bytes a block of [`Pool::allocate`] may hold.
///
/// SAFETY (callers): `data` came from `allocate` and is not freed.
unsafe fn capacity_of(data: *mut u8) -> usize {
    (*data.sub(HEADER).cast::<Header>()).size
}

// ----- nghttp2's allocator functions ---------------------------------------
//
// SAFETY (all): `user` is the pool given to `Pool::allocator`, alive and
// not otherwise referenced while nghttp2 calls them. They do not unwind.

unsafe fn pool<'a>(user: *mut c_void) -> &'a mut Pool {
    &mut *user.cast::<Pool>()
}

unsafe extern "C" fn pool_malloc(size: usize, user: *mut c_void) -> *mut c_void {
    pool(user).allocate(size).cast()
}

unsafe extern "C" fn pool_free(data: *mut c_void, user: *mut c_void) {
    if !data.is_null() {
        pool(user).release(data.cast());
    }
}

unsafe extern "C" fn pool_calloc(count: usize, size: usize, user: *mut c_void) -> *mut c_void {
    let Some(total) = count.checked_mul(size) else { return ptr::null_mut() };
    let data = pool(user).allocate(total);
    if !data.is_null() {
        data.write_bytes(0, total);
    }
    data.cast()
}

/// As C's realloc: a block that still fits stays where it is.
unsafe extern "C" fn pool_realloc(
    data: *mut c_void,
    size: usize,
    user: *mut c_void,
) -> *mut c_void {
    let pool = pool(user);
    let data = data.cast::<u8>();
    if data.is_null() {
        return pool.allocate(size).cast();
    }
    let capacity = capacity_of(data);
    if size <= capacity && class_of(size) == class_of(capacity) {
        return data.cast();
    }
    let moved = pool.allocate(size);
    if moved.is_null() {
        return moved.cast(); // the old block stays, as C's realloc leaves it
    }
    ptr::copy_nonoverlapping(data, moved, capacity.min(size));
    pool.release(data);
    moved.cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Allocates through the functions nghttp2 calls.
    struct Session {
        pool: *mut Pool,
        mem: ng::nghttp2_mem,
    }

    impl Session {
        fn new() -> Session {
            let pool = Box::into_raw(Box::new(Pool::new()));
            // SAFETY: the pool lives until drop, after every block is freed.
            Session { pool, mem: unsafe { Pool::allocator(pool) } }
        }

        fn malloc(&self, size: usize) -> *mut u8 {
            unsafe { (self.mem.malloc.unwrap())(size, self.mem.mem_user_data).cast() }
        }

        fn free(&self, data: *mut u8) {
            unsafe { (self.mem.free.unwrap())(data.cast(), self.mem.mem_user_data) }
        }

        fn calloc(&self, count: usize, size: usize) -> *mut u8 {
            unsafe { (self.mem.calloc.unwrap())(count, size, self.mem.mem_user_data).cast() }
        }

        fn realloc(&self, data: *mut u8, size: usize) -> *mut u8 {
            unsafe { (self.mem.realloc.unwrap())(data.cast(), size, self.mem.mem_user_data).cast() }
        }
    }

    impl Drop for Session {
        fn drop(&mut self) {
            drop(unsafe { Box::from_raw(self.pool) });
        }
    }

    fn fill(data: *mut u8, len: usize, byte: u8) {
        unsafe { data.write_bytes(byte, len) }
    }

    fn bytes(data: *mut u8, len: usize) -> Vec<u8> {
        unsafe { std::slice::from_raw_parts(data, len).to_vec() }
    }

    #[test]
    fn a_freed_block_is_given_again_for_its_size_class() {
        let session = Session::new();
        let a = session.malloc(200);
        fill(a, 200, 1);
        session.free(a);
        // 193..=208 bytes share a class: the same block comes back.
        assert_eq!(session.malloc(208), a);
        let other = session.malloc(300);
        assert_ne!(other, a);
        session.free(a);
        session.free(other);
    }

    #[test]
    fn blocks_are_aligned_and_do_not_overlap() {
        let session = Session::new();
        let blocks: Vec<(*mut u8, usize)> =
            (0..200).map(|i| (session.malloc(i * 7), i * 7)).collect();
        for (i, &(block, len)) in blocks.iter().enumerate() {
            assert_eq!(block as usize % GRAIN, 0);
            fill(block, len, i as u8);
        }
        for (i, &(block, len)) in blocks.iter().enumerate() {
            assert!(bytes(block, len).iter().all(|&b| b == i as u8), "block {i} was overwritten");
        }
        blocks.into_iter().for_each(|(block, _)| session.free(block));
    }

    #[test]
    fn large_blocks_are_not_pooled_and_still_work() {
        let session = Session::new();
        let big = session.malloc(LARGEST + 1);
        fill(big, LARGEST + 1, 9);
        assert_eq!(bytes(big, LARGEST + 1), vec![9; LARGEST + 1]);
        session.free(big);
        assert!(session.malloc(usize::MAX).is_null());
        assert!(session.calloc(usize::MAX / 2, 3).is_null());
    }

    #[test]
    fn calloc_zeroes_a_reused_block() {
        let session = Session::new();
        let a = session.malloc(64);
        fill(a, 64, 0xff);
        session.free(a);
        let b = session.calloc(8, 8);
        assert_eq!(b, a);
        assert_eq!(bytes(b, 64), vec![0; 64]);
        session.free(b);
    }

    #[test]
    fn realloc_keeps_the_contents_growing_and_shrinking() {
        let session = Session::new();
        let a = session.realloc(ptr::null_mut(), 10);
        fill(a, 10, 5);
        let grown = session.realloc(a, 5000);
        assert_eq!(bytes(grown, 10), vec![5; 10]);
        fill(grown, 5000, 6);
        let shrunk = session.realloc(grown, 100);
        assert_eq!(bytes(shrunk, 100), vec![6; 100]);
        // Within its class a block stays where it is.
        assert_eq!(session.realloc(shrunk, 110), shrunk);
        session.free(shrunk);
        session.free(ptr::null_mut());
    }

    #[test]
    fn zero_bytes_is_a_block_too() {
        let session = Session::new();
        let a = session.malloc(0);
        assert!(!a.is_null());
        session.free(a);
    }
}
