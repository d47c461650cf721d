//! Exact method (b): SMT through z3. Integer start times, disjunctive ordering on
//! the compute stream and on each transfer channel, GPU memory checked at every
//! allocation instant; minimised by tightening the bound until "C ≤ T*−1" is
//! unsatisfiable.
//!
//! Owns: [`SCOPE`], the SMT encoding (z3-free SMT-LIB2 text: `plan` the
//! tensors' plans, `encode` the constraints and the text, `decode` a model back
//! to a schedule), the z3 driver (every z3 call of the crate lives in this
//! file), [`solve`] and [`write_refutation`].
//! Must not import: the MILP, the search, the door, the cross-check, the
//! reductions, heuristics. Each schedule found is
//! decoded into a [`Schedule`](crate::schedule::Schedule) and replayed by
//! [`crate::check::check`] before its makespan is used.
//!
//! The in-process solver reads exactly the text that [`write_refutation`] writes,
//! so a certificate re-checks the very formula the solver refuted.
//! Scope and exactness: `models/SMT.md`, `proofs/SMT.md`.

mod decode;
mod encode;
mod plan;

use crate::exact::scope::{Feature, Scope};
use crate::exact::{ExactError, Limits, Method, Outcome, Status};
use crate::model::Instance;
use crate::schedule::Schedule;
use crate::units::Ticks;
use encode::Encoding;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};
use z3::ast::{Bool, Int};
use z3::{Config, Context, Params, SatResult, Solver};

fn backend(message: impl Into<String>) -> ExactError {
    ExactError::Backend {
        method: Method::Smt,
        message: message.into(),
    }
}

/// What the SMT encoding accepts: fixed orders, one-shot or cyclic. No
/// reduction: a free order is refused.
pub const SCOPE: Scope = Scope {
    encodes: &[Feature::Cyclic],
    reductions: &[],
};

/// The encoding of an instance inside [`SCOPE`] (every entry point builds
/// it here).
fn encoding(inst: &Instance) -> Result<Encoding, ExactError> {
    SCOPE.direct(Method::Smt, inst)?;
    Encoding::new(inst)
}

/// Minimise the makespan (one-shot) or period (cyclic) of `inst`: the plain
/// solver, which the door (`exact::solve`) calls once the instance is in
/// [`SCOPE`].
///
/// Returns `Optimal` with `bound = T*` once "C ≤ T*−1" is refuted, `Infeasible`
/// when no schedule exists at all, `Feasible` (best schedule, no proven bound)
/// or `Unknown` when the time limit or a cancel stops it first.
pub(super) fn solve(inst: &Instance, limits: &Limits) -> Result<Outcome, ExactError> {
    let started = Instant::now();
    let enc = encoding(inst)?;
    let mut notes = vec![
        enc.summary(),
        "structural limits: one eviction per gap between reads, one offload per value version, transfers at full bandwidth (proofs/SMT.md)".to_string(),
    ];
    let mut cfg = Config::new();
    cfg.set_model_generation(true);
    let ctx = Context::new(&cfg);
    let solver = Solver::new(&ctx);
    solver.from_string(enc.body());
    if solver.get_assertions().is_empty() {
        return Err(backend("z3 did not accept the generated SMT-LIB2 text"));
    }
    let consts = enc.constants();

    // One-shot: a checked earliest-start schedule is the first incumbent, so an
    // interrupt always has a schedule to return and z3 starts below it.
    let seed = seed_incumbent(inst);
    if let Some((m, _)) = &seed {
        notes.push(format!("first incumbent {m} from a checked ASAP schedule"));
        if limits.progress {
            eprintln!("smt: {:>7.2}s  incumbent {m}  (checked ASAP schedule)", 0.0);
        }
    }
    let finished = AtomicBool::new(false);
    let run = Run {
        inst,
        enc: &enc,
        limits,
        started,
        deadline: started + limits.time_limit,
        // The bound z3 is asked about (C ≤ target), for the heartbeat; -1 = none.
        target: AtomicI64::new(seed.as_ref().map_or(-1, |(m, _)| m.0 - 1)),
    };
    let handle = ctx.handle();
    let result = std::thread::scope(|sc| {
        // z3's own timeout covers a check; this watcher also honours Ctrl-C and
        // reports progress while z3 works on one check.
        sc.spawn(|| run.watch(&finished, &handle));
        let r = run.tighten(&ctx, &solver, &consts, seed);
        finished.store(true, Ordering::Relaxed);
        r
    });
    let (status, schedule, bound) = result?;
    if status == Status::Unknown || status == Status::Feasible {
        notes.push(format!(
            "stopped after {:.1}s ({})",
            started.elapsed().as_secs_f64(),
            if limits.cancel.load(Ordering::Relaxed) {
                "cancelled"
            } else {
                "time limit"
            }
        ));
    }
    Ok(Outcome {
        method: Method::Smt,
        status,
        schedule,
        bound,
        elapsed: started.elapsed(),
        notes,
    })
}

/// One minimisation: the instance, its encoding, the limits and the bound z3
/// is currently asked about.
struct Run<'a> {
    inst: &'a Instance,
    enc: &'a Encoding,
    limits: &'a Limits,
    started: Instant,
    deadline: Instant,
    target: AtomicI64,
}

/// What the tightening loop established.
type Found = (Status, Option<Schedule>, Option<Ticks>);

impl Run<'_> {
    /// Has the watcher interrupted (or will it interrupt) z3: the deadline
    /// passed, or the run was cancelled?
    fn interrupted(&self) -> bool {
        Instant::now() >= self.deadline || self.limits.cancel.load(Ordering::Relaxed)
    }

    /// Interrupt z3 on Ctrl-C or at the deadline; a heartbeat every 5 s.
    fn watch(&self, finished: &AtomicBool, handle: &z3::ContextHandle) {
        let mut last = Instant::now();
        while !finished.load(Ordering::Relaxed) {
            if self.interrupted() {
                handle.interrupt();
            }
            if self.limits.progress && last.elapsed() >= Duration::from_secs(5) {
                last = Instant::now();
                let t = self.target.load(Ordering::Relaxed);
                eprintln!(
                    "smt: {:>7.2}s  solving C <= {}",
                    self.started.elapsed().as_secs_f64(),
                    if t < 0 {
                        "∞".to_string()
                    } else {
                        t.to_string()
                    }
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Ask for C ≤ best − 1 until z3 refutes it (optimal, or infeasible
    /// without any schedule), stops, or the limits end the run.
    fn tighten(
        &self,
        ctx: &Context,
        solver: &Solver,
        consts: &[(String, bool)],
        seed: Option<(Ticks, Schedule)>,
    ) -> Result<Found, ExactError> {
        let c = Int::new_const(ctx, "C");
        let mut best: Option<(Ticks, Schedule)> = seed;
        loop {
            let now = Instant::now();
            if now >= self.deadline || self.limits.cancel.load(Ordering::Relaxed) {
                break;
            }
            if let Some((b, _)) = &best {
                solver.assert(&c.le(&Int::from_i64(ctx, b.0 - 1)));
                self.target.store(b.0 - 1, Ordering::Relaxed);
            }
            let mut params = Params::new(ctx);
            let left = (self.deadline - now).as_millis().clamp(1, u32::MAX as u128) as u32;
            params.set_u32("timeout", left);
            solver.set_params(&params);
            match solver.check() {
                SatResult::Sat => {
                    let Some(model) = solver.get_model() else {
                        // The watcher interrupts z3 at the deadline or on Ctrl-C;
                        // an interrupt that lands between `check` and
                        // `get_model` leaves a sat answer with no model. That is
                        // the run stopping, not a solver failure (seen under
                        // load in tests/agreement.rs).
                        if self.interrupted() {
                            break;
                        }
                        return Err(backend("sat without a model"));
                    };
                    let (ms, sched) = self.checked_model(ctx, consts, &model)?;
                    if best.as_ref().is_some_and(|(b, _)| ms >= *b) {
                        return Err(backend(format!(
                            "tightening did not decrease the makespan ({ms} after {})",
                            best.as_ref().map(|b| b.0 .0).unwrap_or(0)
                        )));
                    }
                    if self.limits.progress {
                        eprintln!(
                            "smt: {:>7.2}s  incumbent {}  (checker-validated)",
                            self.started.elapsed().as_secs_f64(),
                            ms
                        );
                    }
                    best = Some((ms, sched));
                }
                SatResult::Unsat => {
                    if self.limits.progress {
                        eprintln!(
                            "smt: {:>7.2}s  refuted C <= {}",
                            self.started.elapsed().as_secs_f64(),
                            best.as_ref()
                                .map(|b| b.0 .0 - 1)
                                .map_or("∞".into(), |x| x.to_string())
                        );
                    }
                    return Ok(match best {
                        Some((b, s)) => (Status::Optimal, Some(s), Some(b)),
                        None => (Status::Infeasible, None, None),
                    });
                }
                SatResult::Unknown => break,
            }
        }
        Ok(match best {
            Some((_, s)) => (Status::Feasible, Some(s), None),
            None => (Status::Unknown, None, None),
        })
    }

    /// The schedule of a z3 model, replayed by the checker; its makespan.
    fn checked_model(
        &self,
        ctx: &Context,
        consts: &[(String, bool)],
        model: &z3::Model,
    ) -> Result<(Ticks, Schedule), ExactError> {
        let ints = |name: &str| {
            if !consts.iter().any(|(n, b)| n == name && !b) {
                return None;
            }
            model.eval(&Int::new_const(ctx, name), true)?.as_i64()
        };
        let bools = |name: &str| model.eval(&Bool::new_const(ctx, name), true)?.as_bool();
        let sched = self
            .enc
            .decode(&(ints, bools))
            .ok_or_else(|| backend("model lacks a value for a decision constant"))?;
        let checked = ExactError::checked(Method::Smt, self.inst, &sched)?;
        let report = checked.report();
        Ok((report.makespan, sched))
    }
}

/// The better checked schedule of the earliest-start simulator over two plans
/// (offload nothing; offload every transferable tensor), one-shot only.
fn seed_incumbent(inst: &Instance) -> Option<(Ticks, crate::schedule::Schedule)> {
    use crate::simulate::{asap, Plan};
    if inst.mode == crate::model::Mode::Cyclic {
        return None;
    }
    let all: Vec<crate::model::TensorId> = (0..inst.tensors.len())
        .map(|i| crate::model::TensorId(i as u32))
        .filter(|t| inst.tensor(*t).transferable)
        .collect();
    let mut best: Option<(Ticks, crate::schedule::Schedule)> = None;
    for offload in [vec![], all] {
        let plan = Plan {
            offload,
            lookahead: None,
        };
        if let Ok(s) = asap(inst, &plan) {
            let r = crate::check::check(inst, &s);
            if r.valid && best.as_ref().is_none_or(|b| r.makespan < b.0) {
                best = Some((r.makespan, s));
            }
        }
    }
    best
}

/// The certificate text: satisfiable iff a schedule with makespan (period)
/// ≤ `below` exists within the encoding's scope.
pub fn refutation_text(inst: &Instance, below: Ticks) -> Result<String, ExactError> {
    let enc = encoding(inst)?;
    let json = serde_json::to_vec(inst).map_err(|e| backend(e.to_string()))?;
    let what = if inst.mode == crate::model::Mode::Cyclic {
        "period"
    } else {
        "makespan"
    };
    let mut out = String::new();
    out.push_str("; offcert SMT certificate (pure integer, QF_LIA)\n");
    out.push_str(&format!(
        "; instance: {} (family {})\n",
        inst.name, inst.family
    ));
    out.push_str(&format!(
        "; instance sha256 (canonical JSON of the compiled instance): {}\n",
        crate::check::sha256_bytes(&json)
    ));
    out.push_str(&format!(
        "; This formula is satisfiable iff a schedule with {what} C <= {} exists\n",
        below.0
    ));
    out.push_str(
        "; (encoding: models/SMT.md; why its structural limits lose no optimum: proofs/SMT.md).\n",
    );
    out.push_str(&format!(
        "; `unsat` proves that no schedule has {what} <= {}.\n",
        below.0
    ));
    out.push_str(&format!("; memory unit: {} bytes\n", enc.unit));
    out.push_str("(set-logic QF_LIA)\n");
    out.push_str(&enc.body());
    out.push_str(&format!("(assert (<= C {}))\n", below.0));
    out.push_str("(check-sat)\n(exit)\n");
    Ok(out)
}

/// Write the certificate for "no schedule has makespan (period) ≤ `below`" to
/// `path`; re-check it with `z3 FILE` or `cvc5 FILE` (expected answer: `unsat`).
pub fn write_refutation(inst: &Instance, below: Ticks, path: &Path) -> Result<(), ExactError> {
    let text = refutation_text(inst, below)?;
    std::fs::write(path, text).map_err(|e| backend(format!("writing {}: {e}", path.display())))
}
