//! The integer program of the exact MILP: integer coefficients and bounds, so
//! that the written `.lp` file states exactly the model that was solved.
//!
//! Owns: [`Var`], [`Lin`], [`Row`], [`Lp`] and their builders. Solving is in
//! [`super`] (HiGHS), writing in [`super::write`].
//!
//! Must not import: any other `offcert` module.

use std::collections::BTreeMap;

/// Index of a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Var(pub usize);

#[derive(Clone, Debug)]
pub(super) struct Column {
    pub(super) name: String,
    pub(super) lo: i64,
    pub(super) hi: i64,
    pub(super) integer: bool,
}

#[derive(Clone, Debug)]
pub struct Row {
    pub name: String,
    pub terms: Vec<(Var, i64)>,
    pub lo: Option<i64>,
    pub hi: Option<i64>,
}

/// A linear expression with integer coefficients, merged by variable.
#[derive(Clone, Debug, Default)]
pub struct Lin {
    pub terms: BTreeMap<Var, i64>,
    pub constant: i64,
}

impl Lin {
    pub fn new() -> Lin {
        Lin::default()
    }
    pub fn add(&mut self, v: Var, c: i64) -> &mut Lin {
        if c != 0 {
            let e = self.terms.entry(v).or_insert(0);
            *e += c;
            if *e == 0 {
                self.terms.remove(&v);
            }
        }
        self
    }
    pub fn add_all(&mut self, vs: &[Var], c: i64) -> &mut Lin {
        for v in vs {
            self.add(*v, c);
        }
        self
    }
    pub fn add_lin(&mut self, o: &Lin, c: i64) -> &mut Lin {
        for (v, k) in &o.terms {
            self.add(*v, k * c);
        }
        self.constant += o.constant * c;
        self
    }
    pub fn konst(&mut self, c: i64) -> &mut Lin {
        self.constant += c;
        self
    }
}

/// The integer program: minimise `objective` subject to the rows.
#[derive(Clone, Debug, Default)]
pub struct Lp {
    pub(super) cols: Vec<Column>,
    pub rows: Vec<Row>,
    pub objective: Lin,
}

impl Lp {
    pub fn binary(&mut self, name: String) -> Var {
        self.cols.push(Column {
            name,
            lo: 0,
            hi: 1,
            integer: true,
        });
        Var(self.cols.len() - 1)
    }
    /// A continuous column in [lo, hi].
    pub fn continuous(&mut self, name: String, lo: i64, hi: i64) -> Var {
        self.cols.push(Column {
            name,
            lo,
            hi,
            integer: false,
        });
        Var(self.cols.len() - 1)
    }
    pub fn num_cols(&self) -> usize {
        self.cols.len()
    }
    pub fn num_nonzeros(&self) -> usize {
        self.rows.iter().map(|r| r.terms.len()).sum()
    }

    /// Add `lo <= lin <= hi` (the expression's constant moved to the bounds).
    pub fn constrain(&mut self, name: String, lin: &Lin, lo: Option<i64>, hi: Option<i64>) {
        let terms: Vec<(Var, i64)> = lin.terms.iter().map(|(v, c)| (*v, *c)).collect();
        if terms.is_empty() {
            return; // constant rows are checked by the builder, never emitted
        }
        self.rows.push(Row {
            name,
            terms,
            lo: lo.map(|l| l - lin.constant),
            hi: hi.map(|h| h - lin.constant),
        });
    }
    pub fn le(&mut self, name: String, lin: &Lin, hi: i64) {
        self.constrain(name, lin, None, Some(hi));
    }
    pub fn eq(&mut self, name: String, lin: &Lin, v: i64) {
        self.constrain(name, lin, Some(v), Some(v));
    }
}
