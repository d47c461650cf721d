//! How much work a local search may do: a count of candidates tried (the
//! deterministic mode: the same result on any machine, under any load, at any
//! `--jobs`), or a wall-clock limit (the clock-driven mode of `--time-limit`).
//!
//! Owns: [`Effort`] and its [`Meter`].
//! Must not import: anything but `std` (a leaf).

use std::time::{Duration, Instant};

/// A limit on a local search's work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effort {
    /// At most this many candidates tried (each a simulation or a check).
    Candidates(u64),
    /// Until this much wall-clock time has passed (results depend on the
    /// machine's speed and load).
    Time(Duration),
}

impl From<Duration> for Effort {
    fn from(d: Duration) -> Effort {
        Effort::Time(d)
    }
}

impl Effort {
    /// Half of it (the first of two phases).
    pub fn half(self) -> Effort {
        match self {
            Effort::Candidates(n) => Effort::Candidates(n / 2),
            Effort::Time(d) => Effort::Time(d / 2),
        }
    }

    /// A meter that starts now.
    pub fn start(self) -> Meter {
        Meter {
            effort: self,
            began: Instant::now(),
            used: 0,
            floor: 0,
        }
    }
}

/// The work done so far against an [`Effort`].
#[derive(Clone, Debug)]
pub struct Meter {
    effort: Effort,
    began: Instant,
    used: u64,
    /// Candidates tried before a clock may stop the work ([`Meter::with_floor`]).
    floor: u64,
}

impl Meter {
    /// Count one candidate tried.
    pub fn charge(&mut self) {
        self.used += 1;
    }

    /// Candidates tried so far.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// Under a clock, at least `n` candidates are tried before the clock may
    /// stop the work (on a loaded machine a search's setup can use up its
    /// wall-clock limit before its first candidate); a count is unchanged.
    pub fn with_floor(mut self, n: u64) -> Meter {
        self.floor = n;
        self
    }

    /// The limit is reached: no further candidate may be tried.
    pub fn spent(&self) -> bool {
        match self.effort {
            Effort::Candidates(n) => self.used >= n,
            Effort::Time(d) => self.used >= self.floor && self.began.elapsed() >= d,
        }
    }

    /// What is left of the limit (for a next phase).
    pub fn left(&self) -> Effort {
        match self.effort {
            Effort::Candidates(n) => Effort::Candidates(n.saturating_sub(self.used)),
            Effort::Time(d) => Effort::Time(d.saturating_sub(self.began.elapsed())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_candidate_count_is_spent_after_exactly_that_many_charges() {
        let mut m = Effort::Candidates(3).start();
        for _ in 0..3 {
            assert!(!m.spent());
            m.charge();
        }
        assert!(m.spent());
        assert_eq!(m.left(), Effort::Candidates(0));
        assert_eq!(Effort::Candidates(7).half(), Effort::Candidates(3));
        assert!(Effort::Time(Duration::ZERO).start().spent());
    }
}
