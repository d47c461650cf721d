//! Units of the model: integer [`Ticks`] of time, integer [`Bytes`] of memory and an
//! exact rational [`Bandwidth`] in bytes per tick.
//!
//! Owns: unit newtypes and the exact arithmetic on them. Imports nothing from the crate.
//! Validity is never decided with floats: every comparison here is on integers
//! (`u128`/`i128` where products could overflow 64 bits).
//!
//! Must not import: anything outside offcert-core (no solver, heuristic or
//! `offcert` module; Cargo enforces it).

use serde::{Deserialize, Serialize};
use std::fmt;

/// A point or span of time in integer ticks. Signed because cyclic replays shift
/// boundary-crossing transfers one period back (to negative times).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(transparent)]
pub struct Ticks(pub i64);

/// An amount of memory in bytes.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(transparent)]
pub struct Bytes(pub u64);

impl fmt::Display for Ticks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Ticks {
    pub const ZERO: Ticks = Ticks(0);
    pub fn checked_add(self, o: Ticks) -> Option<Ticks> {
        self.0.checked_add(o.0).map(Ticks)
    }
    pub fn checked_sub(self, o: Ticks) -> Option<Ticks> {
        self.0.checked_sub(o.0).map(Ticks)
    }
}

impl std::ops::Add for Ticks {
    type Output = Ticks;
    fn add(self, o: Ticks) -> Ticks {
        Ticks(self.0 + o.0)
    }
}

impl std::ops::Sub for Ticks {
    type Output = Ticks;
    fn sub(self, o: Ticks) -> Ticks {
        Ticks(self.0 - o.0)
    }
}

impl Bytes {
    pub const ZERO: Bytes = Bytes(0);
    pub fn checked_add(self, o: Bytes) -> Option<Bytes> {
        self.0.checked_add(o.0).map(Bytes)
    }
}

/// Link bandwidth β as an exact positive rational: `bytes` bytes per `ticks` ticks.
///
/// Kept as a fraction (not reduced on purpose: the file's numbers are shown back to
/// the user unchanged) because the papers' β rarely divides tensor sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Bandwidth {
    /// Numerator: bytes moved …
    pub bytes: u64,
    /// … per this many ticks (denominator).
    #[serde(default = "one")]
    pub ticks: u64,
}

fn one() -> u64 {
    1
}

impl Bandwidth {
    /// β = bytes/ticks. Both must be positive; the model loader rejects zero.
    pub fn new(bytes: u64, ticks: u64) -> Bandwidth {
        Bandwidth { bytes, ticks }
    }

    /// Does a transfer of `size` that lasts `took` respect β, i.e. `took >= size/β`?
    /// Exact: `took * bytes >= size * ticks` in 128-bit integers.
    pub fn allows(&self, size: Bytes, took: Ticks) -> bool {
        if took.0 < 0 {
            return size.0 == 0;
        }
        (took.0 as u128) * (self.bytes as u128) >= (size.0 as u128) * (self.ticks as u128)
    }

    /// The least whole number of ticks a transfer of `size` may last: ⌈size/β⌉.
    /// `None` if it does not fit in `i64` ticks.
    pub fn min_ticks(&self, size: Bytes) -> Option<Ticks> {
        let num = (size.0 as u128) * (self.ticks as u128);
        let den = self.bytes as u128;
        let q = num.div_ceil(den);
        i64::try_from(q).ok().map(Ticks)
    }

    /// Is size/β a whole number of ticks?
    pub fn divides(&self, size: Bytes) -> bool {
        ((size.0 as u128) * (self.ticks as u128)) % (self.bytes as u128) == 0
    }
}

impl fmt::Display for Bandwidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ticks == 1 {
            write!(f, "{} B/tick", self.bytes)
        } else {
            write!(f, "{}/{} B/tick", self.bytes, self.ticks)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidth_is_exact_at_the_boundary() {
        let b = Bandwidth::new(3, 2); // 1.5 bytes per tick
        assert!(b.allows(Bytes(3), Ticks(2)));
        assert!(!b.allows(Bytes(4), Ticks(2)));
        assert_eq!(b.min_ticks(Bytes(4)), Some(Ticks(3)));
        assert_eq!(b.min_ticks(Bytes(3)), Some(Ticks(2)));
        assert!(b.divides(Bytes(3)));
        assert!(!b.divides(Bytes(4)));
    }

    #[test]
    fn bandwidth_handles_huge_sizes_without_overflow() {
        let b = Bandwidth::new(1, u64::MAX);
        assert_eq!(b.min_ticks(Bytes(u64::MAX)), None);
        assert!(!b.allows(Bytes(u64::MAX), Ticks(i64::MAX)));
    }
}
