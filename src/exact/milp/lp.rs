//! A small integer linear program representation: integer coefficients and
//! bounds (so the written `.lp` file is exact), solved through good_lp's HiGHS
//! backend.
//!
//! Owns: [`Lp`] and its solve/write routines. good_lp and highs types never
//! leave this file. good_lp is used to build the model; the `highs::Model` it
//! produces (`HighsProblem::into_inner`) is then solved directly because good_lp
//! neither reports HiGHS's MIP dual bound nor tells "infeasible" apart from
//! "unbounded or infeasible", and both are needed to label results honestly.

use good_lp::{variable, Expression, ProblemVariables, SolverModel};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

/// Index of a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Var(pub usize);

#[derive(Clone, Debug)]
struct Column {
    name: String,
    lo: i64,
    hi: i64,
    integer: bool,
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
    cols: Vec<Column>,
    pub rows: Vec<Row>,
    pub objective: Lin,
}

/// What HiGHS established.
#[derive(Clone, Debug)]
pub enum LpResult {
    /// Proven optimal with zero gap; the column values.
    Optimal(Vec<f64>),
    /// Stopped (time limit) with an incumbent.
    Feasible(Vec<f64>),
    /// Proven infeasible.
    Infeasible,
    /// Stopped without an incumbent.
    Unknown,
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

    /// Solve with HiGHS, MIP gap tolerances zero. HiGHS's MIP presolve has
    /// wrongly declared feasible models infeasible (ERGO-Code/HiGHS#3090,
    /// #2388, #1164; we hit one on a 12-op weight chain), so an infeasibility
    /// found with presolve is confirmed by a second solve without it.
    pub fn solve(&self, time_limit: Duration) -> Result<LpResult, String> {
        let start = std::time::Instant::now();
        match self.solve_once(time_limit, true, 1) {
            Ok(LpResult::Infeasible) => {
                let left = time_limit.saturating_sub(start.elapsed());
                self.solve_once(left, false, 1)
            }
            Ok(other) => Ok(other),
            // HiGHS's run sometimes ends in its generic error status on tiny
            // models (seen: one activation chain at one horizon, every time).
            // Its answer is only ever used after our own checks, so another
            // run with presolve off, then another seed, is safe; the first
            // error is kept if those fail too.
            Err(first) => {
                for (presolve, seed) in [(false, 1), (true, 7), (false, 7)] {
                    let left = time_limit.saturating_sub(start.elapsed());
                    if let Ok(r) = self.solve_once(left, presolve, seed) {
                        if !(presolve && matches!(r, LpResult::Infeasible)) {
                            return Ok(r);
                        }
                    }
                }
                Err(first)
            }
        }
    }

    fn solve_once(
        &self,
        time_limit: Duration,
        presolve: bool,
        seed: i32,
    ) -> Result<LpResult, String> {
        let mut pv = ProblemVariables::new();
        let vars: Vec<good_lp::Variable> = self
            .cols
            .iter()
            .map(|c| {
                let d = variable().min(c.lo as f64).max(c.hi as f64);
                pv.add(if c.integer { d.integer() } else { d })
            })
            .collect();
        let mut obj = Expression::from(self.objective.constant as f64);
        for (v, c) in &self.objective.terms {
            obj += (*c as f64) * vars[v.0];
        }
        let mut problem = pv.minimise(obj).using(good_lp::highs);
        for r in &self.rows {
            let mut e = Expression::from(0.0);
            for (v, c) in &r.terms {
                e += (*c as f64) * vars[v.0];
            }
            match (r.lo, r.hi) {
                (Some(l), Some(h)) if l == h => {
                    problem.add_constraint(e.eq(l as f64));
                }
                (lo, hi) => {
                    if let Some(l) = lo {
                        problem.add_constraint(e.clone().geq(l as f64));
                    }
                    if let Some(h) = hi {
                        problem.add_constraint(e.leq(h as f64));
                    }
                }
            }
        }
        let mut model = problem
            .try_into_inner()
            .map_err(|e| format!("building the HiGHS model: {e}"))?;
        let secs = time_limit.as_secs_f64().max(0.01);
        let set = |m: &mut highs::Model, k: &str, v: f64| {
            m.try_set_option(k, v)
                .map_err(|e| format!("setting HiGHS option {k}: {e:?}"))
        };
        model.make_quiet();
        // Exact claims need zero gap tolerances (HiGHS's defaults stop at 1e-4 relative).
        set(&mut model, "mip_rel_gap", 0.0)?;
        set(&mut model, "mip_abs_gap", 0.0)?;
        set(&mut model, "time_limit", secs)?;
        if !presolve {
            model
                .try_set_option("presolve", "off")
                .map_err(|e| format!("setting HiGHS option presolve: {e:?}"))?;
        }
        model
            .try_set_option("random_seed", seed)
            .map_err(|e| format!("setting HiGHS option random_seed: {e:?}"))?;
        let solved = model
            .try_solve()
            .map_err(|e| format!("HiGHS failed: {e:?}"))?;
        use highs::{HighsModelStatus as S, HighsSolutionStatus};
        let has_solution = solved.primal_solution_status() == HighsSolutionStatus::Feasible;
        let cols = || solved.get_solution().columns().to_vec();
        Ok(match solved.status() {
            S::Optimal => {
                let gap = solved.mip_gap();
                if !has_solution {
                    return Err("HiGHS reported optimal without a solution".into());
                }
                if gap.is_finite() && gap > 0.0 {
                    LpResult::Feasible(cols())
                } else {
                    LpResult::Optimal(cols())
                }
            }
            S::Infeasible => LpResult::Infeasible,
            S::ReachedTimeLimit
            | S::ReachedIterationLimit
            | S::ReachedSolutionLimit
            | S::ReachedInterrupt
            | S::ReachedMemoryLimit => {
                if has_solution {
                    LpResult::Feasible(cols())
                } else {
                    LpResult::Unknown
                }
            }
            other => return Err(format!("HiGHS status {other:?}")),
        })
    }

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
