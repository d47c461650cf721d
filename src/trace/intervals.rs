//! Unions of half-open time intervals, for busy, idle and overlap measures.
//!
//! Owns: [`Intervals`]. Integer nanoseconds, exact. Imports nothing but `Nanos`.
//!
//! Must not import: solvers (`lp`, `exact`), bounds, heuristics, reports, the
//! CLI.

use super::Nanos;

/// A set of disjoint, sorted, non-empty half-open intervals `[start, end)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Intervals(Vec<(i64, i64)>);

impl Intervals {
    /// The union of `items` (empty intervals contribute nothing).
    pub fn union_of(items: impl IntoIterator<Item = (Nanos, Nanos)>) -> Intervals {
        let mut v: Vec<(i64, i64)> = items
            .into_iter()
            .filter(|(s, e)| e > s)
            .map(|(s, e)| (s.0, e.0))
            .collect();
        v.sort_unstable();
        let mut out: Vec<(i64, i64)> = Vec::with_capacity(v.len());
        for (s, e) in v {
            match out.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => out.push((s, e)),
            }
        }
        Intervals(out)
    }

    /// Total length.
    pub fn total(&self) -> i128 {
        self.0
            .iter()
            .map(|(s, e)| (*e as i128) - (*s as i128))
            .sum()
    }

    /// Length of the intersection with `other`.
    pub fn overlap(&self, other: &Intervals) -> i128 {
        let (a, b) = (&self.0, &other.0);
        let (mut i, mut j, mut sum) = (0, 0, 0i128);
        while i < a.len() && j < b.len() {
            let lo = a[i].0.max(b[j].0);
            let hi = a[i].1.min(b[j].1);
            if hi > lo {
                sum += (hi as i128) - (lo as i128);
            }
            if a[i].1 < b[j].1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        sum
    }

    /// Length of `self` not covered by `other`.
    pub fn minus(&self, other: &Intervals) -> i128 {
        self.total() - self.overlap(other)
    }

    /// First start and last end, if any.
    pub fn span(&self) -> Option<(Nanos, Nanos)> {
        Some((Nanos(self.0.first()?.0), Nanos(self.0.last()?.1)))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck_macros::quickcheck;

    fn iv(v: &[(i64, i64)]) -> Intervals {
        Intervals::union_of(v.iter().map(|(a, b)| (Nanos(*a), Nanos(*b))))
    }

    #[test]
    fn union_and_overlap() {
        let a = iv(&[(0, 10), (5, 15), (20, 30), (30, 31), (40, 40)]);
        assert_eq!(a.total(), 26);
        let b = iv(&[(8, 22)]);
        assert_eq!(a.overlap(&b), 9);
        assert_eq!(a.minus(&b), 17);
        assert_eq!(a.span(), Some((Nanos(0), Nanos(31))));
    }

    /// Against a plain oracle: count covered unit cells.
    #[quickcheck]
    fn matches_cell_count(xs: Vec<(u8, u8)>, ys: Vec<(u8, u8)>) -> bool {
        let norm = |v: &Vec<(u8, u8)>| {
            v.iter()
                .map(|(a, b)| (*a.min(b) as i64, *a.max(b) as i64))
                .collect::<Vec<_>>()
        };
        let (xs, ys) = (norm(&xs), norm(&ys));
        let cover = |v: &Vec<(i64, i64)>, c: i64| v.iter().any(|(s, e)| *s <= c && c < *e);
        let both = (0..256)
            .filter(|c| cover(&xs, *c) && cover(&ys, *c))
            .count() as i128;
        let only = (0..256).filter(|c| cover(&xs, *c)).count() as i128;
        let (a, b) = (iv(&xs), iv(&ys));
        a.total() == only && a.overlap(&b) == both
    }
}
