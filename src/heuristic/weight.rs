//! Heuristics for `weight_chain` (being written).
use super::Heuristic;
pub fn heuristics() -> Vec<Box<dyn Heuristic>> {
    Vec::new()
}
