//! The finer limits the exact graph methods share (Checkmate's MILP and the
//! graph search): the instance is a DAG instance (`family::dag`), moves
//! nothing (offloading is not encoded) and has no op of duration 0.
//!
//! Owns: [`exact_dag`]. Must not import: the methods, the door, the
//! cross-check.

use super::{ExactError, Method};
use crate::family::dag::Dag;
use crate::model::Instance;

/// The DAG of `inst` inside the exact graph methods' finer limits (the same
/// for every exact graph method).
pub fn exact_dag(inst: &Instance, method: Method) -> Result<Dag, ExactError> {
    let dag = Dag::of(inst).map_err(|e| ExactError::Unsupported {
        method,
        reason: e.to_string(),
    })?;
    let refuse = |reason: String| ExactError::Unsupported { method, reason };
    if dag.movable {
        return Err(refuse(
            "offloading is enabled (movable outputs): transfers are not encoded".into(),
        ));
    }
    if let Some(v) = (0..dag.len()).find(|&v| dag.duration[v] <= 0) {
        return Err(refuse(format!(
            "op {} has duration 0: its releases would come before it (MODEL.md §2.4)",
            inst.ops[v].name
        )));
    }
    Ok(dag)
}
