//! The GPU-memory profile of one replay, recorded by the checker itself (so a
//! picture of a schedule shows the very figures the verdict was drawn from).
//!
//! Owns: [`MemoryProfile`]. Filled only by [`super::check_with_profile`]; the
//! plain [`super::check`] records nothing.
//!
//! Must not import: anything outside offcert-core (no solver, heuristic or
//! `offcert` module; Cargo enforces it).

use crate::units::{Bytes, Ticks};
use serde::Serialize;

/// GPU bytes in use, sampled at every measurement of the replay: the start
/// state, after every allocation (the measurements rule *memory* judges), and
/// after every release, in replay order. Times are within the period for
/// cyclic schedules. Several samples may share an instant.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MemoryProfile {
    pub samples: Vec<(Ticks, Bytes)>,
}

impl MemoryProfile {
    pub(crate) fn push(&mut self, at: Ticks, used: i128) {
        self.samples
            .push((at, Bytes(used.clamp(0, u64::MAX as i128) as u64)));
    }

    /// The largest sample and its first instant.
    pub fn max(&self) -> Option<(Bytes, Ticks)> {
        let mut best: Option<(Bytes, Ticks)> = None;
        for &(t, b) in &self.samples {
            if best.is_none_or(|(m, _)| b > m) {
                best = Some((b, t));
            }
        }
        best
    }
}
