//! The OFFMATE report: per plan (the ILP's in a stated mode, or an ILP-free
//! baseline), side by side, the ILP objective (`solver-reported`), the
//! post-processed step sum (the rounded plan in the paper's step model), and
//! the checker's figures for the realised schedule: the period and the GPU and
//! CPU peaks; or the checker's reason when it refutes the schedule.
//!
//! Owns: [`OffmateRow`], [`row`], [`render`], [`to_json`].
//! Must not import: the CLI.

use crate::check::CheckOutcome;
use crate::family::offmate::{IlpMode, PlanStatus};
use crate::heuristic::offmate::{OffmateRun, PlanSource};
use crate::model::Instance;
use crate::units::{Bytes, Ticks};
use serde::Serialize;

/// The checker's figures, or its reason.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum RowVerdict {
    Valid {
        period: Ticks,
        gpu_peak: Bytes,
        cpu_peak: Bytes,
    },
    Invalid {
        /// The first violation in the checker's words.
        reason: String,
        violations: usize,
    },
}

/// One row of the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OffmateRow {
    pub label: String,
    /// `solver-reported` ILP objective, with its mode and status.
    pub ilp_objective: Option<f64>,
    pub ilp: Option<String>,
    pub step_sum: Ticks,
    #[serde(flatten)]
    pub verdict: RowVerdict,
}

fn mode_name(m: IlpMode) -> &'static str {
    match m {
        IlpMode::AsPrinted => "as printed",
        IlpMode::Corrected => "corrected",
    }
}

/// The row of one run (figures read from the checker's verdict).
pub fn row(inst: &Instance, run: &OffmateRun) -> OffmateRow {
    let (label, ilp, objective) = match &run.source {
        PlanSource::Ilp {
            mode,
            status,
            objective,
            budget,
            cpu_optimizer,
        } => {
            let st = match status {
                PlanStatus::Optimal => "optimal".to_string(),
                PlanStatus::Feasible { gap } => format!("feasible, gap {:.2}%", 100.0 * gap),
            };
            let mut label = format!("OFFMATE ILP ({})", mode_name(*mode));
            if !cpu_optimizer {
                label.push_str(", no CPU optimiser");
            }
            if *budget != inst.machine.gpu_capacity {
                label.push_str(&format!(
                    ", solved for {} (repair: M_GPU less the excess)",
                    budget.human()
                ));
            }
            (
                label,
                Some(format!("solver-reported, ILP {}, {st}", mode_name(*mode))),
                Some(*objective),
            )
        }
        PlanSource::Baseline(b) => (format!("baseline {}", b.name()), None, None),
    };
    let verdict = match &run.outcome {
        CheckOutcome::Valid(c) => RowVerdict::Valid {
            period: c.report().makespan,
            gpu_peak: c.report().peak_memory,
            cpu_peak: c.report().peak_cpu_memory,
        },
        CheckOutcome::Invalid(r) => RowVerdict::Invalid {
            reason: r
                .report()
                .violations
                .first()
                .map(|v| v.describe(inst))
                .unwrap_or_default(),
            violations: r.report().violations.len(),
        },
    };
    OffmateRow {
        label,
        ilp_objective: objective,
        ilp,
        step_sum: run.step_sum,
        verdict,
    }
}

/// Text lines, one per row: "ILP objective ≤ step sum ≤ checked period" (with
/// which inequalities hold) or the checker's reason.
pub fn render(rows: &[OffmateRow]) -> String {
    let mut out = String::new();
    for r in rows {
        out.push_str(&format!("  {}\n", r.label));
        if let (Some(obj), Some(what)) = (r.ilp_objective, &r.ilp) {
            out.push_str(&format!("    ILP objective {obj:.0} ({what})\n"));
        }
        out.push_str(&format!("    post-processed step sum {}\n", r.step_sum.0));
        match &r.verdict {
            RowVerdict::Valid {
                period,
                gpu_peak,
                cpu_peak,
            } => {
                out.push_str(&format!(
                    "    checked period {} (valid, checked)  GPU peak {}  CPU peak {}\n",
                    period.human(None),
                    gpu_peak.human(),
                    cpu_peak.human()
                ));
                let le = |a: bool| if a { "≤" } else { ">" };
                let a = r.ilp_objective.map(|o| o <= r.step_sum.0 as f64 + 1e-6);
                let chain = match a {
                    Some(a) => format!(
                        "ILP objective {} step sum {} checked period",
                        le(a),
                        le(r.step_sum <= *period)
                    ),
                    None => format!("step sum {} checked period", le(r.step_sum <= *period)),
                };
                out.push_str(&format!("    {chain}\n"));
            }
            RowVerdict::Invalid { reason, violations } => out.push_str(&format!(
                "    refuted by the checker ({violations} violations); first: {}\n",
                shorten(reason, 400)
            )),
        }
    }
    out
}

/// At most `n` characters of a long reason (the JSON keeps it whole).
fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!(
            "{}… (--json for the whole)",
            s.chars().take(n).collect::<String>()
        )
    }
}

/// Per step: the ILP's Time_t (when the run's plan is the ILP's), the realised
/// length and the streams' busy ticks.
pub fn render_steps(run: &OffmateRun) -> String {
    let from_ilp = matches!(run.source, PlanSource::Ilp { .. });
    let mut out = String::from(
        "  step   ILP Time_t   realised        GPU        d2h        h2d        CPU\n",
    );
    for (t, (len, b)) in run.steps.iter().enumerate() {
        let ilp = from_ilp
            .then(|| run.plan_time.get(t))
            .flatten()
            .map(|x| format!("{x:.0}"))
            .unwrap_or_else(|| "-".into());
        out.push_str(&format!(
            "  {t:>4} {ilp:>12} {:>10} {:>10} {:>10} {:>10} {:>10}\n",
            len.0, b[0].0, b[1].0, b[2].0, b[3].0
        ));
    }
    out
}

/// JSON rows.
pub fn to_json(rows: &[OffmateRow]) -> serde_json::Value {
    serde_json::to_value(rows).unwrap_or(serde_json::Value::Null)
}
