//! Memory-budget series: `FROM:TO:STEPS`, where FROM and TO are bytes (the one
//! spelling of [`crate::units::Bytes::parse`]: `1500`, `2G`, `1.5GB`, `64MiB`), the
//! words `min` (the least memory with which any schedule exists) and `peak`
//! (M_peak: no offloading needed), or a percentage `P%` of the way from `min` to
//! `peak` (the scaling of the activation paper's §6.3 plots).
//!
//! Owns: [`BudgetSpec`] and the budget ranges of each family.
//! Must not import: the CLI.

use super::ReportError;
use crate::bound::activation::ChainProfile;
use crate::family::InstanceFile;

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
/// - `remat_chain`: least = the largest single op footprint of a backward or an
///   F_all (every B_ℓ runs, and needs s_ℓ, which only F^ℓ_all produces); peak =
///   the schedule that keeps everything.
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
        InstanceFile::RematChain(c) => Some((c.min_memory()?, c.store_all_peak()?)),
        InstanceFile::Core(_) | InstanceFile::Offmate(_) => None,
        InstanceFile::OpSequence(o) => {
            let u = o.uses().ok()?;
            Some((u.least_memory(), u.resident_peak()))
        }
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
