//! The allocator models of `models/MODEL.md` §2.8: how many bytes a GPU
//! allocation occupies, and whether an allocator can serve it.
//!
//! Owns: the pure allocators, each a small state machine on bytes and
//! addresses: [`va`] (virtual addressing, rounding to whole chunks) and
//! [`caching`] (a deterministic model of PyTorch's CUDA caching allocator).
//! The replay (`semantics`, `check`) drives them; they know nothing of tensors,
//! events or schedules.
//! Must not import: `semantics`, `check`, or anything outside offcert-core.

pub mod caching;
pub mod va;

pub use crate::model::Allocator;
pub use caching::{AllocFailure, Block, CachingAllocator, FreeBlock, Pool};
