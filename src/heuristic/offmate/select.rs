//! SELECT (OFFMATE App. B): among a set of tensors, the subset whose total size
//! is at least a target and as small as possible, solved exactly.
//!
//! Exact: a sparse dynamic programme over the reachable partial sums below the
//! target (each item once), keeping, per sum, the colex-least index set, plus
//! the best completion at or above the target. Ties on the total are broken by
//! index: the subset that avoids the highest differing index wins (colex order,
//! the numerically least bit mask), so a subset of low-index tensors is
//! preferred. Unlike rockmate's rounding approximation it never rejects an exact
//! fit. The state space is bounded by the number of distinct sums below the
//! target (at most 2^n and at most target / gcd of the sizes).
//!
//! Owns: [`select`]. Must not import: anything but std.

use std::collections::BTreeMap;

/// The least-total subset of `sizes` whose total is ≥ `target`, as ascending
/// indices; ties broken by index (colex-least). `None` when even the whole set
/// falls short. A target of 0 gives the empty set.
pub fn select(sizes: &[u64], target: u64) -> Option<Vec<usize>> {
    if target == 0 {
        return Some(Vec::new());
    }
    // partial sums < target → colex-least index set reaching it.
    let mut below: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    below.insert(0, Vec::new());
    let mut best: Option<(u64, Vec<usize>)> = None;
    for (i, &s) in sizes.iter().enumerate() {
        let mut add: Vec<(u64, Vec<usize>)> = Vec::new();
        for (&sum, set) in &below {
            let total = sum.saturating_add(s);
            let mut with = set.clone();
            with.push(i);
            if total >= target {
                // Sets containing i are colex-greater than every earlier set:
                // replace only on a strictly smaller total.
                if best.as_ref().is_none_or(|(b, _)| total < *b) {
                    best = Some((total, with));
                }
            } else if !below.contains_key(&total) {
                add.push((total, with));
            }
        }
        for (total, with) in add {
            below.entry(total).or_insert(with);
        }
    }
    best.map(|(_, set)| set)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force over every mask: least total ≥ target, then least mask.
    fn brute(sizes: &[u64], target: u64) -> Option<Vec<usize>> {
        let n = sizes.len();
        let mut best: Option<(u64, u32)> = None;
        for mask in 0u32..(1 << n) {
            let total: u64 = (0..n)
                .filter(|i| mask >> i & 1 == 1)
                .map(|i| sizes[i])
                .sum();
            if total >= target && best.is_none_or(|(b, _)| total < b) {
                best = Some((total, mask));
            }
        }
        best.map(|(_, m)| (0..n).filter(|i| m >> i & 1 == 1).collect())
    }

    #[test]
    fn exact_fit_is_taken() {
        // rockmate's approximation rounds sizes and may miss 3 + 5 = 8 exactly.
        assert_eq!(select(&[4, 3, 6, 5], 8), Some(vec![1, 3]));
        assert_eq!(select(&[4, 4], 4), Some(vec![0]));
        assert_eq!(select(&[5, 5], 11), None);
        assert_eq!(select(&[5], 0), Some(vec![]));
    }

    #[test]
    fn ties_prefer_low_indices() {
        // {0,1} and {2} both total 6: colex prefers {0,1} (avoids index 2).
        assert_eq!(select(&[3, 3, 6], 6), Some(vec![0, 1]));
        assert_eq!(select(&[2, 7, 7], 7), Some(vec![1]));
    }

    #[test]
    fn agrees_with_brute_force() {
        let mut seed = 12345u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..400 {
            let n = (next() % 9) as usize;
            let sizes: Vec<u64> = (0..n).map(|_| 1 + next() % 12).collect();
            let total: u64 = sizes.iter().sum();
            let target = next() % (total + 3);
            assert_eq!(
                select(&sizes, target),
                brute(&sizes, target),
                "{sizes:?} {target}"
            );
        }
    }
}
