//! The time-indexed MILP (`models/MILP.md`), solved with HiGHS through [`crate::lp`].
//!
//! Owns: the encoding of an instance for one horizon or period
//! (`structure`, `encode`), the decoder back to a [`Schedule`] (`decode`), the
//! solve strategy ([`solve`], [`refute`]) and the `.lp` export ([`write_lp`]).
//! Its scope is [`SCOPE`]: fixed orders, one-shot or cyclic, directly; a free
//! order through the `remat` reduction, which the door (`exact::solve`)
//! applies. Must not import: the other exact methods, the door, the
//! cross-check, the reductions, heuristics. good_lp and highs stay
//! inside [`crate::lp`]. Every schedule it returns has been replayed by
//! [`crate::check::check`]; a rejected one is an error, never a result.
//!
//! Strategy. Feasibility of one horizon H (one-shot: every event in [0, H]) or
//! one period P (cyclic) is a MILP, and it is monotone in H or P (EXACTNESS
//! §5). From the compute bound, frames are tried galloping upwards, then by
//! bisection: the least feasible frame is the optimum, every smaller one having
//! been refuted by HiGHS. One-shot searches are capped by a checked ASAP
//! schedule; without one (and for cyclic ones) by the structural bound of
//! EXACTNESS §4, whose refutation proves the instance infeasible.

mod cpu;
mod decode;
mod encode;
mod structure;

use super::scope::{Feature, Features, Reduction, Scope};
use super::{variants, ExactError, Limits, Method, Outcome, Status};
use crate::check::{check, Checked};
use crate::lp::{self, LpResult};
use crate::model::{Extension, Instance, TensorId};
use crate::schedule::Schedule;
use crate::simulate::{asap, Plan};
use crate::units::Ticks;
use encode::{Encoding, TooShort};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use structure::{Base, Structure};

/// What the MILP accepts: fixed orders, one-shot or cyclic; variant groups,
/// a slotted order and `after` where every op runs on the GPU (one MILP per
/// GPU op sequence that R11–R13 of models/MODEL.md allow:
/// `exact::variants`); a free order through the `remat` reduction (one MILP
/// per op sequence; several options per block included). Ops on the CPU of a
/// cyclic instance (OFFMATE's CPU Adam step) in the roles of `milp::cpu`
/// (proofs/EXACTNESS.md §3.12), without `after`. A CPU capacity only where no
/// schedule can reach it (`variants::unreachable_cpu_capacity`).
pub const SCOPE: Scope = Scope {
    encodes: &[
        Feature::Cyclic,
        Feature::Extension(Extension::Groups),
        Feature::Extension(Extension::Slots),
        Feature::Extension(Extension::After),
        Feature::CpuOps,
        Feature::CpuCapacity,
    ],
    reductions: &[Reduction::Remat],
};

/// Largest horizon or period (in slots) the MILP will build.
pub const MAX_HORIZON: i64 = 5000;

/// What a refutation attempt established about "some schedule has makespan
/// (period) ≤ below".
#[derive(Clone, Debug)]
pub enum Refutation {
    /// No such schedule exists (within the structural limits of EXACTNESS §3).
    Refuted,
    /// A checked schedule with makespan (period) ≤ below.
    Feasible(Checked),
    /// Time limit or interrupt.
    Unknown,
}

fn backend(m: impl Into<String>) -> ExactError {
    ExactError::Backend {
        method: Method::Milp,
        message: m.into(),
    }
}

/// Replay a decoded schedule; the checker's verdict is final.
fn checked(inst: &Instance, s: Schedule) -> Result<Checked, ExactError> {
    ExactError::checked(Method::Milp, inst, &s)
}

/// A checked schedule as the search's incumbent: the schedule and the checker's makespan.
fn incumbent(c: Checked) -> (Schedule, Ticks) {
    let m = c.makespan();
    (c.into_schedule(), m)
}

/// Run one HiGHS solve in a worker thread so that an interrupt (`limits.cancel`)
/// returns at once; progress lines go to stderr.
fn run_lp(
    lp: &lp::Lp,
    deadline: Instant,
    limits: &Limits,
    what: &str,
    start: Instant,
) -> Result<Option<LpResult>, ExactError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Ok(None);
    }
    let model = lp.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(model.solve(left));
    });
    let mut last = Instant::now();
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(r) => {
                return r.map(Some).map_err(|source| ExactError::Lp {
                    method: Method::Milp,
                    source,
                })
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(_) => return Err(backend("the HiGHS worker stopped")),
        }
        if limits.cancel.load(Ordering::SeqCst) {
            return Ok(None);
        }
        if limits.progress && last.elapsed() >= Duration::from_secs(5) {
            last = Instant::now();
            eprintln!(
                "milp: {:>7.1}s  solving {what}",
                start.elapsed().as_secs_f64()
            );
        }
    }
}

/// The structure of an instance inside [`SCOPE`]'s directly encoded
/// features (every entry point goes through here).
fn analyse(inst: &Instance) -> Result<Structure, ExactError> {
    SCOPE.direct(Method::Milp, inst)?;
    // Groups, slots and `after` reach the encoding as fixed orders (`solve`,
    // `exact::variants`); the other entry points refuse them.
    if let Some(&e) = inst.extensions().first() {
        return Err(ExactError::Unencoded {
            method: Method::Milp,
            feature: e.into(),
        });
    }
    inst.validate().map_err(|e| ExactError::Unsupported {
        method: Method::Milp,
        reason: e.to_string(),
    })?;
    Structure::analyse(inst)
}

fn check_horizon(h: i64) -> Result<(), ExactError> {
    if h > MAX_HORIZON {
        return Err(ExactError::HorizonTooLarge {
            method: Method::Milp,
            horizon: h,
            limit: MAX_HORIZON,
        });
    }
    Ok(())
}

/// A static proof of infeasibility: an op that cannot start within the
/// capacity even with every evictable tensor away.
fn memory_witness(inst: &Instance, st: &Structure) -> Option<String> {
    (0..st.n()).find(|&k| st.least_mem(k) > st.cap).map(|k| {
        format!(
            "op {} needs at least {} B at its start (its inputs, outputs, scratch and every tensor that cannot be away then), capacity {} B",
            inst.op(st.seq[k]).name,
            st.least_mem(k) as u128 * st.unit as u128,
            inst.machine.gpu_capacity.0
        )
    })
}

fn model_note(enc: &Encoding, what: &str) -> String {
    format!(
        "{what}: {} columns, {} rows, {} nonzeros",
        enc.lp.num_cols(),
        enc.lp.rows.len(),
        enc.lp.num_nonzeros()
    )
}

const LIMITS_NOTE: &str = "structural limits (proofs/EXACTNESS.md §3): fixed order, each op once; per tensor at most one eviction between two consecutive uses and one offload per value; transfers of minimal length";

/// The best checked schedule of the ASAP simulator over two plans (nothing
/// offloaded; every movable tensor offloaded), for a one-shot horizon.
fn heuristic_upper(inst: &Instance, st: &Structure) -> Option<(Schedule, Ticks)> {
    let movable: Vec<TensorId> = st.epochs.iter().map(|e| e.tensor).collect();
    let mut best: Option<(Schedule, Ticks)> = None;
    for plan in [
        Plan {
            offload: vec![],
            lookahead: None,
        },
        Plan {
            offload: movable,
            lookahead: None,
        },
    ] {
        if let Ok(s) = asap(inst, &plan) {
            let r = check(inst, &s);
            if r.valid && best.as_ref().is_none_or(|b| r.makespan < b.1) {
                best = Some((s, r.makespan));
            }
        }
    }
    best
}

/// The frame search of [`solve`]: every frame below `lo` is refuted; `best`
/// is the best checked schedule so far.
struct FrameSearch<'a> {
    /// The instance every schedule is checked on.
    inst: &'a Instance,
    /// One structure per op sequence: a frame is feasible iff one of them is.
    sts: Vec<&'a Structure>,
    limits: &'a Limits,
    start: Instant,
    deadline: Instant,
    /// "period" or "horizon".
    what: &'static str,
    lo: i64,
    best: Option<(Schedule, Ticks)>,
    /// The size note of the last model built.
    sizes: String,
    /// Interrupt or time limit.
    stopped: bool,
}

/// What one frame established.
enum Frame {
    Feasible((Schedule, Ticks)),
    Refuted,
    Stopped,
}

impl<'a> FrameSearch<'a> {
    /// A search from `lo` (every frame below it refuted) with incumbent `best`.
    fn new(
        inst: &'a Instance,
        sts: Vec<&'a Structure>,
        limits: &'a Limits,
        start: Instant,
        what: &'static str,
        lo: i64,
        best: Option<(Schedule, Ticks)>,
    ) -> FrameSearch<'a> {
        FrameSearch {
            inst,
            sts,
            limits,
            start,
            deadline: start + limits.time_limit,
            what,
            lo,
            best,
            sizes: String::new(),
            stopped: false,
        }
    }

    fn try_frame(&mut self, p: i64) -> Result<Frame, ExactError> {
        check_horizon(p)?;
        for st in self.sts.clone() {
            let enc = match Encoding::build(st, p, false) {
                Ok(e) => e,
                Err(TooShort) => continue,
            };
            let what = self.what;
            self.sizes = model_note(&enc, &format!("model at {what} {p}"));
            let res = run_lp(
                &enc.lp,
                self.deadline,
                self.limits,
                &format!("{what} {p}"),
                self.start,
            )?;
            match res {
                Some(LpResult::Optimal(x)) | Some(LpResult::Feasible(x)) => {
                    return Ok(Frame::Feasible(incumbent(checked(
                        self.inst,
                        decode::decode(st, &enc, &x),
                    )?)))
                }
                Some(LpResult::Infeasible) => {}
                Some(LpResult::Unknown) | None => return Ok(Frame::Stopped),
            }
        }
        Ok(Frame::Refuted)
    }

    fn keep(&mut self, found: (Schedule, Ticks)) {
        if self.best.as_ref().is_none_or(|b| found.1 < b.1) {
            self.best = Some(found);
        }
    }

    fn report(&self) {
        if self.limits.progress {
            eprintln!(
                "milp: {:>7.1}s  incumbent {}, bound {}",
                self.start.elapsed().as_secs_f64(),
                self.best
                    .as_ref()
                    .map(|b| b.1 .0.to_string())
                    .unwrap_or("-".into()),
                self.lo
            );
        }
    }

    /// Gallop up from the compute bound until a frame is feasible. `Ok(true)`:
    /// every frame up to `pmax` is refuted and no schedule is known.
    fn gallop(&mut self, pmax: i64) -> Result<bool, ExactError> {
        let mut step = 1;
        let mut p = self.lo;
        while self.best.as_ref().is_none_or(|b| self.lo < b.1 .0) {
            let cap = self.best.as_ref().map(|b| b.1 .0 - 1).unwrap_or(pmax);
            let q = p.min(cap);
            match self.try_frame(q)? {
                Frame::Feasible(found) => {
                    self.keep(found);
                    break;
                }
                Frame::Refuted => {
                    self.lo = q + 1;
                    if self.best.is_none() && q >= pmax {
                        return Ok(true);
                    }
                    p = q + step;
                    step *= 2;
                }
                Frame::Stopped => {
                    self.stopped = true;
                    break;
                }
            }
            self.report();
        }
        Ok(false)
    }

    /// Bisect between `lo` (everything below refuted) and the best schedule.
    fn bisect(&mut self) -> Result<(), ExactError> {
        while !self.stopped {
            let Some(hi) = self.best.as_ref().map(|b| b.1 .0) else {
                break;
            };
            if self.lo >= hi {
                break;
            }
            let mid = self.lo + (hi - self.lo) / 2;
            match self.try_frame(mid)? {
                Frame::Feasible(found) => {
                    self.keep(found);
                    // A feasible frame mid proves the optimum <= mid.
                    if self.best.as_ref().is_some_and(|b| b.1 .0 > mid) {
                        return Err(backend("decoded schedule longer than its frame"));
                    }
                }
                Frame::Refuted => self.lo = mid + 1,
                Frame::Stopped => self.stopped = true,
            }
            self.report();
        }
        Ok(())
    }
}

/// Minimise the makespan (one-shot) or the period (cyclic): the plain
/// solver, which the door (`exact::solve`) calls once the instance is in
/// [`SCOPE`]. Groups, slots and `after`: one MILP per GPU op sequence that
/// R11–R13 allow (`exact::variants`), the best kept.
pub(super) fn solve(inst: &Instance, limits: &Limits) -> Result<Outcome, ExactError> {
    if Features::of(inst).contains(Feature::CpuOps) {
        solve_jointly(inst, limits)
    } else if inst.extensions().is_empty() && !variants::unreachable_cpu_capacity(inst) {
        solve_fixed(inst, limits)
    } else {
        variants::solve_each(inst, limits, Method::Milp, solve_fixed)
    }
}

/// [`solve`] on an instance without groups, slots or `after`.
fn solve_fixed(inst: &Instance, limits: &Limits) -> Result<Outcome, ExactError> {
    let start = Instant::now();
    let st = analyse(inst)?;
    let mut notes = vec![LIMITS_NOTE.to_string()];
    let outcome = |status, schedule, bound, notes| Outcome {
        method: Method::Milp,
        status,
        schedule,
        bound,
        elapsed: start.elapsed(),
        notes,
    };
    if let Some(w) = memory_witness(inst, &st) {
        notes.push(format!("infeasible: {w}"));
        return Ok(outcome(Status::Infeasible, None, None, notes));
    }
    let compute: i64 = st.dur.iter().sum();
    // One-shot: a checked ASAP schedule caps the search; otherwise the
    // structural bound (EXACTNESS §4) does.
    let best = if st.cyclic {
        None
    } else {
        heuristic_upper(inst, &st)
    };
    let pmax = match &best {
        Some((_, m)) => m.0,
        None => st.horizon_bound(),
    };
    if let Some((_, m)) = &best {
        notes.push(format!("upper bound {m} from a checked ASAP schedule"));
    }
    let what = if st.cyclic { "period" } else { "horizon" };
    let lo = if st.cyclic { compute.max(1) } else { compute };
    let mut search = FrameSearch::new(inst, vec![&st], limits, start, what, lo, best);
    if search.gallop(pmax)? {
        notes.push(search.sizes.clone());
        notes.push(format!(
            "infeasible: every {what} up to the structural bound {pmax} is refuted (EXACTNESS §4)"
        ));
        return Ok(outcome(Status::Infeasible, None, None, notes));
    }
    search.bisect()?;
    let lo = search.lo;
    if !search.sizes.is_empty() {
        notes.push(search.sizes);
    }
    notes.push(format!("every {what} below {lo} refuted by HiGHS"));
    if search.stopped {
        notes.push("stopped (interrupt or time limit) before the search closed".into());
    }
    Ok(match search.best {
        Some((s, m)) if m.0 <= lo => outcome(Status::Optimal, Some(s), Some(m), notes),
        Some((s, _)) => outcome(Status::Feasible, Some(s), Some(Ticks(lo)), notes),
        None => outcome(Status::Unknown, None, Some(Ticks(lo)), notes),
    })
}

/// [`solve`] on an instance with ops on the CPU: the op sequences that
/// R11–R13 allow (`exact::variants`, the CPU orders included), each a
/// fixed-order MILP, searched frame by frame all at once: a period is
/// feasible iff one sequence's model is (feasibility is monotone in the
/// period for each, EXACTNESS §5, so for their union too). Unlike
/// sequence by sequence, no infeasible sequence is galloped up to its
/// structural bound while another one has a schedule.
fn solve_jointly(inst: &Instance, limits: &Limits) -> Result<Outcome, ExactError> {
    let start = Instant::now();
    let seqs = variants::sequences(inst, Method::Milp)?;
    let mut fixed = vec![];
    let mut refused: Option<ExactError> = None;
    // The least compute of a sequence outside the method's limits: a lower
    // bound on what it could reach (one stream per device, R2, R8).
    let mut refused_lo: Option<i64> = None;
    let mut witnessed = 0;
    for seq in &seqs {
        let fi = variants::fixed(inst, seq);
        match analyse(&fi) {
            Ok(st) if memory_witness(&fi, &st).is_some() => witnessed += 1,
            Ok(st) => fixed.push(st),
            Err(e @ ExactError::Unsupported { .. }) => {
                refused.get_or_insert(e);
                let c = variants::compute_bound(inst, seq).max(1);
                refused_lo = Some(refused_lo.map_or(c, |r| r.min(c)));
            }
            Err(e) => return Err(e),
        }
    }
    if fixed.is_empty() {
        if let Some(e) = refused {
            return Err(e);
        }
    }
    let mut notes = vec![
        LIMITS_NOTE.to_string(),
        format!(
            "variants (R11-R13): {} op sequences meet the groups, precedences and data; {} ruled out by memory alone, {} encoded and searched together, {} outside the method's limits",
            seqs.len(),
            witnessed,
            fixed.len(),
            seqs.len() - witnessed - fixed.len()
        ),
    ];
    let outcome = |status, schedule, bound, notes| Outcome {
        method: Method::Milp,
        status,
        schedule,
        bound,
        elapsed: start.elapsed(),
        notes,
    };
    let Some(lo) = fixed.iter().map(|st| st.least_period()).min() else {
        notes.push("infeasible: no op sequence fits the memory (EXACTNESS §4)".into());
        return Ok(outcome(Status::Infeasible, None, None, notes));
    };
    let pmax = fixed
        .iter()
        .map(|st| st.horizon_bound())
        .max()
        .unwrap_or(lo);
    let sts = fixed.iter().collect();
    let mut search = FrameSearch::new(inst, sts, limits, start, "period", lo, None);
    if search.gallop(pmax)? && refused.is_none() {
        notes.push(search.sizes.clone());
        notes.push(format!(
            "infeasible: every period up to the structural bound {pmax} is refuted for every sequence (EXACTNESS §4)"
        ));
        return Ok(outcome(Status::Infeasible, None, None, notes));
    }
    search.bisect()?;
    let lo = search.lo;
    notes.push(search.sizes);
    notes.push(format!("every period below {lo} refuted by HiGHS"));
    if let Some(e) = &refused {
        notes.push(format!("not settled: {e}"));
    }
    if search.stopped {
        notes.push("stopped (interrupt or time limit) before the search closed".into());
    }
    // Every encoded sequence is refuted below lo; a refused one only below
    // its compute.
    let bound = refused_lo.map_or(lo, |r| r.min(lo));
    Ok(match search.best {
        Some((s, m)) if m.0 <= bound => outcome(Status::Optimal, Some(s), Some(m), notes),
        Some((s, _)) => outcome(Status::Feasible, Some(s), Some(Ticks(bound)), notes),
        None => outcome(Status::Unknown, None, Some(Ticks(bound)), notes),
    })
}

/// Is there a schedule with makespan (period) ≤ `below`? The MILP's own
/// refutation, used by the cross-check beside z3's.
pub fn refute(inst: &Instance, below: Ticks, limits: &Limits) -> Result<Refutation, ExactError> {
    let start = Instant::now();
    let st = analyse(inst)?;
    if memory_witness(inst, &st).is_some() || below.0 < 1 && st.cyclic {
        return Ok(Refutation::Refuted);
    }
    if below.0 < 0 {
        return Ok(Refutation::Refuted);
    }
    check_horizon(below.0)?;
    let enc = match Encoding::build(&st, below.0, false) {
        Ok(e) => e,
        Err(TooShort) => return Ok(Refutation::Refuted),
    };
    let deadline = start + limits.time_limit;
    Ok(
        match run_lp(&enc.lp, deadline, limits, "refutation", start)? {
            Some(LpResult::Infeasible) => Refutation::Refuted,
            Some(LpResult::Optimal(x)) | Some(LpResult::Feasible(x)) => {
                Refutation::Feasible(checked(inst, decode::decode(&st, &enc, &x))?)
            }
            _ => Refutation::Unknown,
        },
    )
}

/// Write the model for horizon (period) `frame` in CPLEX LP format. With
/// `optimise` (one-shot only) the objective is the makespan; otherwise it is a
/// feasibility model, whose infeasibility at T*−1 any MILP solver can re-check.
pub fn write_lp(
    inst: &Instance,
    frame: Ticks,
    optimise: bool,
    path: &std::path::Path,
) -> Result<(), ExactError> {
    let st = analyse(inst)?;
    check_horizon(frame.0)?;
    let comment = format!(
        "offcert time-indexed MILP (models/MILP.md) for instance `{}`\n{} {}; {}\n{}",
        inst.name,
        if st.cyclic {
            "period P ="
        } else {
            "horizon H ="
        },
        frame.0,
        if optimise {
            "objective: makespan"
        } else {
            "feasibility model: infeasible <=> no schedule fits"
        },
        "memory in units of the gcd of all sizes; variables s_k_u: op k starts at u"
    );
    let text = match Encoding::build(&st, frame.0, optimise) {
        Ok(enc) => enc.lp.to_lp_string(&comment),
        // Too short for the ops alone: an explicitly infeasible model.
        Err(TooShort) => format!(
            "\\ {}\n\\ the frame is shorter than the total compute or an op's memory\nMinimize\n obj: + 0 zero_column\nSubject To\n too_short: + 1 zero_column >= 1\nBounds\n 0 <= zero_column <= 0\nEnd\n",
            comment.replace('\n', "\n\\ ")
        ),
    };
    std::fs::write(path, text).map_err(|e| backend(format!("{}: {e}", path.display())))
}

/// How many persistent tensors and windows the encoding has (for notes/tests).
pub fn describe(inst: &Instance) -> Result<String, ExactError> {
    let st = analyse(inst)?;
    let persistent = st.base.iter().filter(|b| **b == Base::Always).count();
    Ok(format!(
        "{} ops, {} windows, {} epochs, {} persistent tensors, memory unit {} B",
        st.n(),
        st.windows.len(),
        st.epochs.len(),
        persistent,
        st.unit
    ))
}
