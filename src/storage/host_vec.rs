//! [`HostVec`]: the elements of a host buffer, in memory this crate allocated or in memory
//! another library lent (a NumPy array's, a DLPack producer's).
//!
//! Kernels see a slice either way (`Deref<Target = [T]>`); what differs is only who frees
//! the memory. Our own memory is a `Vec<T>`'s, freed as one; lent memory is never freed
//! here: the [`Lender`] that came with it is dropped instead (releasing the NumPy array,
//! calling the DLPack deleter), exactly once, when the last tensor on it goes.
//!
//! Lent memory is shared with the lender: writes from either side are seen by the other,
//! and nothing orders them (as in torch, which shares NumPy memory the same way). The
//! storage's lock still orders rgrad's own readers and writers.

use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// What keeps lent memory alive: dropping it gives the memory back to its owner.
pub trait Lender: Send + Sync {}
impl<T: Send + Sync> Lender for T {}

/// A thin pointer to the lender (a `Box<dyn Lender>` is two words; this keeps `HostVec`
/// at three, the size of the `Vec` it replaces).
struct Lent {
    /// (held only to be dropped)
    _lender: Box<dyn Lender>,
}

/// The elements of a host buffer (see the module docs).
pub struct HostVec<T> {
    ptr: NonNull<T>,
    len: usize,
    /// Our own memory: `capacity << 1 | 1`, the `Vec`'s capacity tagged in the low bit
    /// (no pointer to a `Lent` is odd). Lent memory: a `Box<Lent>` from `Box::into_raw`.
    tail: *mut Lent,
}

// SAFETY: a `HostVec<T>` owns its elements as a `Vec<T>` does, or borrows them from a
// lender that is `Send + Sync` by construction and that nothing else reaches through
// this value; shared access hands out only `&[T]`.
unsafe impl<T: Send> Send for HostVec<T> {}
// SAFETY: as above; `&HostVec<T>` gives only `&[T]`.
unsafe impl<T: Sync> Sync for HostVec<T> {}

impl<T> HostVec<T> {
    /// `len` elements at `ptr`, lent by `lender`, which keeps them alive and valid until it
    /// is dropped.
    ///
    /// # Safety
    /// `ptr` must be non-null, aligned for `T`, and point to `len` initialised, valid
    /// values of `T` (for `bool`: bytes that are 0 or 1) that stay allocated until
    /// `lender` drops, and that nothing frees or moves before then.
    pub unsafe fn lent(ptr: *mut T, len: usize, lender: Box<dyn Lender>) -> Self {
        debug_assert!(ptr.is_aligned());
        HostVec {
            // SAFETY: the caller promises a non-null pointer.
            ptr: unsafe { NonNull::new_unchecked(ptr) },
            len,
            tail: Box::into_raw(Box::new(Lent { _lender: lender })),
        }
    }

    /// Whether the memory is lent by another library (see the module docs).
    pub fn is_lent(&self) -> bool {
        self.tail.addr() & 1 == 0
    }

    /// The elements as a `Vec`: ours without a copy, lent ones copied.
    pub fn into_vec(self) -> Vec<T>
    where
        T: Clone,
    {
        if self.is_lent() {
            return self.to_vec();
        }
        let me = ManuallyDrop::new(self);
        // SAFETY: our own memory is a `Vec<T>`'s: pointer, length and capacity as it gave
        // them, taken back once (`me` is never dropped).
        unsafe { Vec::from_raw_parts(me.ptr.as_ptr(), me.len, me.tail.addr() >> 1) }
    }

    /// The first element's address, for handing the memory to another library (which
    /// may write through it: the pointer is the allocation's own, not one derived from a
    /// shared borrow; ordering those writes against rgrad's is the user's, as in torch).
    pub fn data_ptr(&self) -> *mut T {
        self.ptr.as_ptr()
    }
}

impl<T> From<Vec<T>> for HostVec<T> {
    #[inline]
    fn from(v: Vec<T>) -> Self {
        let mut v = ManuallyDrop::new(v);
        let cap = v.capacity();
        HostVec {
            // SAFETY: a `Vec`'s pointer is never null (dangling but aligned when empty).
            ptr: unsafe { NonNull::new_unchecked(v.as_mut_ptr()) },
            len: v.len(),
            // (a capacity is at most `isize::MAX` bytes, so the shift loses nothing)
            tail: std::ptr::without_provenance_mut(cap << 1 | 1),
        }
    }
}

impl<T> FromIterator<T> for HostVec<T> {
    #[inline]
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Vec::from_iter(iter).into()
    }
}

impl<T> Drop for HostVec<T> {
    fn drop(&mut self) {
        if self.is_lent() {
            // SAFETY: a lent `tail` is the `Box<Lent>` made in `lent`, dropped once, here:
            // the lender gives the memory back.
            drop(unsafe { Box::from_raw(self.tail) });
        } else {
            // SAFETY: our own memory: the `Vec` this came from, rebuilt once, here.
            drop(unsafe {
                Vec::from_raw_parts(self.ptr.as_ptr(), self.len, self.tail.addr() >> 1)
            });
        }
    }
}

impl<T> Deref for HostVec<T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` points to `len` initialised elements (ours, or lent and alive while
        // the lender is), aligned and non-null.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> DerefMut for HostVec<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`; `&mut self` makes this the only reference made here (lent
        // memory may also be written by its lender, as documented on the module).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<'a, T> IntoIterator for &'a HostVec<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, T> IntoIterator for &'a mut HostVec<T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

/// A copy, always into our own memory.
impl<T: Clone> Clone for HostVec<T> {
    fn clone(&self) -> Self {
        self.to_vec().into()
    }
}

impl<T: fmt::Debug> fmt::Debug for HostVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: PartialEq> PartialEq for HostVec<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: PartialEq> PartialEq<Vec<T>> for HostVec<T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        **self == **other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counted(Arc<AtomicUsize>, #[allow(dead_code)] Vec<f64>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn our_memory_round_trips_through_a_vec_without_a_copy() {
        let mut v = Vec::with_capacity(10);
        v.extend([1.0f32, 2.0, 3.0]);
        let p = v.as_ptr();
        let h = HostVec::from(v);
        assert!(!h.is_lent());
        assert_eq!(&*h, &[1.0, 2.0, 3.0]);
        let back = h.into_vec();
        assert_eq!((back.as_ptr(), back.capacity()), (p, 10));
        let e: HostVec<i64> = HostVec::from(Vec::new());
        assert!(e.is_empty() && !e.is_lent());
    }

    #[test]
    fn lent_memory_is_shared_and_its_lender_dropped_once() {
        let drops = Arc::new(AtomicUsize::new(0));
        let mut data = vec![1.0f64, 2.0, 3.0, 4.0];
        let ptr = data.as_mut_ptr();
        let lender = Counted(drops.clone(), data);
        // SAFETY: `ptr` is the lender's vector's, alive until the lender drops.
        let mut h = unsafe { HostVec::lent(ptr.wrapping_add(1), 2, Box::new(lender)) };
        assert!(h.is_lent());
        assert_eq!(&*h, &[2.0, 3.0]);
        h[0] = 20.0;
        // SAFETY: the lender still holds the memory.
        assert_eq!(unsafe { *ptr.add(1) }, 20.0);
        let c = h.clone();
        assert!(!c.is_lent());
        assert_eq!(h.clone().into_vec(), vec![20.0, 3.0]);
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        drop(h);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert_eq!(c, vec![20.0, 3.0]);
    }
}
