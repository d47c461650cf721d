//! The replay's GPU allocations under the instance's allocator
//! (`models/MODEL.md` §2.8): which allocation each copy and each running op's
//! scratch holds, and what R7 compares under `va:m_c` (the rounded sum) and
//! under `caching` (whether the allocator serves each request).
//!
//! Owns: [`GpuHeap`]. Under the default `exact` allocator it keeps nothing and
//! costs nothing (mem_GPU, the state's own counter, is what R7 compares).
//! Must not import: the checker.

use crate::allocator::{va, AllocFailure, Block, CachingAllocator};
use crate::model::{Allocator, OpId, TensorId};
use crate::units::{Bytes, Ticks};

/// Who holds a GPU allocation: a tensor's copy, or a running op's scratch
/// (the op and the instant it ends).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Owner {
    Copy(TensorId),
    Temp(OpId, Ticks),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Model {
    Exact,
    Va {
        chunk: Bytes,
        /// occ_GPU: the live allocations, each rounded up to whole chunks.
        occupied: u128,
        /// Live non-empty allocations, and the most at once (N_max).
        live: u64,
        max_live: u64,
    },
    Caching {
        alloc: Box<CachingAllocator>,
        /// Per tensor, the block its GPU copy holds (none if its request failed).
        copies: Vec<Option<Block>>,
        /// The running ops' scratch blocks.
        temps: Vec<(OpId, Ticks, Block)>,
    },
}

/// The GPU allocations of one replay (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuHeap {
    model: Model,
}

impl GpuHeap {
    pub(super) fn new(a: Allocator, capacity: Bytes, tensors: usize) -> GpuHeap {
        let model = match a {
            Allocator::Exact => Model::Exact,
            Allocator::Va { chunk } => Model::Va {
                chunk,
                occupied: 0,
                live: 0,
                max_live: 0,
            },
            Allocator::Caching => Model::Caching {
                alloc: Box::new(CachingAllocator::new(capacity)),
                copies: vec![None; tensors],
                temps: Vec::new(),
            },
        };
        GpuHeap { model }
    }

    /// Allocate `size` bytes for `owner`; under `caching`, the failure if the
    /// allocator cannot serve it (the owner then holds no block).
    pub(super) fn take(&mut self, owner: Owner, size: u64) -> Option<AllocFailure> {
        match &mut self.model {
            Model::Exact => None,
            Model::Va {
                chunk,
                occupied,
                live,
                max_live,
            } => {
                if size > 0 {
                    *occupied += rounded(size, *chunk);
                    *live += 1;
                    *max_live = (*max_live).max(*live);
                }
                None
            }
            Model::Caching {
                alloc,
                copies,
                temps,
            } => {
                let block = match alloc.malloc(Bytes(size)) {
                    Ok(b) => b,
                    Err(f) => return Some(f),
                };
                match owner {
                    Owner::Copy(t) => copies[t.ix()] = Some(block),
                    Owner::Temp(o, end) => temps.push((o, end, block)),
                }
                None
            }
        }
    }

    /// Free what `owner` holds (`size` bytes; nothing if its request failed).
    pub(super) fn give(&mut self, owner: Owner, size: u64) {
        match &mut self.model {
            Model::Exact => {}
            Model::Va {
                chunk,
                occupied,
                live,
                ..
            } => {
                if size > 0 {
                    *occupied -= rounded(size, *chunk);
                    *live -= 1;
                }
            }
            Model::Caching {
                alloc,
                copies,
                temps,
            } => {
                let block = match owner {
                    Owner::Copy(t) => copies[t.ix()].take(),
                    Owner::Temp(o, end) => temps
                        .iter()
                        .position(|(op, e, _)| *op == o && *e == end)
                        .map(|k| temps.swap_remove(k).2),
                };
                if let Some(b) = block {
                    alloc.free(b);
                }
            }
        }
    }

    /// occ_GPU under `va:m_c` (`None` under another allocator).
    pub fn occupied(&self) -> Option<Bytes> {
        match &self.model {
            Model::Va { occupied, .. } => Some(Bytes((*occupied).min(u64::MAX as u128) as u64)),
            _ => None,
        }
    }

    /// The most non-empty allocations alive at once so far (N_max; `va` only).
    pub fn max_live(&self) -> Option<u64> {
        match &self.model {
            Model::Va { max_live, .. } => Some(*max_live),
            _ => None,
        }
    }

    /// The caching allocator's state (`None` under another allocator).
    pub fn caching(&self) -> Option<&CachingAllocator> {
        match &self.model {
            Model::Caching { alloc, .. } => Some(alloc),
            _ => None,
        }
    }
}

/// ⌈size / chunk⌉ · chunk, in 128 bits (it cannot overflow there).
fn rounded(size: u64, chunk: Bytes) -> u128 {
    va::occupied(Bytes(size), chunk).map_or_else(
        || (size as u128).div_ceil(chunk.0 as u128) * chunk.0 as u128,
        |b| b.0 as u128,
    )
}
