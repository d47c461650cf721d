//! A rigorous lower bound from any dual vector, in exact arithmetic
//! (Neumaier & Shcherbina, "Safe bounds in linear and mixed-integer linear
//! programming", Math. Program. 99, 2004).
//!
//! For every x in the column box with lo ≤ A x ≤ hi and any y:
//!   c·x = yᵀA x + dᵀx with d = c − Aᵀy, and
//!   yᵀA x ≥ Σ_r (y_r > 0 ? y_r lo_r : y_r hi_r),   dᵀx ≥ Σ_j (d_j > 0 ? d_j lo_j : d_j hi_j).
//! Every integer solution of the MILP lies in the LP's feasible set, so the sum is a
//! lower bound on the MILP too. y comes from the solver in floating point; a bad y
//! weakens the bound, never invalidates it. Signs that would need an infinite row
//! bound are set to 0; a column with no upper bound (idle time) whose d_j would be
//! negative has the rows that push it below zero scaled down until d_j = 0.
//!
//! Owns: the certified bound from a dual vector, in exact arithmetic.
//! Must not import: exact solvers, heuristics, the simulator, traces, reports,
//! the CLI.

use crate::lp::rational::Milp;
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed, Zero};

/// y rounded to a multiple of 2^-40 (any y is allowed; short ones keep the exact
/// arithmetic cheap).
fn dyadic(y: f64) -> BigRational {
    if !y.is_finite() {
        return BigRational::zero();
    }
    let scaled = (y * (1u64 << 40) as f64).round();
    if scaled.abs() < 1.0 {
        return BigRational::zero();
    }
    let num = BigRational::from_float(scaled)
        .map(|r| r.to_integer())
        .unwrap_or_default();
    BigRational::new(num, BigInt::one() << 40)
}

/// Why no finite bound came out.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no finite bound (column {column})")]
pub struct Unbounded {
    pub column: usize,
}

/// The certified lower bound on min c·x + constant for the duals `y`.
pub fn certified_bound(m: &Milp, y: &[f64]) -> Result<BigRational, Unbounded> {
    let mut y: Vec<BigRational> = m
        .rows
        .iter()
        .zip(y.iter().chain(std::iter::repeat(&0.0)))
        .map(|(r, v)| {
            let v = dyadic(*v);
            // y_r > 0 needs lo_r, y_r < 0 needs hi_r.
            if (v.is_positive() && r.lo.is_none()) || (v.is_negative() && r.hi.is_none()) {
                BigRational::zero()
            } else {
                v
            }
        })
        .collect();
    // Column → rows, for d and for the repair.
    let mut by_col: Vec<Vec<(usize, usize)>> = vec![Vec::new(); m.cols.len()];
    for (r, row) in m.rows.iter().enumerate() {
        for (k, (j, _)) in row.coefs.iter().enumerate() {
            by_col[*j].push((r, k));
        }
    }
    let reduced = |j: usize, y: &[BigRational]| -> BigRational {
        let mut d = m.cols[j].cost.clone();
        for &(r, k) in &by_col[j] {
            if !y[r].is_zero() {
                d -= &y[r] * &m.rows[r].coefs[k].1;
            }
        }
        d
    };
    // Repair columns that are unbounded in the direction their d points to.
    for (j, col) in m.cols.iter().enumerate() {
        let d = reduced(j, &y);
        let below = d.is_negative() && col.hi.is_none();
        if !below {
            continue;
        }
        // Σ of the contributions y_r a_rj > 0 that pull d_j down; scale them by f.
        let mut push = BigRational::zero();
        for &(r, k) in &by_col[j] {
            let t = &y[r] * &m.rows[r].coefs[k].1;
            if t.is_positive() {
                push += t;
            }
        }
        // d = cost − push − rest, with rest the non-positive contributions; after
        // scaling the pushing rows by f = (cost − rest)/push, d = 0.
        let rest = &col.cost - &d - &push;
        let room = &col.cost - &rest;
        if !room.is_positive() || push.is_zero() {
            // Even with those rows dropped d_j < 0: drop every row of this column.
            for &(r, _) in &by_col[j] {
                y[r] = BigRational::zero();
            }
        } else {
            let f = room / &push;
            for &(r, k) in &by_col[j] {
                if (&y[r] * &m.rows[r].coefs[k].1).is_positive() {
                    y[r] = &y[r] * &f;
                }
            }
        }
    }
    let mut bound = m.constant.clone();
    for (r, row) in m.rows.iter().enumerate() {
        if y[r].is_positive() {
            bound += &y[r] * row.lo.as_ref().expect("clamped");
        } else if y[r].is_negative() {
            bound += &y[r] * row.hi.as_ref().expect("clamped");
        }
    }
    for (j, col) in m.cols.iter().enumerate() {
        let d = reduced(j, &y);
        if d.is_positive() {
            bound += &d * &col.lo;
        } else if d.is_negative() {
            match &col.hi {
                Some(hi) => bound += &d * hi,
                None => return Err(Unbounded { column: j }),
            }
        }
    }
    Ok(bound)
}
