//! Hands a [`Milp`] to HiGHS (floating point). Nothing here is trusted: the MIP's
//! dual bound is reported as `solver-reported`, and the LP's duals only feed the
//! exact certification in `certify.rs`.

use super::model::{f, Milp};
use highs::{HighsModelStatus, RowProblem, Sense};
use std::time::Duration;

/// What HiGHS said.
#[derive(Clone, Debug)]
pub struct Solved {
    pub status: HighsModelStatus,
    /// MIP: the proven lower bound (without the constant); LP: the objective.
    pub dual_bound: f64,
    pub row_duals: Vec<f64>,
}

fn problem(m: &Milp, relax: bool) -> RowProblem {
    let mut pb = RowProblem::default();
    let cols: Vec<highs::Col> = m
        .cols
        .iter()
        .map(|c| {
            let lo = f(&c.lo);
            let integer = c.integer && !relax;
            match &c.hi {
                Some(hi) => pb.add_column_with_integrality(f(&c.cost), lo..=f(hi), integer),
                None => pb.add_column_with_integrality(f(&c.cost), lo.., integer),
            }
        })
        .collect();
    for r in &m.rows {
        let coefs: Vec<(highs::Col, f64)> = r.coefs.iter().map(|(j, a)| (cols[*j], f(a))).collect();
        match (&r.lo, &r.hi) {
            (Some(lo), Some(hi)) => pb.add_row(f(lo)..=f(hi), coefs),
            (Some(lo), None) => pb.add_row(f(lo).., coefs),
            (None, Some(hi)) => pb.add_row(..=f(hi), coefs),
            (None, None) => pb.add_row::<f64, _, _, _>(.., coefs),
        }
    }
    pb
}

/// Solve the MILP (`relax = false`) or its LP relaxation (`relax = true`).
pub fn solve(m: &Milp, relax: bool, time_limit: Duration) -> Result<Solved, String> {
    let mut model = problem(m, relax).optimise(Sense::Minimise);
    model.make_quiet();
    model.set_option("time_limit", time_limit.as_secs_f64());
    model.set_option("threads", 1);
    if relax {
        // A basic solution: its duals are the cleanest input for the certificate.
        model.set_option("solver", "simplex");
    }
    let solved = model.try_solve().map_err(|e| format!("HiGHS: {e:?}"))?;
    let status = solved.status();
    let dual_bound = if relax {
        solved.objective_value()
    } else {
        solved
            .double_info_value(c"mip_dual_bound")
            .map_err(|e| format!("HiGHS: {e:?}"))?
    };
    let row_duals = if relax {
        solved.get_solution().dual_rows().to_vec()
    } else {
        Vec::new()
    };
    Ok(Solved {
        status,
        dual_bound,
        row_duals,
    })
}
