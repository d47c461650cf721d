//! The LP-file writer: an [`Lp`] in CPLEX LP format, for re-checking a
//! model with any MILP solver.
//!
//! Owns: [`Lp::to_lp_string`]. Must not import: solvers.

use super::integer::{Lp, Var};
use std::fmt::Write as _;

impl Lp {
    /// The model in CPLEX LP format. All coefficients are integers, so the file
    /// states exactly the model that was solved.
    pub fn to_lp_string(&self, comment: &str) -> String {
        let mut s = String::new();
        for line in comment.lines() {
            let _ = writeln!(s, "\\ {line}");
        }
        let name = |v: &Var| self.cols[v.0].name.clone();
        let terms = |s: &mut String, ts: &mut dyn Iterator<Item = (String, i64)>| {
            let mut k = 0;
            let mut any = false;
            for (n, c) in ts {
                any = true;
                let _ = write!(s, " {} {} {}", if c < 0 { "-" } else { "+" }, c.abs(), n);
                k += 1;
                if k % 8 == 0 {
                    s.push_str("\n   ");
                }
            }
            if !any {
                s.push_str(" 0 zero_column");
            }
        };
        s.push_str("Minimize\n obj:");
        terms(
            &mut s,
            &mut self.objective.terms.iter().map(|(v, c)| (name(v), *c)),
        );
        if self.objective.constant != 0 {
            let c = self.objective.constant;
            let _ = write!(s, " {} {}", if c < 0 { "-" } else { "+" }, c.abs());
        }
        s.push_str("\nSubject To\n");
        for (i, r) in self.rows.iter().enumerate() {
            let emit = |s: &mut String, suffix: &str, op: &str, rhs: i64| {
                let _ = write!(s, " {}{}_{}:", r.name, suffix, i);
                terms(s, &mut r.terms.iter().map(|(v, c)| (name(v), *c)));
                let _ = writeln!(s, " {op} {rhs}");
            };
            match (r.lo, r.hi) {
                (Some(l), Some(h)) if l == h => emit(&mut s, "", "=", l),
                (lo, hi) => {
                    if let Some(l) = lo {
                        emit(&mut s, "_lo", ">=", l);
                    }
                    if let Some(h) = hi {
                        emit(&mut s, "_hi", "<=", h);
                    }
                }
            }
        }
        s.push_str("Bounds\n");
        for c in &self.cols {
            let _ = writeln!(s, " {} <= {} <= {}", c.lo, c.name, c.hi);
        }
        if self.objective.terms.is_empty() {
            s.push_str(" zero_column = 0\n");
        }
        s.push_str("General\n");
        for (k, c) in self.cols.iter().filter(|c| c.integer).enumerate() {
            let _ = write!(s, " {}", c.name);
            if k % 8 == 7 {
                s.push('\n');
            }
        }
        s.push_str("\nEnd\n");
        s
    }
}
