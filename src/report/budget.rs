//! Memory-budget series: `FROM:TO:STEPS`, where FROM and TO are bytes (the one
//! spelling of [`crate::units::Bytes::parse`]: `1500`, `2G`, `1.5GB`, `64MiB`), the
//! words `min` (the least memory with which any schedule exists; for
//! `remat_chain` a certified lower limit, `proofs/REMAT-BUDGETS.md`) and `peak`
//! (M_peak: no offloading needed; for `remat_chain` the checker's peak of the
//! keep-everything schedule), or a percentage `P%` of the way from `min` to
//! `peak` (the scaling of the activation paper's §6.3 plots).
//!
//! Owns: [`BudgetSpec`] and the budget ranges of each family.
//! Must not import: the CLI.

use super::ReportError;
use crate::bound::activation::ChainProfile;
use crate::check::{check, CheckOutcome, Checked};
use crate::family::graph::Graph;
use crate::family::remat_chain::RematChain;
use crate::family::InstanceFile;
use crate::heuristic::remat::keep_everything;
use crate::simulate::asap_sequence;
use crate::simulate::chain_sequence::back_to_back;
use crate::simulate::graph_sequence;

/// One end of a budget range.
#[derive(Clone, Debug, PartialEq)]
pub enum BudgetValue {
    Bytes(u64),
    Min,
    Peak,
    Percent(f64),
}

/// `FROM:TO:STEPS` (STEPS ≥ 1 budgets, evenly spaced, both ends included), or a
/// single value.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetSpec {
    pub from: BudgetValue,
    pub to: BudgetValue,
    pub steps: u32,
    pub text: String,
}

fn err(spec: &str, message: impl Into<String>) -> ReportError {
    ReportError::Budget {
        spec: spec.into(),
        message: message.into(),
    }
}

fn parse_value(spec: &str, s: &str) -> Result<BudgetValue, ReportError> {
    let s = s.trim();
    match s {
        "min" => return Ok(BudgetValue::Min),
        "peak" => return Ok(BudgetValue::Peak),
        _ => {}
    }
    if let Some(p) = s.strip_suffix('%') {
        let v: f64 = p
            .parse()
            .map_err(|_| err(spec, format!("`{s}` is not a percentage")))?;
        if !(0.0..=100.0).contains(&v) {
            return Err(err(spec, format!("`{s}` is outside 0%..100%")));
        }
        return Ok(BudgetValue::Percent(v));
    }
    crate::units::Bytes::parse(s)
        .map(|b| BudgetValue::Bytes(b.0))
        .map_err(|e| err(spec, format!("{e}; or min, peak, P%")))
}

impl BudgetSpec {
    pub fn parse(spec: &str) -> Result<BudgetSpec, ReportError> {
        let parts: Vec<&str> = spec.split(':').collect();
        let (from, to, steps) = match parts.as_slice() {
            [one] => {
                let v = parse_value(spec, one)?;
                (v.clone(), v, 1)
            }
            [a, b, n] => {
                let steps: u32 = n
                    .trim()
                    .parse()
                    .map_err(|_| err(spec, format!("STEPS `{n}` is not a positive integer")))?;
                if steps == 0 {
                    return Err(err(spec, "STEPS must be at least 1"));
                }
                (parse_value(spec, a)?, parse_value(spec, b)?, steps)
            }
            _ => return Err(err(spec, "expected FROM:TO:STEPS or one value")),
        };
        Ok(BudgetSpec {
            from,
            to,
            steps,
            text: spec.into(),
        })
    }

    /// The budgets for one instance, in bytes, ascending and without repeats.
    pub fn budgets(&self, file: &InstanceFile) -> Result<Vec<u64>, ReportError> {
        let range = budget_range(file);
        let resolve = |v: &BudgetValue| -> Result<u64, ReportError> {
            let need = || {
                range.ok_or_else(|| {
                    err(
                        &self.text,
                        format!(
                            "`min`, `peak` and `%` are not defined for family {}",
                            file.family()
                        ),
                    )
                })
            };
            Ok(match v {
                BudgetValue::Bytes(b) => *b,
                BudgetValue::Min => need()?.0,
                BudgetValue::Peak => need()?.1,
                BudgetValue::Percent(p) => {
                    let (lo, hi) = need()?;
                    // Exact: lo + (hi − lo)·p/100 with p to 1e-6, rounded up.
                    let ppm = (p * 1e6).round() as u128;
                    let span = (hi - lo) as u128;
                    lo + (span * ppm).div_ceil(100_000_000) as u64
                }
            })
        };
        let a = resolve(&self.from)?;
        let b = resolve(&self.to)?;
        let (lo, hi) = (a.min(b), a.max(b));
        let mut out: Vec<u64> = if self.steps == 1 {
            vec![lo]
        } else {
            let n = (self.steps - 1) as u128;
            (0..=n)
                .map(|k| lo + ((hi - lo) as u128 * k).div_ceil(n) as u64)
                .collect()
        };
        out.dedup();
        Ok(out)
    }
}

/// (least feasible memory, M_peak) where the family defines them.
///
/// - `activation_chain`: [`ChainProfile::min_memory`] and M_peak (§3.2).
/// - `op_sequence`: least = the largest function footprint; peak = the
///   no-offload profile's maximum (`family::op_sequence::Uses`).
/// - `weight_chain`: least = max_i MB_i (only layer i's weight and its gradient
///   resident, eq. (1)); peak = Σ_j |w_j| + max_i (MB_i − |w_i|) (every weight
///   resident).
/// - `graph`: least = the largest node footprint (its output and inputs),
///   peak = the baseline order's peak (MODEL.md §4.7).
/// - `remat_chain`: [`remat_budgets`]: least = `least (certified lower limit)`,
///   peak = `peak (checked, keep everything)`.
pub fn budget_range(file: &InstanceFile) -> Option<(u64, u64)> {
    match file {
        InstanceFile::ActivationChain(c) => {
            let p = ChainProfile::new(c);
            Some((
                u64::try_from(p.min_memory()).ok()?,
                u64::try_from(p.m_peak()).ok()?,
            ))
        }
        InstanceFile::WeightChain(w) => {
            let l = w.layers.len();
            let mut least = 0u64;
            let mut extra = 0u64;
            let mut sum_w = 0u64;
            for i in 1..=l {
                let mb = w.mb(i)?;
                least = least.max(mb);
                extra = extra.max(mb - w.layers[i - 1].w);
                sum_w = sum_w.checked_add(w.layers[i - 1].w)?;
            }
            Some((least, sum_w.checked_add(extra)?))
        }
        InstanceFile::RematChain(c) => {
            let b = remat_budgets(c).ok()?;
            Some((b.least, b.peak))
        }
        InstanceFile::Core(_) | InstanceFile::Offmate(_) => None,
        InstanceFile::OpSequence(o) => {
            let u = o.uses().ok()?;
            Some((u.least_memory(), u.resident_peak()))
        }
        InstanceFile::Graph(g) => Some((g.least_memory(), graph_baseline_peak(g).ok()?)),
    }
}

/// The same instance with another GPU memory.
pub fn with_budget(file: &InstanceFile, bytes: u64) -> InstanceFile {
    let mut f = file.clone();
    match &mut f {
        InstanceFile::ActivationChain(c) => c.gpu_memory = bytes,
        InstanceFile::WeightChain(w) => w.gpu_memory = bytes,
        InstanceFile::RematChain(c) => c.gpu_memory = bytes,
        InstanceFile::Core(c) => c.gpu_memory = bytes,
        InstanceFile::OpSequence(o) => o.gpu_memory = bytes,
        InstanceFile::Offmate(o) => o.gpu_memory = crate::units::Bytes(bytes),
        InstanceFile::Graph(g) => g.gpu_memory = bytes,
    }
    f
}

/// The instance's own GPU memory.
pub fn own_budget(file: &InstanceFile) -> u64 {
    file.gpu_memory()
}

/// Where `bytes` lies between the range's ends, in percent (display only).
pub fn position(file: &InstanceFile, bytes: u64) -> Option<f64> {
    let (lo, hi) = budget_range(file)?;
    if hi <= lo {
        return None;
    }
    Some((bytes as f64 - lo as f64) * 100.0 / (hi - lo) as f64)
}

/// The two ends of a `remat_chain`'s budget range, each with what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RematBudgets {
    /// `least (certified lower limit)`: [`RematChain::min_memory`], below which
    /// no valid schedule exists (proof: `proofs/REMAT-BUDGETS.md`).
    pub least: u64,
    /// `peak (checked, keep everything)`: the checker's peak memory of the
    /// keep-everything schedule ([`keep_everything`]); at this memory that
    /// schedule is valid.
    pub peak: u64,
}

/// Labels of the two ends, the same everywhere they are printed.
pub const LEAST_LABEL: &str = "least (certified lower limit)";
pub const PEAK_LABEL: &str = "peak (checked, keep everything)";

/// The keep-everything schedule of `c`, realised and checked with GPU memory
/// `memory` (and `c`'s own otherwise): the checker's [`Checked`], or why not.
pub fn keep_everything_checked(c: &RematChain, memory: u64) -> Result<Checked, String> {
    let mut at = c.clone();
    at.gpu_memory = memory;
    let inst = InstanceFile::RematChain(at)
        .compile()
        .map_err(|e| e.to_string())?;
    let s = asap_sequence(&inst, &keep_everything(c).plan).map_err(|e| e.to_string())?;
    match check(&inst, &s) {
        CheckOutcome::Valid(k) => Ok(k),
        CheckOutcome::Invalid(r) => Err(format!(
            "keep-everything schedule rejected: {:?}",
            r.violations().first()
        )),
    }
}

/// `least` and `peak` of a remat chain (see [`RematBudgets`]). The peak is
/// measured by the checker on the keep-everything schedule run with memory to
/// spare (the validated sizes sum to at most 2^62 bytes), never computed
/// alongside it.
pub fn remat_budgets(c: &RematChain) -> Result<RematBudgets, String> {
    let least = c.min_memory().ok_or("sizes overflow")?;
    let k = keep_everything_checked(c, u64::MAX >> 1)?;
    let peak = k.report().peak_memory.0;
    Ok(RematBudgets { least, peak })
}

/// The baseline order of a `graph` instance run back to back with each output
/// released after its last reader (MODEL.md §4.7), checked with memory enough
/// for every output at once.
pub fn graph_baseline_checked(g: &Graph) -> Result<Checked, String> {
    let seq = g.baseline().map_err(|e| e.to_string())?;
    let mut roomy = g.clone();
    roomy.gpu_memory = g.nodes.iter().map(|n| n.memory).sum();
    let inst = roomy.compile().map_err(|e| e.to_string())?;
    let s = back_to_back(&inst, &graph_sequence::plan_of(g, &seq));
    match check(&inst, &s) {
        CheckOutcome::Valid(c) => Ok(c),
        CheckOutcome::Invalid(r) => Err(format!(
            "the baseline order is rejected: {:?}",
            r.violations().first()
        )),
    }
}

/// The checker's peak memory of [`graph_baseline_checked`]: the `100%` end of
/// a `graph` instance's budget range and MOCCASIN's budget base.
pub fn graph_baseline_peak(g: &Graph) -> Result<u64, String> {
    Ok(graph_baseline_checked(g)?.report().peak_memory.0)
}

/// One line naming the ends of the budget range where the family labels them
/// (`remat_chain`), for the reports that print budgets.
pub fn range_labels(file: &InstanceFile) -> Option<String> {
    match file {
        InstanceFile::RematChain(c) => {
            let b = remat_budgets(c).ok()?;
            Some(format!(
                "0% = {LEAST_LABEL} {}; 100% = {PEAK_LABEL} {}",
                crate::units::Bytes(b.least).human(),
                crate::units::Bytes(b.peak).human()
            ))
        }
        _ => None,
    }
}
