//! The replay's frame of time: one-shot, or the middle period [P, 2P) of a
//! cyclic schedule unrolled three times, and the map from replay ticks back into
//! the period.
//!
//! Owns: [`Window`]. Must not import: anything outside this crate.

use crate::model::{Instance, Mode};
use crate::schedule::Schedule;
use crate::units::Ticks;

/// Where the reported period lies in the replay.
#[derive(Clone, Copy, Debug)]
pub(super) struct Window {
    pub cyclic: bool,
    /// The period P (zero for one-shot schedules).
    pub period: Ticks,
    /// The reported window [lo, hi): [P, 2P) for cyclic schedules, everything
    /// otherwise.
    pub lo: Ticks,
    pub hi: Ticks,
}

impl Window {
    pub fn of(inst: &Instance, s: &Schedule) -> Window {
        let cyclic = inst.mode == Mode::Cyclic;
        let period = s.period.unwrap_or(Ticks::ZERO);
        let (lo, hi) = if cyclic {
            (period, Ticks(2 * period.0))
        } else {
            (Ticks(i64::MIN), Ticks(i64::MAX))
        };
        Window {
            cyclic,
            period,
            lo,
            hi,
        }
    }

    /// A replay time as a time in the reported period.
    pub fn rel(&self, t: Ticks) -> Ticks {
        if self.cyclic {
            Ticks(t.0 - self.period.0)
        } else {
            t
        }
    }

    /// Within the reported window (memory is measured there only).
    pub fn contains(&self, t: Ticks) -> bool {
        t >= self.lo && t < self.hi
    }

    /// The period as a circle for the busy-time measurements (cyclic only).
    pub fn circle(&self) -> Option<Ticks> {
        self.cyclic.then_some(self.period)
    }
}
