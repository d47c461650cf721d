//! The certified checker: replays a schedule against the rules of
//! [`crate::semantics`] as one event sweep (O(n log n) in the number of events)
//! and returns a [`CheckOutcome`]: a [`Checked`] schedule (only this module can
//! build one) or the [`Rejected`] schedule with every violation and its witness;
//! both carry the full [`Report`] of measurements.
//!
//! Owns: the sweep, the resource-overlap scan, the verdict, [`Checked`],
//! [`Certificate`].
//! Must not import: solvers (`exact`), heuristics, bounds, good_lp, z3. A test
//! (`tests/isolation.rs`) enforces this.
//!
//! Same-instant convention (models/MODEL.md §2.4): at one instant, transfer
//! completions come first, then op completions, then deletes (all releases), then
//! op starts, then transfer starts (allocations). A zero-duration op or transfer
//! starts and ends at once, in the allocation phase (zero-duration ops before
//! others, then in file order). Memory is measured after every allocation, so the
//! instantaneous need of a zero-duration op counts too.

mod completeness;
mod confirm;
mod digest;
mod measure;
mod profile;
mod resources;
mod static_rules;
mod steady;
mod sweep;
mod unroll;
mod violation;
mod window;
mod witness;

pub use digest::{instance_digest, schedule_digest};

pub use profile::MemoryProfile;
pub use violation::{Violation, Warning, WITNESS_LIST_CAP};

use crate::model::{Allocator, Channel, Instance, ReleaseRule};
use crate::schedule::Schedule;
use crate::units::{Bytes, Ticks};
use completeness::order_rules;
use measure::Measured;
use resources::overlaps;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use static_rules::static_rules;
use steady::steady_rules;
use sweep::Sweep;
use unroll::{actions, unroll, uses};
use window::Window;

/// Proof that a schedule passed the exact replay, carried by [`Checked`]. Only
/// [`check`] builds one, so code that takes `&Certificate` cannot show an
/// unchecked makespan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Certificate {
    makespan: Ticks,
    cyclic: bool,
    release: ReleaseRule,
    /// The allocator R7 counted with (stated only when not `exact`).
    #[serde(skip_serializing_if = "Allocator::is_default")]
    allocator: Allocator,
    instance_sha256: String,
    schedule_sha256: String,
}

impl Certificate {
    /// The validated makespan (one-shot) or period (cyclic).
    pub fn makespan(&self) -> Ticks {
        self.makespan
    }
    pub fn cyclic(&self) -> bool {
        self.cyclic
    }
    /// The release rule the replay applied (R10).
    pub fn release(&self) -> ReleaseRule {
        self.release
    }
    /// The allocator R7 counted with (MODEL.md §2.8).
    pub fn allocator(&self) -> Allocator {
        self.allocator
    }
    pub fn instance_sha256(&self) -> &str {
        &self.instance_sha256
    }
    pub fn schedule_sha256(&self) -> &str {
        &self.schedule_sha256
    }
}

/// The allocator's own figures (MODEL.md §2.8), over the same instants as the
/// peak GPU memory: under `va:m_c` the highest occ_GPU and N_max, the most
/// non-empty allocations alive at once; under `caching` the highest reserved
/// and allocated bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocatorPeaks {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_occupied: Option<Bytes>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_live_allocations: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_reserved: Option<Bytes>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_allocated: Option<Bytes>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelBusy {
    pub channel: Channel,
    pub busy: Ticks,
}

/// The checker's verdict and measurements.
///
/// Only the checker builds one (`#[non_exhaustive]`: no struct literal outside
/// this crate), and code outside reaches it through [`CheckOutcome`],
/// [`Checked`] or [`Rejected`], each of which hands out `&Report` only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Report {
    /// `valid`: the exact replay passed.
    pub valid: bool,
    pub cyclic: bool,
    /// The release rule the replay applied (R10): every verdict states it.
    pub release: ReleaseRule,
    /// The allocator R7 counted with (MODEL.md §2.8): stated when not `exact`.
    #[serde(skip_serializing_if = "Allocator::is_default")]
    pub allocator: Allocator,
    /// Its own peaks (absent under `exact`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocator_peaks: Option<AllocatorPeaks>,
    /// Last event end (one-shot), or the period (cyclic).
    pub makespan: Ticks,
    pub peak_memory: Bytes,
    pub peak_at: Ticks,
    /// Peak CPU memory (CPU copies, offloads in flight), same window as the GPU peak.
    pub peak_cpu_memory: Bytes,
    pub channel_busy: Vec<ChannelBusy>,
    /// Time within the makespan (or period) the GPU compute stream is idle.
    pub compute_idle: Ticks,
    pub violations: Vec<Violation>,
    pub warnings: Vec<Warning>,
    /// SHA-256 of the canonical encodings of the compiled instance and the
    /// schedule (models/MODEL.md §6).
    pub instance_sha256: String,
    pub schedule_sha256: String,
}

/// A schedule that passed the exact replay: the schedule, the checker's
/// measurements and its [`Certificate`].
///
/// Only [`check`] builds one, so code that takes a `Checked` (heuristic runs,
/// exact-method results, verdicts, every report and CLI output) cannot show an
/// unchecked schedule or an unchecked figure. Outside this module it cannot be
/// constructed:
///
/// ```compile_fail,E0451
/// use offcert_core::check::{Checked, Report, Certificate};
/// use offcert_core::schedule::Schedule;
/// fn forge(schedule: Schedule, report: Report, certificate: Certificate) -> Checked {
///     Checked { schedule, report, certificate }
/// }
/// ```
///
/// and a `Report` cannot be forged to stand in for one either:
///
/// ```compile_fail,E0639
/// use offcert_core::check::Report;
/// use offcert_core::model::ReleaseRule;
/// use offcert_core::units::{Bytes, Ticks};
/// let r = Report {
///     valid: true, cyclic: false, release: ReleaseRule::AfterEnd, makespan: Ticks(1),
///     peak_memory: Bytes(0), peak_at: Ticks(0), channel_busy: vec![],
///     compute_idle: Ticks(0), violations: vec![], warnings: vec![],
///     instance_sha256: String::new(), schedule_sha256: String::new(),
/// };
/// ```
///
/// The only way in is the checker:
///
/// ```
/// use offcert_core::check::{check, CheckOutcome};
/// use offcert_core::model::Instance;
/// use offcert_core::schedule::Schedule;
/// # fn demo(inst: &Instance, s: &Schedule) {
/// match check(inst, s) {
///     CheckOutcome::Valid(c) => println!("makespan {}", c.makespan()),
///     CheckOutcome::Invalid(r) => println!("{} violations", r.report().violations.len()),
/// }
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checked {
    schedule: Schedule,
    report: Report,
    certificate: Certificate,
}

impl Checked {
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }
    /// The checker's measurements (`report().valid` is true).
    pub fn report(&self) -> &Report {
        &self.report
    }
    pub fn certificate(&self) -> &Certificate {
        &self.certificate
    }
    /// The validated makespan (one-shot) or period (cyclic).
    pub fn makespan(&self) -> Ticks {
        self.certificate.makespan
    }
    /// Give up the proof and keep the schedule (e.g. to export it).
    pub fn into_schedule(self) -> Schedule {
        self.schedule
    }
}

/// Serialized as its report.
impl Serialize for Checked {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.report.serialize(s)
    }
}

/// A schedule the checker rejected, with every violation (and the same
/// measurements a valid schedule gets).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    schedule: Schedule,
    report: Report,
}

impl Rejected {
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }
    /// The checker's measurements (`report().valid` is false).
    pub fn report(&self) -> &Report {
        &self.report
    }
    pub fn violations(&self) -> &[Violation] {
        &self.report.violations
    }
    pub fn into_schedule(self) -> Schedule {
        self.schedule
    }
}

/// Every violation as `kind at instant` (or `kind` alone when it has no
/// instant, as an order or steady-state violation), joined by `; ` (so that a
/// solver's error can carry the rejection itself as its typed `source`).
impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, v) in self.violations().iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            match v.instant() {
                Some(at) => write!(f, "{} at {at}", v.kind())?,
                None => write!(f, "{}", v.kind())?,
            }
        }
        Ok(())
    }
}

impl std::error::Error for Rejected {}

/// What [`check`] says: a [`Checked`] schedule, or the violations.
///
/// It dereferences to the [`Report`] so that the measurements of either case
/// read the same (`outcome.valid`, `outcome.violations`, `outcome.makespan`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckOutcome {
    Valid(Checked),
    Invalid(Rejected),
}

impl CheckOutcome {
    pub fn report(&self) -> &Report {
        match self {
            CheckOutcome::Valid(c) => &c.report,
            CheckOutcome::Invalid(r) => &r.report,
        }
    }
    pub fn schedule(&self) -> &Schedule {
        match self {
            CheckOutcome::Valid(c) => &c.schedule,
            CheckOutcome::Invalid(r) => &r.schedule,
        }
    }
    /// Present exactly when the schedule is valid.
    pub fn certificate(&self) -> Option<&Certificate> {
        self.checked().map(Checked::certificate)
    }
    pub fn checked(&self) -> Option<&Checked> {
        match self {
            CheckOutcome::Valid(c) => Some(c),
            CheckOutcome::Invalid(_) => None,
        }
    }
    /// For `?`: the rejection is boxed (it carries the whole report).
    pub fn into_result(self) -> Result<Checked, Box<Rejected>> {
        match self {
            CheckOutcome::Valid(c) => Ok(c),
            CheckOutcome::Invalid(r) => Err(Box::new(r)),
        }
    }
    pub fn into_schedule(self) -> Schedule {
        match self {
            CheckOutcome::Valid(c) => c.schedule,
            CheckOutcome::Invalid(r) => r.schedule,
        }
    }
}

impl std::ops::Deref for CheckOutcome {
    type Target = Report;
    fn deref(&self) -> &Report {
        self.report()
    }
}

/// Serialized as its report.
impl Serialize for CheckOutcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.report().serialize(s)
    }
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// SHA-256 of raw bytes, as lowercase hex (used for file digests).
pub fn sha256_bytes(b: &[u8]) -> String {
    hex(&Sha256::digest(b))
}

/// Replay `s` against `inst`: a [`Checked`] schedule when every rule holds,
/// else every violation with its witness ([`Rejected`]). Both carry the full
/// measurements.
pub fn check(inst: &Instance, s: &Schedule) -> CheckOutcome {
    let report = replay(inst, s, None);
    outcome(inst, s, report)
}

/// [`check`], also recording the replay's GPU-memory profile.
pub fn check_with_profile(inst: &Instance, s: &Schedule) -> (CheckOutcome, MemoryProfile) {
    let mut p = MemoryProfile::default();
    let report = replay(inst, s, Some(&mut p));
    (outcome(inst, s, report), p)
}

/// The only place a [`Checked`] (and a [`Rejected`]) is built.
fn outcome(inst: &Instance, s: &Schedule, report: Report) -> CheckOutcome {
    match certify(inst, &report) {
        Some(certificate) => CheckOutcome::Valid(Checked {
            schedule: s.clone(),
            report,
            certificate,
        }),
        None => CheckOutcome::Invalid(Rejected {
            schedule: s.clone(),
            report,
        }),
    }
}

/// The certificate of a report without violations.
fn certify(inst: &Instance, r: &Report) -> Option<Certificate> {
    r.valid.then(|| Certificate {
        makespan: r.makespan,
        cyclic: r.cyclic,
        release: inst.release,
        allocator: inst.allocator,
        instance_sha256: r.instance_sha256.clone(),
        schedule_sha256: r.schedule_sha256.clone(),
    })
}

/// The exact replay: every violation and the measurements (and, when asked,
/// the GPU-memory profile). Each concern has its own file: the static rules,
/// the unrolling, the order, the resources, the sweep, the steady state and the
/// measurements.
fn replay(inst: &Instance, s: &Schedule, profile: Option<&mut MemoryProfile>) -> Report {
    let w = Window::of(inst, s);
    let mut violations = static_rules(inst, s, &w);
    overlaps(inst, s, &mut violations);
    violations.extend(order_rules(inst, s));
    let copies = unroll(s, &w);
    let uses = uses(inst, &copies, w.cyclic);
    let mut swept = Sweep::new(inst, s, (&copies, &uses), w, profile).run(&actions(&copies, &w));
    violations.append(&mut swept.violations);
    if w.cyclic {
        violations.extend(steady_rules(inst, s, &swept));
    }
    // Stable: at one instant, the order above (static, resources, order,
    // sweep, steady state).
    violations.sort_by_key(|v| v.at());
    let mut warnings = swept.warnings;
    warnings.sort_by_key(|w| match w {
        Warning::RedundantOffload { event, .. } => s.events[event.ix()].start(),
    });
    let m = Measured::of(inst, s, &w);
    Report {
        valid: violations.is_empty(),
        cyclic: w.cyclic,
        release: inst.release,
        allocator: inst.allocator,
        allocator_peaks: swept.allocator.take(),
        makespan: m.makespan,
        peak_memory: swept.peak.0,
        peak_at: swept.peak.1,
        peak_cpu_memory: swept.cpu_peak,
        channel_busy: m.channel_busy,
        compute_idle: m.compute_idle,
        violations,
        warnings,
        instance_sha256: instance_digest(inst),
        schedule_sha256: schedule_digest(s),
    }
}
