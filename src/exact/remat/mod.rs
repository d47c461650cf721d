//! Exact optima of `remat_chain` instances (free order: optional forward
//! variants `F{ℓ}` / `Fall{ℓ}` run any number of times, explicit deletes,
//! re-production after a release).
//!
//! The free order is reduced to fixed orders (`proofs/REMAT-EXACT.md`): every
//! op sequence within the structural limits is enumerated ([`sequences`]),
//! cheapest compute first; each is renamed into a fixed-order instance (one op
//! per run, one tensor per value) and solved by a fixed-order method (the
//! search or the MILP, unchanged); its schedule is mapped back (value →
//! tensor, a last reader's release → an explicit delete at its end) and
//! replayed by the checker on the original instance. A sequence whose compute
//! is not below the best makespan found cannot beat it (one GPU stream), which
//! ends the loop.
//!
//! Owns: the reduction, its limits and its notes. Which instances it takes is
//! data ([`Reduction::Remat`]'s features, checked first by [`scope`]); the
//! door (`exact::solve`) routes a method here when its scope lists the
//! reduction. Must not import: the methods, the door, the cross-check (the
//! door passes the method's plain solver in), heuristics, bounds.

pub mod sequences;

use super::scope::{Features, Reduction};
use super::{ExactError, Limits, Method, Outcome, SolveFn, Status};
use crate::check::{check, CheckOutcome};
use crate::model::{Instance, ReleaseRule};
use crate::schedule::{Event, Schedule};
use crate::units::Ticks;
use sequences::{enumerate_with, rename, Layout, Renamed, Sequence, SequenceLimits, MAX_SEQUENCES};
use std::sync::atomic::Ordering;
use std::time::Instant;

/// The structural limits, as printed in every outcome's notes.
pub const LIMITS_NOTE: &str = "remat_chain reduced to fixed op sequences (proofs/REMAT-EXACT.md): each backward runs once; exactly one F_all per layer; every value a forward produces is read before it is produced again or the schedule ends; a value is released at the end of its last reader at the latest; layers' ops of positive duration; after_end; within each sequence the fixed-order method's own limits";

/// What an optimum (or infeasibility) of a free-order instance means, in the
/// words reports print beside it.
pub const SCOPE_WORDS: &str = "within the op-sequence limits of proofs/REMAT-EXACT.md (each backward once; between two backwards, forwards in increasing layer order; every forward's value read)";

/// [`SCOPE_WORDS`] where limit 4 was relaxed (`SequenceLimits::default_for`).
pub const SCOPE_WORDS_RELAXED: &str = "within the op-sequence limits of proofs/REMAT-EXACT.md (each backward once; between two backwards, forwards in any order, each layer's at most twice; every forward's value read)";

/// The note an outcome carries when limit 4 was relaxed.
pub const RELAXED_NOTE: &str = "limit 4 relaxed";

/// The note an `Infeasible` outcome carries when every op sequence within the
/// limits was refuted: no schedule exists *within the limits*, which is no
/// proof that none exists (a sequence outside them may have one). Only the
/// footprint argument (an op every schedule runs does not fit) proves
/// infeasibility over every schedule; its note starts with `infeasible:`.
pub const NONE_WITHIN_LIMITS_NOTE: &str = "no schedule within the op-sequence limits";

fn unsupported(method: Method, reason: impl Into<String>) -> ExactError {
    ExactError::Unsupported {
        method,
        reason: reason.into(),
    }
}

/// The scope test: the features the reduction takes (one-shot; variant
/// groups only as several options per block compile them, `bwd{ℓ}`), then a
/// compiled `remat_chain`, the default release rule, every op of a layer of
/// positive duration.
pub fn scope(inst: &Instance, method: Method) -> Result<Layout, ExactError> {
    Features::of(inst).within(Reduction::Remat.accepts(), method)?;
    let lay = Layout::recognise(inst, method)?;
    if inst.release != ReleaseRule::AfterEnd {
        return Err(unsupported(
            method,
            "free order under the relaxation after_start (a last reader's inputs could go one tick after its start; not encoded)",
        ));
    }
    for k in 1..=lay.l {
        let opts = lay.options(k).iter().flat_map(|&(f, b, _)| [f, b]);
        for op in std::iter::once(lay.f(k)).chain(opts) {
            if inst.op(op).duration.0 <= 0 {
                return Err(unsupported(
                    method,
                    format!(
                        "{} has duration 0: the release of its input at its own instant is not a delete (MODEL.md §2.4)",
                        inst.op(op).name
                    ),
                ));
            }
        }
    }
    Ok(lay)
}

/// A renamed sequence's schedule on the original instance.
pub fn map_back(r: &Renamed, s: &Schedule) -> Schedule {
    let mut events = vec![];
    for e in &s.events {
        match *e {
            Event::Compute { op, start, end } => {
                events.push(Event::Compute {
                    op: r.op_of[op.ix()],
                    start,
                    end,
                });
                for t in &r.deletes_after[op.ix()] {
                    events.push(Event::Delete {
                        tensor: *t,
                        at: end,
                    });
                }
            }
            Event::Transfer {
                dir,
                tensor,
                start,
                end,
                delete,
            } => events.push(Event::Transfer {
                dir,
                tensor: r.tensor_of[tensor.ix()],
                start,
                end,
                delete,
            }),
            Event::Delete { tensor, at } => events.push(Event::Delete {
                tensor: r.tensor_of[tensor.ix()],
                at,
            }),
        }
    }
    Schedule::one_shot(events)
}

/// Whether a fixed-order instance has a schedule of makespan at most a bound
/// (a method's one-frame refutation, where it has one).
pub enum Below {
    Refuted,
    Found,
    Unknown,
}

/// A method's one-frame refutation: is there a schedule of makespan ≤ the bound?
pub type BelowFn = fn(&Instance, Ticks, &Limits) -> Result<Below, ExactError>;

/// What the loop over sequences established.
struct Tally {
    best: Option<(Ticks, Schedule)>,
    /// Least compute of a sequence not settled (stopped, or `Unknown`).
    open_from: Option<i64>,
    solved: usize,
    infeasible: usize,
    /// Sequences refuted below the best makespan in one frame.
    refuted: usize,
}

/// Solve `inst` (a free-order `remat_chain`) with the fixed-order plain
/// solver `fixed` of `method` (and its one-frame refutation `below`, if any),
/// over the sequences of `seq_limits` (limit 4 kept or relaxed).
pub fn solve_with(
    inst: &Instance,
    limits: &Limits,
    (method, fixed, below): (Method, SolveFn, Option<BelowFn>),
    seq_limits: SequenceLimits,
) -> Result<Outcome, ExactError> {
    let started = Instant::now();
    let lay = scope(inst, method)?;
    let mut notes = vec![LIMITS_NOTE.to_string()];
    if !seq_limits.forwards_in_order {
        notes.push(format!(
            "{RELAXED_NOTE}: forwards between two backwards in any order, each layer's at most {} times per stretch",
            sequences::RELAXED_RUNS_PER_STRETCH
        ));
    }
    if let Some(why) = too_big(inst, &lay) {
        notes.push(why);
        return Ok(outcome(
            method,
            Status::Infeasible,
            None,
            None,
            started,
            notes,
        ));
    }
    let Some(seqs) = enumerate_with(inst, &lay, i64::MAX, seq_limits) else {
        notes.push(format!(
            "more than {MAX_SEQUENCES} op sequences; not searched"
        ));
        return Ok(outcome(method, Status::Unknown, None, None, started, notes));
    };
    let total = seqs.len();
    let t = settle(inst, &seqs, limits, (method, fixed, below), started)?;
    notes.push(format!(
        "{total} op sequences within the limits; {} solved ({} infeasible), {} refuted below the best makespan, the rest not cheaper in compute than it",
        t.solved, t.infeasible, t.refuted
    ));
    let (status, schedule, bound) = match (t.best, t.open_from) {
        (Some((ms, s)), None) => (Status::Optimal, Some(s), Some(ms)),
        (None, None) => {
            notes.push(format!(
                "{NONE_WITHIN_LIMITS_NOTE}: each of the {total} sequences is infeasible; a sequence outside the limits may have a schedule"
            ));
            (Status::Infeasible, None, None)
        }
        (Some((ms, s)), Some(lo)) => (Status::Feasible, Some(s), Some(Ticks(lo.min(ms.0)))),
        (None, Some(lo)) => (Status::Unknown, None, Some(Ticks(lo))),
    };
    Ok(outcome(method, status, schedule, bound, started, notes))
}

/// Every schedule runs, per layer, the B_ℓ and the F_all ℓ of one option
/// (proofs/REMAT-BOUNDS.md, fact 1; R11 for a block with several options),
/// each with its whole footprint on the GPU at its start (R1, R7): why none
/// fits, naming the op of the option that needs least, if so.
fn too_big(inst: &Instance, lay: &Layout) -> Option<String> {
    let cap = inst.machine.gpu_capacity;
    for k in 1..=lay.l + 1 {
        let need = |&(f, b, _): &(crate::model::OpId, crate::model::OpId, _)| {
            [f, b]
                .into_iter()
                .map(|op| (crate::semantics::op_footprint(inst, op), op))
                .max()
        };
        let least = lay.options(k).iter().filter_map(need).min()?;
        if least.0 > cap {
            return Some(format!(
                "infeasible: {} needs {} B on the GPU, more than the {} B of memory",
                inst.op(least.1).name,
                least.0 .0,
                cap.0
            ));
        }
    }
    None
}

fn outcome(
    method: Method,
    status: Status,
    schedule: Option<Schedule>,
    bound: Option<Ticks>,
    started: Instant,
    notes: Vec<String>,
) -> Outcome {
    Outcome {
        method,
        status,
        schedule,
        bound,
        elapsed: started.elapsed(),
        notes,
    }
}

/// Solve the sequences cheapest first until none can beat the best makespan.
fn settle(
    inst: &Instance,
    seqs: &[Sequence],
    limits: &Limits,
    (method, fixed, below): (Method, SolveFn, Option<BelowFn>),
    started: Instant,
) -> Result<Tally, ExactError> {
    let mut t = Tally {
        best: None,
        open_from: None,
        solved: 0,
        infeasible: 0,
        refuted: 0,
    };
    for seq in seqs {
        if t.best.as_ref().is_some_and(|(ms, _)| seq.compute >= ms.0) {
            break;
        }
        let left = limits.time_limit.saturating_sub(started.elapsed());
        if limits.cancel.load(Ordering::Relaxed) || left.is_zero() {
            t.open_from = Some(t.open_from.map_or(seq.compute, |x| x.min(seq.compute)));
            break;
        }
        let r = rename(inst, &seq.ops);
        let sub = Limits {
            time_limit: left,
            cancel: limits.cancel.clone(),
            progress: false,
        };
        if let (Some(bf), Some((ms, _))) = (below, &t.best) {
            match bf(&r.inst, Ticks(ms.0 - 1), &sub)? {
                Below::Refuted => {
                    t.refuted += 1;
                    continue;
                }
                Below::Unknown => {
                    t.open_from = Some(t.open_from.map_or(seq.compute, |x| x.min(seq.compute)));
                    continue;
                }
                Below::Found => {}
            }
        }
        let o = fixed(&r.inst, &sub)?;
        t.solved += 1;
        match o.status {
            Status::Infeasible => t.infeasible += 1,
            Status::Optimal => {}
            Status::Feasible | Status::Unknown => {
                let lo = o.bound.map_or(seq.compute, |b| b.0.max(seq.compute));
                t.open_from = Some(t.open_from.map_or(lo, |x| x.min(lo)));
            }
        }
        if let Some(s) = o.schedule {
            let mapped = map_back(&r, &s);
            let ms = match check(inst, &mapped) {
                CheckOutcome::Valid(c) => c.report().makespan,
                CheckOutcome::Invalid(rej) => {
                    return Err(ExactError::CheckerRejected {
                        method,
                        rejected: Box::new(rej),
                    })
                }
            };
            if t.best.as_ref().is_none_or(|(b, _)| ms < *b) {
                t.best = Some((ms, mapped));
            }
        }
    }
    Ok(t)
}
