//! `op_sequence`: out-of-core swap scheduling over any operator sequence
//! (out-of-core window paper §2–§3; nnabla's `SwapInOutScheduler`).
//!
//! Owns: the file format ([`OpSequence`]: variables, functions in order,
//! persistent variables, GPU memory, β, duplex), its validation and its
//! compilation to the core model (`models/MODEL.md` §4.4), plus the static
//! quantities the heuristics and bounds share ([`Uses`]: per-function
//! footprints, the least feasible memory and the no-offload peak).
//! Must not import: schedules, semantics, the checker, solvers.
//!
//! Mapping (one GPU op per function, in file order, cyclic):
//! - `reads` → R(o); `modifies` → R(o) and W(o) (read-modify-write: in-place
//!   ops, gradient accumulation, optimiser updates);
//! - `writes` (first write of the iteration) → P(o);
//! - `clears` → no core effect: the value is dead after the function (no later
//!   function may use it), so R6 no longer protects it; schedules release it at
//!   the end of its last use (nnabla's *preclear*) or by then;
//! - persistent variables (alive before the first function and after the last:
//!   weights, optimiser state, input buffers) are the tensors no op produces;
//!   nothing else may be read before it is written.

use super::{invalid, BandwidthFile};
use crate::model::*;
use crate::units::{Bytes, Ticks};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variable {
    pub name: String,
    pub bytes: u64,
    #[serde(default)]
    pub kind: TensorKind,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Function {
    pub name: String,
    /// Ticks; at least 1 (a release after a zero-duration op would come before
    /// it in the same-instant order, MODEL.md §2.4).
    pub duration: i64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reads: Vec<String>,
    /// Variables it writes for the first time in the iteration.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modifies: Vec<String>,
    /// Variables whose value is dead after this function.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clears: Vec<String>,
}

fn full() -> Duplex {
    Duplex::FullDuplex
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpSequence {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub variables: Vec<Variable>,
    pub functions: Vec<Function>,
    #[serde(default)]
    pub persistent: Vec<String>,
    pub gpu_memory: u64,
    pub bandwidth: BandwidthFile,
    #[serde(default = "full")]
    pub duplex: Duplex,
    /// The release rule (`after_end` unless the file selects the relaxation).
    #[serde(default, skip_serializing_if = "ReleaseRule::is_default")]
    pub release: ReleaseRule,
    /// The allocator R7 counts with (`models/MODEL.md` §2.8; `exact` unless the file selects another).
    #[serde(default, skip_serializing_if = "Allocator::is_default")]
    pub allocator: Allocator,
    /// How long a tick is, where the program's clock is known (`"1ns"`:
    /// `offcert import et`); reports then show times in it too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick: Option<crate::units::TickUnit>,
}

/// How a function uses a variable (one entry per variable and function).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    /// First write of the iteration: memory taken at the start, no data needed.
    Write,
    Modify,
}

impl Access {
    /// Does the function need the variable's value (a swap-in if it is away)?
    pub fn needs_data(self) -> bool {
        !matches!(self, Access::Write)
    }
}

/// The compiled sequence by index: variable `v` is tensor `v`, function `f` is op `f`.
#[derive(Clone, Debug)]
pub struct Uses {
    pub bytes: Vec<u64>,
    pub persistent: Vec<bool>,
    pub durations: Vec<i64>,
    /// Per function, its variables in file order (reads, modifies, writes), each once.
    pub uses: Vec<Vec<(usize, Access)>>,
}

impl Uses {
    pub fn n(&self) -> usize {
        self.uses.len()
    }
    /// Bytes a function holds while it runs (all its variables).
    pub fn footprint(&self, f: usize) -> u64 {
        self.uses[f].iter().map(|&(v, _)| self.bytes[v]).sum()
    }
    /// The least GPU memory with which any schedule exists: max footprint.
    pub fn least_memory(&self) -> u64 {
        (0..self.n()).map(|f| self.footprint(f)).max().unwrap_or(0)
    }
    /// Persistent variables that some function uses.
    pub fn used_persistent(&self) -> Vec<bool> {
        let mut u = vec![false; self.bytes.len()];
        for fu in &self.uses {
            for &(v, _) in fu {
                if self.persistent[v] {
                    u[v] = true;
                }
            }
        }
        u
    }
    /// (first, last) function using each variable.
    pub fn span(&self) -> Vec<Option<(usize, usize)>> {
        let mut s: Vec<Option<(usize, usize)>> = vec![None; self.bytes.len()];
        for (f, fu) in self.uses.iter().enumerate() {
            for &(v, _) in fu {
                s[v] = Some(match s[v] {
                    None => (f, f),
                    Some((a, _)) => (a, f),
                });
            }
        }
        s
    }
    /// Memory during each function when nothing is offloaded: every used
    /// persistent variable resident, each other variable from its first write
    /// to the end of its last use.
    pub fn resident_profile(&self) -> Vec<u64> {
        let pers: u64 = self
            .used_persistent()
            .iter()
            .zip(&self.bytes)
            .filter(|(u, _)| **u)
            .map(|(_, b)| *b)
            .sum();
        let mut delta = vec![0i128; self.n() + 1];
        for (v, s) in self.span().iter().enumerate() {
            if let (Some((a, b)), false) = (s, self.persistent[v]) {
                delta[*a] += self.bytes[v] as i128;
                delta[b + 1] -= self.bytes[v] as i128;
            }
        }
        let mut cur = 0i128;
        (0..self.n())
            .map(|f| {
                cur += delta[f];
                pers + cur as u64
            })
            .collect()
    }
    /// M_peak of the no-offload schedule.
    pub fn resident_peak(&self) -> u64 {
        self.resident_profile().into_iter().max().unwrap_or(0)
    }
}

impl OpSequence {
    /// Validate names and the access rules; return the variable index map.
    fn index(&self) -> Result<HashMap<&str, usize>, ModelError> {
        let mut vmap = HashMap::new();
        for (i, v) in self.variables.iter().enumerate() {
            if vmap.insert(v.name.as_str(), i).is_some() {
                return Err(ModelError::DuplicateName {
                    field: format!("variables[{i}].name"),
                    name: v.name.clone(),
                });
            }
        }
        Ok(vmap)
    }

    /// Resolve and validate every access; the shared static view.
    pub fn uses(&self) -> Result<Uses, ModelError> {
        let vmap = self.index()?;
        let nv = self.variables.len();
        let look = |field: String, n: &String| -> Result<usize, ModelError> {
            vmap.get(n.as_str())
                .copied()
                .ok_or_else(|| ModelError::UnknownName {
                    field,
                    name: n.clone(),
                })
        };
        let mut persistent = vec![false; nv];
        for (k, n) in self.persistent.iter().enumerate() {
            let v = look(format!("persistent[{k}]"), n)?;
            if std::mem::replace(&mut persistent[v], true) {
                return Err(invalid(format!("persistent[{k}]"), "listed twice"));
            }
        }
        // written[v]: has the variable a value yet? cleared[v]: dead?
        let mut written = persistent.clone();
        let mut cleared = vec![false; nv];
        let mut uses = Vec::with_capacity(self.functions.len());
        let mut durations = Vec::with_capacity(self.functions.len());
        for (i, f) in self.functions.iter().enumerate() {
            if f.duration < 1 {
                return Err(invalid(
                    format!("functions[{i}].duration"),
                    "must be >= 1 tick (MODEL.md §4.4: a release after a zero-duration function would precede it)",
                ));
            }
            durations.push(f.duration);
            let mut fu: Vec<(usize, Access)> = Vec::new();
            let mut seen = vec![];
            for (list, acc, names) in [
                ("reads", Access::Read, &f.reads),
                ("modifies", Access::Modify, &f.modifies),
                ("writes", Access::Write, &f.writes),
            ] {
                for (j, n) in names.iter().enumerate() {
                    let field = format!("functions[{i}].{list}[{j}]");
                    let v = look(field.clone(), n)?;
                    if seen.contains(&v) {
                        return Err(invalid(
                            field,
                            format!("`{n}` appears twice in function `{}`", f.name),
                        ));
                    }
                    seen.push(v);
                    if cleared[v] {
                        return Err(invalid(
                            field,
                            format!("`{n}` is used after it was cleared"),
                        ));
                    }
                    match acc {
                        Access::Write => {
                            if persistent[v] {
                                return Err(invalid(field, format!("`{n}` is persistent: it has a value before the first function (use `modifies`)")));
                            }
                            if written[v] {
                                return Err(invalid(field, format!("`{n}` is written for the first time twice (use `modifies`)")));
                            }
                            written[v] = true;
                        }
                        _ => {
                            if !written[v] {
                                return Err(invalid(field, format!("`{n}` is used before any function writes it (list it in `persistent`)")));
                            }
                        }
                    }
                    fu.push((v, acc));
                }
            }
            for (j, n) in f.clears.iter().enumerate() {
                let field = format!("functions[{i}].clears[{j}]");
                let v = look(field.clone(), n)?;
                if persistent[v] {
                    return Err(invalid(
                        field,
                        format!("`{n}` is persistent and cannot be cleared"),
                    ));
                }
                if !written[v] {
                    return Err(invalid(
                        field,
                        format!("`{n}` is cleared before it is written"),
                    ));
                }
                cleared[v] = true;
            }
            uses.push(fu);
        }
        Ok(Uses {
            bytes: self.variables.iter().map(|v| v.bytes).collect(),
            persistent,
            durations,
            uses,
        })
    }

    pub fn compile(&self) -> Result<Instance, ModelError> {
        if self.functions.is_empty() {
            return Err(invalid("functions", "needs at least one function"));
        }
        let u = self.uses()?;
        let tensors = self
            .variables
            .iter()
            .map(|v| Tensor {
                name: v.name.clone(),
                size: Bytes(v.bytes),
                kind: v.kind,
                transferable: true,
                initial: Placement::Nowhere,
            })
            .collect();
        let ops = self
            .functions
            .iter()
            .zip(&u.uses)
            .map(|(f, fu)| {
                let of = |pred: fn(Access) -> bool| -> Vec<TensorId> {
                    fu.iter()
                        .filter(|(_, a)| pred(*a))
                        .map(|(v, _)| TensorId(*v as u32))
                        .collect()
                };
                Op {
                    name: f.name.clone(),
                    duration: Ticks(f.duration),
                    reads: of(|a| a.needs_data()),
                    produces: of(|a| a == Access::Write),
                    consumes: vec![],
                    frees: vec![],
                    modifies: of(|a| a == Access::Modify),
                    temp: Bytes::ZERO,
                    device: Device::Gpu,
                    required: true,
                    after: vec![],
                }
            })
            .collect();
        Ok(Instance {
            name: self.name.clone(),
            family: "op_sequence".into(),
            tensors,
            ops,
            order: ComputeOrder::Fixed((0..self.functions.len() as u32).map(OpId).collect()),
            machine: Machine {
                gpu_capacity: Bytes(self.gpu_memory),
                cpu_capacity: None,
                duplex: self.duplex,
                bandwidth: self.bandwidth.to_bandwidth(),
            },
            mode: Mode::Cyclic,
            release: self.release,
            allocator: self.allocator,
            groups: vec![],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq() -> OpSequence {
        serde_json::from_value(serde_json::json!({
            "name": "t", "variables": [
                {"name": "w", "bytes": 4, "kind": "weight"},
                {"name": "x", "bytes": 2}, {"name": "y", "bytes": 3}],
            "functions": [
                {"name": "f", "duration": 2, "reads": ["w"], "writes": ["x"]},
                {"name": "g", "duration": 1, "reads": ["x"], "writes": ["y"], "clears": ["x"]},
                {"name": "u", "duration": 1, "reads": ["y"], "modifies": ["w"]}],
            "persistent": ["w"], "gpu_memory": 100, "bandwidth": 1
        }))
        .unwrap()
    }

    #[test]
    fn compiles_and_profiles() {
        let s = seq();
        let inst = s.compile().unwrap();
        inst.validate().unwrap();
        assert_eq!(inst.ops[2].reads, vec![TensorId(2), TensorId(0)]);
        assert_eq!(inst.ops[2].modifies, vec![TensorId(0)]);
        let u = s.uses().unwrap();
        // f: w+x = 6; g: x+y = 5; u: y+w = 7.
        assert_eq!(u.least_memory(), 7);
        // resident: w always (4); x during f,g; y during g,u: 6, 9, 7.
        assert_eq!(u.resident_profile(), vec![6, 9, 7]);
    }

    #[test]
    fn rejects_use_after_clear_and_read_before_write() {
        let mut s = seq();
        s.functions[2].reads.push("x".into());
        let e = s.compile().unwrap_err().to_string();
        assert!(
            e.contains("functions[2].reads[1]") && e.contains("cleared"),
            "{e}"
        );
        let mut s = seq();
        s.functions[0].reads.push("y".into());
        let e = s.compile().unwrap_err().to_string();
        assert!(e.contains("functions[0].reads[1]"), "{e}");
        let mut s = seq();
        s.functions[0].duration = 0;
        assert!(s
            .compile()
            .unwrap_err()
            .to_string()
            .contains("functions[0].duration"));
    }
}
