//! A deterministic model of PyTorch's CUDA caching allocator
//! (`c10/cuda/CUDACachingAllocator.cpp`, native backend, default settings),
//! as `models/MODEL.md` §2.8 writes it down:
//!
//! - a request of `r` bytes is rounded up to a multiple of 512 B (at least
//!   512 B: `round_size`); a rounded size of at most 1 MiB (`kSmallSize`) is
//!   served from the small pool, a larger one from the large pool;
//! - best fit: the free block of the request's pool with the least size, then
//!   the least address, whose size is at least the rounded size;
//! - if none fits, a new segment is "cudaMalloc"ed: 2 MiB for a small request,
//!   20 MiB for a large one under 10 MiB, else the rounded size rounded up to a
//!   multiple of 2 MiB (`get_allocation_size`). It succeeds iff the reserved
//!   bytes stay within the capacity (cap_GPU). If it fails, every cached
//!   segment that is wholly free is released (`release_cached_blocks`) and the
//!   segment is tried once more; if that fails too, the request fails;
//! - the block found is split when the rest is at least 512 B (small pool) or
//!   more than 1 MiB (large pool) (`should_split`): the request takes the front,
//!   the rest stays a free block of the same segment; otherwise the request
//!   takes the whole block;
//! - a freed block merges with its free neighbours in the same segment
//!   (`free_block`, `try_merge_blocks`); segments are never compacted, and
//!   are given back to the device only on a failed segment allocation.
//!
//! Left out: streams (one stream; no cross-stream events), expandable
//! segments, the garbage-collection threshold, `max_split_size` (unlimited, its
//! default), `roundup_power2_divisions`, CUDA graphs' private pools, and the
//! memory the device keeps for itself. Addresses are the model's own: a new
//! segment takes the lowest address from 2 MiB on where it fits between the
//! live segments (`models/MODEL.md` §2.8); only ties in best fit depend on them.
//!
//! Owns: that state machine. Must not import: `semantics`, `check`.

use crate::units::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// `kMinBlockSize`: every request is rounded up to a multiple of this.
pub const MIN_BLOCK: u64 = 512;
/// `kSmallSize`: rounded requests of at most this go to the small pool.
pub const SMALL_SIZE: u64 = 1 << 20;
/// `kSmallBuffer`: the segment size of the small pool.
pub const SMALL_BUFFER: u64 = 2 << 20;
/// `kLargeBuffer`: the segment size for large requests under [`MIN_LARGE_ALLOC`].
pub const LARGE_BUFFER: u64 = 20 << 20;
/// `kMinLargeAlloc`: large requests of at least this get a segment of their own size.
pub const MIN_LARGE_ALLOC: u64 = 10 << 20;
/// `kRoundLarge`: such segments are rounded up to a multiple of this.
pub const ROUND_LARGE: u64 = 2 << 20;
/// The lowest address the model gives a segment.
pub const BASE_ADDRESS: u64 = 2 << 20;

/// The two block pools of the allocator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pool {
    Small,
    Large,
}

impl Pool {
    /// The pool a rounded request is served from.
    pub fn of(rounded: Bytes) -> Pool {
        if rounded.0 <= SMALL_SIZE {
            Pool::Small
        } else {
            Pool::Large
        }
    }
    fn ix(self) -> usize {
        self as usize
    }
}

/// `round_size`: the request rounded up to a multiple of 512 B, at least 512 B
/// (saturating at the largest multiple of 512 B).
pub fn rounded(request: Bytes) -> Bytes {
    let n = request.0.div_ceil(MIN_BLOCK).max(1);
    Bytes(n.saturating_mul(MIN_BLOCK))
}

/// `get_allocation_size`: the segment "cudaMalloc"ed for a rounded request
/// that no cached block serves.
pub fn segment_size(rounded: Bytes) -> Bytes {
    if rounded.0 <= SMALL_SIZE {
        Bytes(SMALL_BUFFER)
    } else if rounded.0 < MIN_LARGE_ALLOC {
        Bytes(LARGE_BUFFER)
    } else {
        Bytes(rounded.0.div_ceil(ROUND_LARGE).saturating_mul(ROUND_LARGE))
    }
}

/// An allocated block: what [`CachingAllocator::malloc`] hands out and
/// [`CachingAllocator::free`] takes back. A request of 0 bytes gets the empty
/// block (size 0, address 0), which occupies nothing (PyTorch returns null).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Block {
    pub addr: u64,
    /// The block's size: the rounded request, or the whole free block when it
    /// was not split.
    pub size: Bytes,
    /// The bytes asked for.
    pub requested: Bytes,
    /// The base address of the segment it lies in.
    pub segment: u64,
}

/// A free (cached) block, as a witness lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FreeBlock {
    pub addr: u64,
    pub size: Bytes,
    pub segment: u64,
    pub pool: Pool,
}

/// Why a request could not be served: no free block of its pool fits, and a
/// new segment would take the reserved bytes over the capacity even after
/// every wholly free cached segment was released. The state is that after the
/// release (the request itself allocates nothing).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error(
    "the caching allocator cannot serve {} B (rounded {} B, {pool:?} pool): a new segment of {} B \
     would reserve more than {} B (reserved {} B, allocated {} B, largest free block {} B)",
    request.0, rounded.0, segment.0, capacity.0, reserved.0, allocated.0, largest_free.0
)]
pub struct AllocFailure {
    pub request: Bytes,
    pub rounded: Bytes,
    pub pool: Pool,
    /// The segment it tried to "cudaMalloc".
    pub segment: Bytes,
    pub capacity: Bytes,
    pub reserved: Bytes,
    pub allocated: Bytes,
    /// Every free block, largest first (then by address).
    pub free_blocks: Vec<FreeBlock>,
    /// The largest free block of either pool (0 if none): the largest hole.
    pub largest_free: Bytes,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    size: u64,
    segment: u64,
    pool: Pool,
    allocated: bool,
}

/// The allocator's state: segments, the blocks tiling them, and per pool the
/// free blocks ordered by (size, address).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachingAllocator {
    capacity: u64,
    /// Every block, free or allocated, by address.
    blocks: BTreeMap<u64, Slot>,
    /// Per pool, the free blocks as (size, address).
    free: [BTreeSet<(u64, u64)>; 2],
    /// Every segment: base address → (size, pool).
    segments: BTreeMap<u64, (u64, Pool)>,
    reserved: u64,
    allocated: u64,
    requested: u64,
}

impl CachingAllocator {
    /// An empty allocator that may reserve up to `capacity` bytes.
    pub fn new(capacity: Bytes) -> Self {
        CachingAllocator {
            capacity: capacity.0,
            blocks: BTreeMap::new(),
            free: [BTreeSet::new(), BTreeSet::new()],
            segments: BTreeMap::new(),
            reserved: 0,
            allocated: 0,
            requested: 0,
        }
    }

    /// Serve `request` bytes, or say why not (the state then is that after
    /// releasing the wholly free cached segments).
    pub fn malloc(&mut self, request: Bytes) -> Result<Block, AllocFailure> {
        if request.0 == 0 {
            return Ok(Block {
                addr: 0,
                size: Bytes(0),
                requested: Bytes(0),
                segment: 0,
            });
        }
        let size = rounded(request);
        let pool = Pool::of(size);
        let addr = match self.best_fit(pool, size.0) {
            Some(a) => a,
            None => match self.new_segment(pool, segment_size(size).0) {
                Some(a) => a,
                None => return Err(self.failure(request, size, pool)),
            },
        };
        Ok(self.take(addr, size.0, request))
    }

    /// Give `block` back: it becomes free and merges with its free neighbours
    /// in its segment. The empty block, and a block that is not allocated
    /// here, are ignored.
    pub fn free(&mut self, block: Block) {
        let Some(slot) = self.blocks.get_mut(&block.addr) else {
            return;
        };
        if block.size.0 == 0 || !slot.allocated || slot.size != block.size.0 {
            return;
        }
        slot.allocated = false;
        let (mut addr, mut slot) = (block.addr, *slot);
        self.allocated -= slot.size;
        self.requested = self.requested.saturating_sub(block.requested.0);
        let next = addr + slot.size;
        if let Some(n) = self.blocks.get(&next).copied() {
            if !n.allocated && n.segment == slot.segment {
                self.free[n.pool.ix()].remove(&(n.size, next));
                self.blocks.remove(&next);
                slot.size += n.size;
            }
        }
        if let Some((&pa, &p)) = self.blocks.range(..addr).next_back() {
            if !p.allocated && p.segment == slot.segment && pa + p.size == addr {
                self.free[p.pool.ix()].remove(&(p.size, pa));
                self.blocks.remove(&addr);
                slot.size += p.size;
                addr = pa;
            }
        }
        self.blocks.insert(addr, slot);
        self.free[slot.pool.ix()].insert((slot.size, addr));
    }

    /// Bytes held in segments ("cudaMalloc"ed).
    pub fn reserved(&self) -> Bytes {
        Bytes(self.reserved)
    }
    /// Bytes of the allocated blocks (rounded and unsplit sizes, as PyTorch's
    /// `allocated_bytes` counts them).
    pub fn allocated(&self) -> Bytes {
        Bytes(self.allocated)
    }
    /// Bytes asked for by the live allocations.
    pub fn requested(&self) -> Bytes {
        Bytes(self.requested)
    }
    /// The capacity the segments must stay within.
    pub fn capacity(&self) -> Bytes {
        Bytes(self.capacity)
    }
    /// The largest free block of either pool (0 if none).
    pub fn largest_free(&self) -> Bytes {
        let m = self.free.iter().filter_map(|f| f.last()).map(|&(s, _)| s);
        Bytes(m.max().unwrap_or(0))
    }
    /// Every free block, largest first, then by address.
    pub fn free_blocks(&self) -> Vec<FreeBlock> {
        let mut v: Vec<FreeBlock> = self
            .free
            .iter()
            .flatten()
            .map(|&(size, addr)| {
                let s = self.blocks[&addr];
                FreeBlock {
                    addr,
                    size: Bytes(size),
                    segment: s.segment,
                    pool: s.pool,
                }
            })
            .collect();
        v.sort_by_key(|b| (std::cmp::Reverse(b.size), b.addr));
        v
    }
    /// The segments, as (base address, size, pool), by address.
    pub fn segments(&self) -> Vec<(u64, Bytes, Pool)> {
        let s = self.segments.iter();
        s.map(|(&a, &(size, p))| (a, Bytes(size), p)).collect()
    }

    fn best_fit(&self, pool: Pool, size: u64) -> Option<u64> {
        let f = &self.free[pool.ix()];
        f.range((size, 0)..).next().map(|&(_, a)| a)
    }

    /// "cudaMalloc" a segment of `size` bytes as one free block (releasing the
    /// wholly free cached segments once if it does not fit); its address.
    fn new_segment(&mut self, pool: Pool, size: u64) -> Option<u64> {
        if !self.fits(size) {
            self.release_cached();
            if !self.fits(size) {
                return None;
            }
        }
        let addr = self.lowest_gap(size)?;
        self.segments.insert(addr, (size, pool));
        self.reserved += size;
        let slot = Slot {
            size,
            segment: addr,
            pool,
            allocated: false,
        };
        self.blocks.insert(addr, slot);
        self.free[pool.ix()].insert((size, addr));
        Some(addr)
    }

    fn fits(&self, size: u64) -> bool {
        self.reserved
            .checked_add(size)
            .is_some_and(|r| r <= self.capacity)
    }

    /// The lowest address from [`BASE_ADDRESS`] on where `size` bytes fit
    /// between the live segments.
    fn lowest_gap(&self, size: u64) -> Option<u64> {
        let mut cursor = BASE_ADDRESS;
        for (&a, &(s, _)) in &self.segments {
            if a - cursor >= size {
                return Some(cursor);
            }
            cursor = a + s;
        }
        cursor.checked_add(size).map(|_| cursor)
    }

    /// `release_cached_blocks`: give back every segment that is one free block.
    fn release_cached(&mut self) {
        let whole: Vec<(u64, u64, Pool)> = self
            .segments
            .iter()
            .filter(|(a, (s, _))| {
                self.blocks
                    .get(a)
                    .is_some_and(|b| !b.allocated && b.size == *s)
            })
            .map(|(&a, &(s, p))| (a, s, p))
            .collect();
        for (a, s, p) in whole {
            self.segments.remove(&a);
            self.blocks.remove(&a);
            self.free[p.ix()].remove(&(s, a));
            self.reserved -= s;
        }
    }

    /// Allocate `size` bytes from the free block at `addr`, splitting it when
    /// `should_split` says so.
    fn take(&mut self, addr: u64, size: u64, request: Bytes) -> Block {
        let mut slot = self.blocks[&addr];
        self.free[slot.pool.ix()].remove(&(slot.size, addr));
        let rest = slot.size - size;
        let split = match slot.pool {
            Pool::Small => rest >= MIN_BLOCK,
            Pool::Large => rest > SMALL_SIZE,
        };
        if split {
            let tail = Slot { size: rest, ..slot };
            self.blocks.insert(addr + size, tail);
            self.free[slot.pool.ix()].insert((rest, addr + size));
            slot.size = size;
        }
        slot.allocated = true;
        self.blocks.insert(addr, slot);
        self.allocated += slot.size;
        self.requested += request.0;
        Block {
            addr,
            size: Bytes(slot.size),
            requested: request,
            segment: slot.segment,
        }
    }

    fn failure(&self, request: Bytes, rounded: Bytes, pool: Pool) -> AllocFailure {
        AllocFailure {
            request,
            rounded,
            pool,
            segment: segment_size(rounded),
            capacity: Bytes(self.capacity),
            reserved: Bytes(self.reserved),
            allocated: Bytes(self.allocated),
            free_blocks: self.free_blocks(),
            largest_free: self.largest_free(),
        }
    }
}

#[cfg(test)]
mod tests;
