//! Heuristics for `weight_chain` (weight paper §5 and its L2L baseline): one
//! file per heuristic, sharing the selection (Algorithm 1) and the period
//! simulation (Algorithm 2).
//!
//! Owns: [`Greedy`] (with and without the discount: Greedy and Greedy*), [`L2l`],
//! the registry. Every schedule goes through the checker in
//! [`crate::heuristic::run`]; the period reported is the checker's.
//! Must not import: bounds, exact solvers.

pub mod frame;
pub mod greedy;
pub mod l2l;
pub mod replan;
pub mod selection;

pub use greedy::Greedy;
pub use l2l::L2l;

use super::{Heuristic, HeuristicError};
use crate::family::{InstanceFile, WeightChain};

/// Greedy, Greedy* and L2L.
pub fn heuristics() -> Vec<Box<dyn Heuristic>> {
    vec![
        Box::new(Greedy::paper()),
        Box::new(Greedy::no_discount()),
        Box::new(L2l),
    ]
}

fn chain<'a>(
    name: &'static str,
    file: &'a InstanceFile,
) -> Result<&'a WeightChain, HeuristicError> {
    file.weight_chain()
        .ok_or_else(|| HeuristicError::NotApplicable {
            heuristic: name,
            family: file.family().into(),
        })
}

/// The op whose memory alone exceeds the GPU (then no schedule exists).
fn too_big(name: &'static str, c: &WeightChain) -> Result<Vec<u64>, HeuristicError> {
    let mem = c.op_memory().ok_or_else(|| HeuristicError::NoSchedule {
        heuristic: name,
        reason: "memory sizes overflow 64 bits".into(),
    })?;
    for (idx, m) in mem.iter().enumerate() {
        if *m > c.gpu_memory {
            let op = match selection::step(c.l(), idx) {
                selection::Step::F(i) => format!("F{i}"),
                selection::Step::B(i) => format!("B{i}"),
            };
            return Err(HeuristicError::NoSchedule {
                heuristic: name,
                reason: format!(
                    "{op} alone needs {m} B (eq. (1)) > GPU memory {} B",
                    c.gpu_memory
                ),
            });
        }
    }
    Ok(mem)
}
