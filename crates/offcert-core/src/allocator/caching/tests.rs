//! The caching allocator's rules, one by one (`models/MODEL.md` §2.8).

use super::*;

const MIB: u64 = 1 << 20;

fn big() -> CachingAllocator {
    CachingAllocator::new(Bytes(1 << 40))
}

/// The allocator's invariants: blocks tile the segments, no two free
/// neighbours in a segment, the free sets and the counters agree.
fn assert_consistent(a: &CachingAllocator) {
    let mut reserved = 0;
    for (&base, &(size, pool)) in &a.segments {
        reserved += size;
        let mut at = base;
        let mut prev_free = false;
        while at < base + size {
            let s = a.blocks[&at];
            assert_eq!((s.segment, s.pool), (base, pool));
            assert!(!(prev_free && !s.allocated), "free neighbours at {at}");
            assert_eq!(!s.allocated, a.free[pool.ix()].contains(&(s.size, at)));
            prev_free = !s.allocated;
            at += s.size;
        }
        assert_eq!(at, base + size);
    }
    assert_eq!(reserved, a.reserved);
    let alloc: u64 = a
        .blocks
        .values()
        .filter(|s| s.allocated)
        .map(|s| s.size)
        .sum();
    assert_eq!(alloc, a.allocated);
    assert!(a.reserved <= a.capacity);
}

#[test]
fn rounding_pools_and_segment_sizes() {
    assert_eq!(rounded(Bytes(1)), Bytes(512));
    assert_eq!(rounded(Bytes(512)), Bytes(512));
    assert_eq!(rounded(Bytes(513)), Bytes(1024));
    assert_eq!(Pool::of(Bytes(MIB)), Pool::Small);
    assert_eq!(Pool::of(Bytes(MIB + 512)), Pool::Large);
    assert_eq!(segment_size(Bytes(MIB)), Bytes(2 * MIB));
    assert_eq!(segment_size(Bytes(MIB + 512)), Bytes(20 * MIB));
    assert_eq!(segment_size(Bytes(10 * MIB - 512)), Bytes(20 * MIB));
    assert_eq!(segment_size(Bytes(10 * MIB)), Bytes(10 * MIB));
    assert_eq!(segment_size(Bytes(10 * MIB + 512)), Bytes(12 * MIB));
}

#[test]
fn small_requests_share_a_2mib_segment() {
    let mut a = big();
    let x = a.malloc(Bytes(1)).unwrap();
    let y = a.malloc(Bytes(700)).unwrap();
    assert_eq!((x.size, y.size), (Bytes(512), Bytes(1024)));
    assert_eq!(x.segment, y.segment);
    assert_eq!(y.addr, x.addr + 512);
    assert_eq!(a.reserved(), Bytes(2 * MIB));
    assert_eq!(a.allocated(), Bytes(1536));
    assert_eq!(a.requested(), Bytes(701));
    assert_consistent(&a);
}

#[test]
fn large_split_needs_more_than_1mib_left() {
    let mut a = big();
    // 19 MiB of a 20 MiB segment: 1 MiB left is not more than 1 MiB, no split.
    let x = a.malloc(Bytes(19 * MIB)).unwrap();
    assert_eq!(a.reserved(), Bytes(20 * MIB));
    assert_eq!(x.size, Bytes(20 * MIB), "the whole block, unsplit");
    assert_eq!(a.allocated(), Bytes(20 * MIB));
    // 5 MiB of a fresh 20 MiB segment: 15 MiB left, split.
    let y = a.malloc(Bytes(5 * MIB)).unwrap();
    assert_eq!(y.size, Bytes(5 * MIB));
    assert_eq!(a.free_blocks()[0].size, Bytes(15 * MIB));
    assert_consistent(&a);
}

#[test]
fn best_fit_by_size_then_address() {
    let mut a = big();
    let b: Vec<Block> = [3, 2, 3, 2, 4]
        .iter()
        .map(|m| a.malloc(Bytes(m * MIB)).unwrap())
        .collect();
    // one 20 MiB segment: 3,2,3,2,4 and a 6 MiB tail.
    assert_eq!(a.segments().len(), 1);
    a.free(b[0]);
    a.free(b[2]);
    a.free(b[3]); // merges with b[2]: a 5 MiB hole
    let c = a.malloc(Bytes(3 * MIB)).unwrap();
    assert_eq!(c.addr, b[0].addr, "the 3 MiB hole, not the 5 or 6 MiB ones");
    let d = a.malloc(Bytes(2 * MIB + 1)).unwrap();
    assert_eq!(d.addr, b[2].addr, "5 MiB before 6 MiB");
    assert_consistent(&a);
}

#[test]
fn freeing_coalesces_within_a_segment_only() {
    let mut a = big();
    let x = a.malloc(Bytes(4 * MIB)).unwrap();
    let y = a.malloc(Bytes(4 * MIB)).unwrap();
    let z = a.malloc(Bytes(4 * MIB)).unwrap();
    a.free(x);
    a.free(z);
    assert_eq!(a.free_blocks().len(), 2);
    a.free(y);
    assert_eq!(a.free_blocks().len(), 1);
    assert_eq!(a.largest_free(), Bytes(20 * MIB));
    // two segments side by side never merge.
    let p = a.malloc(Bytes(12 * MIB)).unwrap();
    let q = a.malloc(Bytes(12 * MIB)).unwrap();
    assert_ne!(p.segment, q.segment);
    a.free(p);
    a.free(q);
    assert_eq!(a.free_blocks().len(), 2);
    assert_consistent(&a);
}

#[test]
fn fragmentation_refuses_a_request_that_fits_in_bytes() {
    let mut a = CachingAllocator::new(Bytes(20 * MIB));
    let b: Vec<Block> = (0..4).map(|_| a.malloc(Bytes(5 * MIB)).unwrap()).collect();
    a.free(b[0]);
    a.free(b[2]);
    assert_eq!(a.reserved().0 - a.allocated().0, 10 * MIB);
    let e = a.malloc(Bytes(6 * MIB)).unwrap_err();
    assert_eq!(e.request, Bytes(6 * MIB));
    assert_eq!(e.rounded, Bytes(6 * MIB));
    assert_eq!(e.segment, Bytes(20 * MIB));
    assert_eq!(
        (e.reserved, e.allocated),
        (Bytes(20 * MIB), Bytes(10 * MIB))
    );
    assert_eq!(e.largest_free, Bytes(5 * MIB));
    let sizes: Vec<u64> = e.free_blocks.iter().map(|f| f.size.0).collect();
    assert_eq!(sizes, [5 * MIB, 5 * MIB]);
    assert!(e.free_blocks[0].addr < e.free_blocks[1].addr);
    assert_consistent(&a);
}

#[test]
fn a_failed_segment_releases_the_cache_and_retries() {
    let mut a = CachingAllocator::new(Bytes(21 * MIB));
    let s = a.malloc(Bytes(100)).unwrap();
    a.free(s);
    assert_eq!(a.reserved(), Bytes(2 * MIB), "cached, not given back");
    let x = a.malloc(Bytes(5 * MIB)).unwrap();
    assert_eq!(
        a.reserved(),
        Bytes(20 * MIB),
        "the small segment was released"
    );
    assert_eq!(x.addr, BASE_ADDRESS, "its address is reused");
    // a segment still in use is never released.
    let e = a.malloc(Bytes(30 * MIB)).unwrap_err();
    assert_eq!(e.reserved, Bytes(20 * MIB));
    assert_consistent(&a);
}

#[test]
fn zero_bytes_take_nothing() {
    let mut a = CachingAllocator::new(Bytes(0));
    let z = a.malloc(Bytes(0)).unwrap();
    assert_eq!((z.size, a.reserved()), (Bytes(0), Bytes(0)));
    a.free(z);
    assert!(a.malloc(Bytes(1)).is_err());
}

#[test]
fn random_sequences_keep_the_invariants() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut a = CachingAllocator::new(Bytes(64 * MIB));
    let mut live: Vec<Block> = Vec::new();
    for _ in 0..3000 {
        let r = next();
        if r % 3 == 0 && !live.is_empty() {
            let i = (r / 3) as usize % live.len();
            a.free(live.swap_remove(i));
        } else {
            let size = match r % 4 {
                0 => r % 4096,
                1 => r % (2 * MIB),
                _ => r % (24 * MIB),
            };
            match a.malloc(Bytes(size)) {
                Ok(b) => {
                    assert!(b.size >= rounded(Bytes(size)) || size == 0);
                    live.push(b);
                }
                Err(e) => {
                    assert!(e.reserved.0 + e.segment.0 > e.capacity.0);
                    assert!(e.largest_free < e.rounded || e.pool != e.free_blocks[0].pool);
                }
            }
        }
        assert_consistent(&a);
    }
    for b in live.drain(..) {
        a.free(b);
    }
    assert_eq!(a.allocated(), Bytes(0));
    assert_eq!(a.free_blocks().len(), a.segments().len());
}
