//! A MILP as exact rational data (unnamed columns, `None` bounds for ±∞): the
//! form a certificate re-derives a bound from in exact arithmetic.
//!
//! Owns: [`Milp`], [`Column`], [`Row`] and [`f`], the one rounding to f64.
//! Solving is in [`super::solve_rational`].
//!
//! Must not import: any other `offcert` module.

use num_rational::BigRational;
use num_traits::{ToPrimitive, Zero};

#[derive(Clone, Debug)]
pub struct Column {
    pub cost: BigRational,
    pub lo: BigRational,
    /// `None`: +∞.
    pub hi: Option<BigRational>,
    pub integer: bool,
}

#[derive(Clone, Debug)]
pub struct Row {
    pub coefs: Vec<(usize, BigRational)>,
    pub lo: Option<BigRational>,
    pub hi: Option<BigRational>,
}

/// min cost·x + constant, s.t. lo ≤ A x ≤ hi per row, the column boxes and integrality.
#[derive(Clone, Debug, Default)]
pub struct Milp {
    pub cols: Vec<Column>,
    pub rows: Vec<Row>,
    pub constant: BigRational,
}

impl Milp {
    /// Add a column; its index.
    pub fn col(
        &mut self,
        cost: BigRational,
        lo: BigRational,
        hi: Option<BigRational>,
        integer: bool,
    ) -> usize {
        self.cols.push(Column {
            cost,
            lo,
            hi,
            integer,
        });
        self.cols.len() - 1
    }
    /// Add the row `lo ≤ Σ coefs ≤ hi`.
    pub fn row(
        &mut self,
        coefs: Vec<(usize, BigRational)>,
        lo: Option<BigRational>,
        hi: Option<BigRational>,
    ) {
        self.rows.push(Row { coefs, lo, hi });
    }
    pub fn nonzeros(&self) -> usize {
        self.rows.iter().map(|r| r.coefs.len()).sum()
    }
}

/// A rational as the nearest f64 (for the solver only).
pub fn f(x: &BigRational) -> f64 {
    x.to_f64().unwrap_or(if x > &BigRational::zero() {
        f64::INFINITY
    } else {
        f64::NEG_INFINITY
    })
}
