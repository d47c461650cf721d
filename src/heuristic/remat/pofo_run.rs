//! `pofo-as-run`: the appendix's programme as it should be run (issue 23,
//! item 2), next to `pofo` as printed (50 slots).
//!
//! What makes printed pofo worse than rotor at paper scale is its
//! discretisation (`docs/RESULTS.md`, "pofo as printed and as run"): with 50
//! slots a slot is M/50 bytes, every tensor is rounded up to whole slots and
//! the keep-everything plan no longer fits, so pofo recomputes where rotor's
//! 500 slots do not; at the same slots pofo's programme is never worse than
//! rotor's (it contains every rotor decision: [`Pofo::persistent`] is rotor's
//! DP, tested) and its model value is its checked makespan on the ResNets.
//! A programme of 500 slots is out of reach (its state grows with the cube of
//! the slots), so `pofo-as-run`:
//!
//! 1. solves the programme at [`RUN_SLOTS`] slots, or fewer on long chains
//!    ([`run_slots`]: the most slots whose work estimate is within
//!    [`RUN_MAX_WORK`], ResNet-101's at 100 slots, and never fewer than the
//!    appendix's 50), and realises its decisions;
//! 2. realises rotor's plan (500 slots, or keeping everything), every decision
//!    of which pofo's programme contains at 500 slots;
//! 3. returns the shorter realised schedule (ties: pofo's).
//!
//! Step 2 is the honest fallback "never worse than rotor" needs: on a row
//! where it wins, the schedule is rotor's, and `docs/RESULTS.md` says where.
//! The caller checks the schedule ([`crate::heuristic::run`]).
//!
//! Owns: the `pofo-as-run` heuristic. Must not import: the checker, exact
//! solvers, reports, the CLI.

use super::pofo::{Pofo, POFO_SLOTS};
use super::rotor::Rotor;
use super::{chain_any, DEFAULT_SLOTS};
use crate::family::InstanceFile;
use crate::heuristic::{Heuristic, HeuristicError};
use crate::model::Instance;
use crate::schedule::Schedule;
use crate::simulate::asap_sequence;
use crate::units::Ticks;

/// The programme's discretisation in `pofo-as-run`: twice the appendix's 50
/// slots (on ResNet-101 at 50 % it brings pofo from 3.7 % above rotor to
/// 2.3 % below it; 200 slots do better still but cost several times as long:
/// `docs/RESULTS.md`).
pub const RUN_SLOTS: u64 = 100;

/// The programme's work estimate at `slots` on a chain of `layers` layers
/// before the loss: (L + 2)² · slots³ (the forward states (i, x, A, Δ_F,
/// Δ_B) are (L + 2) · slots³ at most, each with up to L + 2 run ends).
/// Measured (release build, `offcert gap … --heuristic pofo-as-run`, CPU
/// seconds of the whole row): ResNet-152 at 100 slots (2.9·10⁹) 17 s,
/// DenseNet-121 at 50 slots (5.3·10⁸) 5.7 s.
pub fn work(layers: usize, slots: u64) -> u128 {
    let n = layers as u128 + 2;
    n * n * (slots as u128).pow(3)
}

/// The most work ([`work`]) `pofo-as-run` gives the programme: ResNet-101's
/// (35 layers) at [`RUN_SLOTS`], about 8 s of CPU. On longer chains the
/// slots shrink ([`run_slots`]: ResNet-152 77, DenseNet-121 68, DenseNet-169
/// 55, DenseNet-201 50), so that a row of `offcert gap` gets its heuristics
/// in seconds of CPU, not minutes (at 100 slots a ResNet-152 row took 150–290 s
/// of wall time on the loaded 2-core machine).
pub const RUN_MAX_WORK: u128 = 37 * 37 * 100 * 100 * 100;

/// The slots `pofo-as-run` solves the programme at on a chain of `layers`
/// layers: the most, up to `slots`, whose [`work`] is within `max_work`, and
/// never fewer than the appendix's [`POFO_SLOTS`].
pub fn run_slots(layers: usize, slots: u64, max_work: u128) -> u64 {
    let mut s = slots;
    while s > POFO_SLOTS && work(layers, s) > max_work {
        s -= 1;
    }
    s.max(POFO_SLOTS.min(slots))
}

/// `pofo-as-run` (see the module documentation).
#[derive(Clone, Debug)]
pub struct PofoAsRun {
    /// The programme (at most its `slots`: [`run_slots`] with `max_work`).
    pub pofo: Pofo,
    pub max_work: u128,
    pub rotor: Rotor,
}

impl Default for PofoAsRun {
    fn default() -> Self {
        PofoAsRun {
            pofo: Pofo {
                slots: RUN_SLOTS,
                ..Pofo::default()
            },
            max_work: RUN_MAX_WORK,
            rotor: Rotor {
                slots: DEFAULT_SLOTS,
            },
        }
    }
}

/// Which of the two candidates `pofo-as-run` returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunSource {
    /// The programme's own decisions, realised.
    Programme,
    /// Rotor's plan (the fallback).
    Rotor,
}

fn makespan(s: &Schedule) -> Ticks {
    s.events.iter().map(|e| e.end()).max().unwrap_or(Ticks(0))
}

impl PofoAsRun {
    /// The schedule and which candidate it is.
    pub fn schedule_with_source(
        &self,
        file: &InstanceFile,
        inst: &Instance,
    ) -> Result<(Schedule, RunSource), HeuristicError> {
        let c = chain_any("pofo-as-run", file)?;
        let coarse;
        let slots = run_slots(c.l(), self.pofo.slots, self.max_work);
        let pofo = if slots == self.pofo.slots {
            &self.pofo
        } else {
            coarse = Pofo {
                slots,
                ..self.pofo.clone()
            };
            &coarse
        };
        let own = match pofo.solve(c) {
            Some(plan) => asap_sequence(inst, &plan.sequence.plan).map_err(|e| {
                format!(
                    "plan not realisable under whole-tensor transfers (model value {:.1}): {e}",
                    plan.model_value
                )
            }),
            None => Err(format!(
                "the programme finds no sequence within {} slots",
                pofo.slots
            )),
        };
        let rotor = self.rotor.schedule(file, inst);
        match (own, rotor) {
            (Ok(p), Ok(r)) if makespan(&r) < makespan(&p) => Ok((r, RunSource::Rotor)),
            (Ok(p), _) => Ok((p, RunSource::Programme)),
            (Err(_), Ok(r)) => Ok((r, RunSource::Rotor)),
            (Err(e), Err(r)) => Err(HeuristicError::NoSchedule {
                heuristic: "pofo-as-run",
                reason: format!("{e}; rotor: {r}"),
            }),
        }
    }
}

impl Heuristic for PofoAsRun {
    fn name(&self) -> &'static str {
        "pofo-as-run"
    }
    fn applies(&self, file: &InstanceFile) -> bool {
        matches!(file, InstanceFile::RematChain(_))
    }
    fn schedule(&self, file: &InstanceFile, inst: &Instance) -> Result<Schedule, HeuristicError> {
        self.schedule_with_source(file, inst).map(|s| s.0)
    }
}
