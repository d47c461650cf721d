//! Virtual addressing (`models/MODEL.md` §2.8, `va:m_c`): physical chunks of
//! `m_c` bytes are mapped to a contiguous virtual range, so an allocation of
//! `m_r` bytes occupies m_a = ⌈m_r / m_c⌉ · m_c (the window paper's §4.2).
//!
//! Owns: that rounding, exactly. Must not import: `semantics`, `check`.

use crate::units::Bytes;

/// ⌈size / chunk⌉ · chunk, or `None` on overflow. A zero `chunk` is refused by
/// [`crate::model::Allocator`]'s parser; here it leaves the size unrounded.
pub fn occupied(size: Bytes, chunk: Bytes) -> Option<Bytes> {
    if chunk.0 == 0 {
        return Some(size);
    }
    let n = size.0.div_ceil(chunk.0);
    n.checked_mul(chunk.0).map(Bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_up_to_whole_chunks() {
        let c = Bytes(40);
        assert_eq!(occupied(Bytes(0), c), Some(Bytes(0)));
        assert_eq!(occupied(Bytes(1), c), Some(Bytes(40)));
        assert_eq!(occupied(Bytes(40), c), Some(Bytes(40)));
        assert_eq!(occupied(Bytes(41), c), Some(Bytes(80)));
        assert_eq!(occupied(Bytes(u64::MAX), c), None);
    }

    #[test]
    fn internal_fragmentation_is_below_one_chunk() {
        // IF < m_c per request (eq. (1)).
        for size in 1..200u64 {
            let m_a = occupied(Bytes(size), Bytes(7)).unwrap().0;
            assert!(m_a >= size && m_a - size < 7, "{size}");
        }
    }
}
