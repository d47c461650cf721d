//! Units of the model: integer [`Ticks`] of time, integer [`Bytes`] of memory and an
//! exact rational [`Bandwidth`] in bytes per tick.
//!
//! Owns: unit newtypes and the exact arithmetic on them, and the one parser and
//! one formatter of amounts of memory ([`Bytes::parse`], [`Bytes::human`]) and
//! of time ([`parse_ns`], [`format_ns`], [`TickUnit`]), used by every option
//! and every printed figure. Imports nothing from the crate.
//! Validity is never decided with floats: every comparison here is on integers
//! (`u128`/`i128` where products could overflow 64 bits).
//!
//! Must not import: anything outside offcert-core (no solver, heuristic or
//! `offcert` module; Cargo enforces it).

use serde::{Deserialize, Serialize};
use std::fmt;

/// A point or span of time in integer ticks. Signed because cyclic replays shift
/// boundary-crossing transfers one period back (to negative times).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(transparent)]
pub struct Ticks(pub i64);

/// An amount of memory in bytes.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(transparent)]
pub struct Bytes(pub u64);

impl fmt::Display for Ticks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Ticks {
    pub const ZERO: Ticks = Ticks(0);
    pub fn checked_add(self, o: Ticks) -> Option<Ticks> {
        self.0.checked_add(o.0).map(Ticks)
    }
    pub fn checked_sub(self, o: Ticks) -> Option<Ticks> {
        self.0.checked_sub(o.0).map(Ticks)
    }
}

impl std::ops::Add for Ticks {
    type Output = Ticks;
    fn add(self, o: Ticks) -> Ticks {
        Ticks(self.0 + o.0)
    }
}

impl std::ops::Sub for Ticks {
    type Output = Ticks;
    fn sub(self, o: Ticks) -> Ticks {
        Ticks(self.0 - o.0)
    }
}

impl Bytes {
    pub const ZERO: Bytes = Bytes(0);
    pub fn checked_add(self, o: Bytes) -> Option<Bytes> {
        self.0.checked_add(o.0).map(Bytes)
    }
}

/// Link bandwidth β as an exact positive rational: `bytes` bytes per `ticks` ticks.
///
/// Kept as a fraction (not reduced on purpose: the file's numbers are shown back to
/// the user unchanged) because the papers' β rarely divides tensor sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Bandwidth {
    /// Numerator: bytes moved …
    pub bytes: u64,
    /// … per this many ticks (denominator).
    #[serde(default = "one")]
    pub ticks: u64,
}

fn one() -> u64 {
    1
}

impl Bandwidth {
    /// β = bytes/ticks. Both must be positive; the model loader rejects zero.
    pub fn new(bytes: u64, ticks: u64) -> Bandwidth {
        Bandwidth { bytes, ticks }
    }

    /// Does a transfer of `size` that lasts `took` respect β, i.e. `took >= size/β`?
    /// Exact: `took * bytes >= size * ticks` in 128-bit integers.
    pub fn allows(&self, size: Bytes, took: Ticks) -> bool {
        if took.0 < 0 {
            return size.0 == 0;
        }
        (took.0 as u128) * (self.bytes as u128) >= (size.0 as u128) * (self.ticks as u128)
    }

    /// The least whole number of ticks a transfer of `size` may last: ⌈size/β⌉.
    /// `None` if it does not fit in `i64` ticks.
    pub fn min_ticks(&self, size: Bytes) -> Option<Ticks> {
        let num = (size.0 as u128) * (self.ticks as u128);
        let den = self.bytes as u128;
        let q = num.div_ceil(den);
        i64::try_from(q).ok().map(Ticks)
    }

    /// Is size/β a whole number of ticks?
    pub fn divides(&self, size: Bytes) -> bool {
        ((size.0 as u128) * (self.ticks as u128)) % (self.bytes as u128) == 0
    }
}

impl fmt::Display for Bandwidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ticks == 1 {
            write!(f, "{} B/tick", self.bytes)
        } else {
            write!(f, "{}/{} B/tick", self.bytes, self.ticks)
        }
    }
}

/// Why a byte or time quantity did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    #[error("`{text}` is not {what}: {reason}")]
    Invalid {
        text: String,
        what: &'static str,
        reason: String,
    },
}

fn invalid(text: &str, what: &'static str, reason: impl Into<String>) -> UnitError {
    UnitError::Invalid {
        text: text.into(),
        what,
        reason: reason.into(),
    }
}

/// `number × mul / div` exactly, for a decimal `number` (`12`, `1.5`, `.25`),
/// or why not: not a number, not whole, or too large.
fn scaled(num: &str, mul: u128, div: u128) -> Result<u128, String> {
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let digits = format!("{int}{frac}");
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || frac.len() > 30 {
        return Err(format!("`{num}` is not a non-negative decimal number"));
    }
    let n: u128 = digits.parse().map_err(|_| "too large".to_string())?;
    let scale = 10u128.pow(frac.len() as u32) * div;
    let v = n.checked_mul(mul).ok_or("too large")?;
    if v % scale != 0 {
        return Err("not a whole number of the base unit".into());
    }
    Ok(v / scale)
}

/// Split `12.5GiB` into (`12.5`, `GiB`), trimming spaces between them.
fn split_unit(s: &str) -> (&str, &str) {
    let s = s.trim();
    let at = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    (s[..at].trim(), s[at..].trim())
}

/// Byte units: SI (powers of 1000) and IEC (powers of 1024), with or without
/// a trailing `B`; `k` and `K` are both 1000.
const BYTE_UNITS: [(&str, u128); 10] = [
    ("", 1),
    ("k", 1_000),
    ("K", 1_000),
    ("M", 1_000_000),
    ("G", 1_000_000_000),
    ("T", 1_000_000_000_000),
    ("Ki", 1 << 10),
    ("Mi", 1 << 20),
    ("Gi", 1 << 30),
    ("Ti", 1 << 40),
];

impl Bytes {
    /// The one parser of amounts of memory: a whole number of bytes, written
    /// as `1500`, `1500B`, `1.5K`, `1.5kB`, `2G`, `2 GB`, `64Mi`, `64MiB`,
    /// `1Ti` (K/M/G/T: powers of 1000; Ki/Mi/Gi/Ti: powers of 1024). Exact: a
    /// fraction of a byte is refused, never rounded.
    pub fn parse(text: &str) -> Result<Bytes, UnitError> {
        const WHAT: &str = "an amount of bytes (such as 1500, 2G, 1.5GB, 64MiB)";
        let (num, unit) = split_unit(text);
        let unit = unit.strip_suffix('B').unwrap_or(unit);
        let mul = BYTE_UNITS
            .iter()
            .find(|(u, _)| *u == unit)
            .map(|(_, m)| *m)
            .ok_or_else(|| invalid(text, WHAT, format!("unknown unit `{unit}B`")))?;
        let v = scaled(num, mul, 1).map_err(|r| invalid(text, WHAT, r))?;
        u64::try_from(v)
            .map(Bytes)
            .map_err(|_| invalid(text, WHAT, "more than 2^64 - 1 bytes"))
    }

    /// The one formatter of amounts of memory, for text: exact, in the largest
    /// SI unit not above the amount, with every significant digit
    /// (`215656448` → `215.656448 MB`, `2000000000` → `2 GB`, `999` → `999 B`).
    /// [`Bytes::parse`] reads it back to the same value.
    pub fn human(self) -> String {
        let units = [
            ("TB", 1_000_000_000_000u64),
            ("GB", 1_000_000_000),
            ("MB", 1_000_000),
            ("kB", 1_000),
        ];
        for (name, d) in units {
            if self.0 >= d {
                return format!("{} {name}", decimal(self.0 as u128, d as u128));
            }
        }
        format!("{} B", self.0)
    }
}

/// `v / d` as an exact decimal (`d` a power of ten), trailing zeros trimmed.
fn decimal(v: u128, d: u128) -> String {
    let (q, r) = (v / d, v % d);
    if r == 0 {
        return q.to_string();
    }
    let width = d.ilog10() as usize;
    let frac = format!("{r:0width$}");
    format!("{q}.{}", frac.trim_end_matches('0'))
}

/// Time units in nanoseconds.
const TIME_UNITS: [(&str, u128); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("min", 60_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// The one parser of spans of time: a whole number of nanoseconds, written
/// `250ns`, `1.5us` (or `µs`), `20ms`, `60s`, `2m` (or `min`), `1h`; a bare
/// number is in `default_unit` (one of those names; `None`: a unit is
/// required). Exact: a fraction of a nanosecond is refused.
pub fn parse_ns(text: &str, default_unit: Option<&str>) -> Result<u128, UnitError> {
    const WHAT: &str = "a time (such as 250ns, 1.5us, 20ms, 60s, 2m, 1h)";
    let (num, unit) = split_unit(text);
    let unit = match (unit, default_unit) {
        ("", Some(d)) => d,
        ("", None) => return Err(invalid(text, WHAT, "a unit is required")),
        (u, _) => u,
    };
    let mul = TIME_UNITS
        .iter()
        .find(|(u, _)| *u == unit)
        .map(|(_, m)| *m)
        .ok_or_else(|| invalid(text, WHAT, format!("unknown unit `{unit}`")))?;
    scaled(num, mul, 1).map_err(|r| invalid(text, WHAT, r))
}

/// The one formatter of spans of time, for text: exact, in the largest of
/// ns, µs, ms and s not above the span (`1234567` → `1.234567 ms`).
/// [`parse_ns`] reads it back to the same value.
pub fn format_ns(ns: i128) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let v = ns.unsigned_abs();
    for (name, d) in [("s", 1_000_000_000u128), ("ms", 1_000_000), ("µs", 1_000)] {
        if v >= d {
            return format!("{sign}{} {name}", decimal(v, d));
        }
    }
    format!("{sign}{v} ns")
}

/// How long one tick is, where an instance knows it (imported programs:
/// `offcert import et` writes 1 ns, `import rotor|rockmate` its `--tick-us`).
/// Written in files as a time, such as `"1ns"` or `"10us"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TickUnit {
    /// Nanoseconds per tick (positive).
    pub ns: u64,
}

impl TickUnit {
    pub fn parse(text: &str) -> Result<TickUnit, UnitError> {
        let ns = parse_ns(text, None)?;
        match u64::try_from(ns) {
            Ok(ns) if ns > 0 => Ok(TickUnit { ns }),
            _ => Err(invalid(
                text,
                "a tick length",
                "must be 1 ns to 2^64 - 1 ns",
            )),
        }
    }
}

impl fmt::Display for TickUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_ns(self.ns as i128).replace(' ', ""))
    }
}

impl Serialize for TickUnit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for TickUnit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<TickUnit, D::Error> {
        let s = String::deserialize(d)?;
        TickUnit::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl Ticks {
    /// The one formatter of times in ticks, for text: `120 ticks`, and with
    /// the instance's tick unit where it has one, `120 ticks (1.2 µs)`.
    pub fn human(self, unit: Option<TickUnit>) -> String {
        match unit {
            None => format!("{} ticks", self.0),
            Some(u) => format!(
                "{} ticks ({})",
                self.0,
                format_ns(self.0 as i128 * u.ns as i128)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bandwidth_is_exact_at_the_boundary() {
        let b = Bandwidth::new(3, 2); // 1.5 bytes per tick
        assert!(b.allows(Bytes(3), Ticks(2)));
        assert!(!b.allows(Bytes(4), Ticks(2)));
        assert_eq!(b.min_ticks(Bytes(4)), Some(Ticks(3)));
        assert_eq!(b.min_ticks(Bytes(3)), Some(Ticks(2)));
        assert!(b.divides(Bytes(3)));
        assert!(!b.divides(Bytes(4)));
    }

    #[test]
    fn bandwidth_handles_huge_sizes_without_overflow() {
        let b = Bandwidth::new(1, u64::MAX);
        assert_eq!(b.min_ticks(Bytes(u64::MAX)), None);
        assert!(!b.allows(Bytes(u64::MAX), Ticks(i64::MAX)));
    }

    #[test]
    fn bytes_parse_every_spelling_exactly() {
        for (text, v) in [
            ("1500", 1500),
            ("1500B", 1500),
            ("1.5K", 1500),
            ("1.5kB", 1500),
            ("2G", 2_000_000_000),
            ("2 GB", 2_000_000_000),
            ("64Mi", 64 << 20),
            ("64MiB", 64 << 20),
            ("1Ti", 1 << 40),
            ("215.656448 MB", 215_656_448),
        ] {
            assert_eq!(Bytes::parse(text), Ok(Bytes(v)), "{text}");
        }
        for bad in [
            "",
            "G",
            "1.5",
            "0.5K1",
            "2X",
            "-1",
            "1.0001B",
            "20000000000000000000",
        ] {
            assert!(Bytes::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bytes_and_times_format_exactly_and_parse_back() {
        assert_eq!(Bytes(215_656_448).human(), "215.656448 MB");
        assert_eq!(Bytes(2_000_000_000).human(), "2 GB");
        assert_eq!(Bytes(999).human(), "999 B");
        assert_eq!(format_ns(1_234_567), "1.234567 ms");
        assert_eq!(format_ns(-1_500), "-1.5 µs");
        assert_eq!(Ticks(120).human(None), "120 ticks");
        assert_eq!(
            Ticks(1200).human(Some(TickUnit { ns: 1 })),
            "1200 ticks (1.2 µs)"
        );
        for v in [0u64, 1, 999, 1000, 1001, 123_456_789, u64::MAX] {
            assert_eq!(Bytes::parse(&Bytes(v).human()), Ok(Bytes(v)), "{v}");
        }
        for v in [0i128, 1, 999, 1001, 61_000_000_123, i64::MAX as i128] {
            assert_eq!(parse_ns(&format_ns(v), None), Ok(v as u128), "{v}");
        }
        let u = TickUnit::parse("10us").unwrap();
        assert_eq!(u.ns, 10_000);
        assert_eq!(TickUnit::parse(&u.to_string()), Ok(u));
        assert!(TickUnit::parse("0ns").is_err());
        assert!(TickUnit::parse("0.5ns").is_err());
        assert_eq!(parse_ns("60", Some("s")), Ok(60_000_000_000));
        assert!(parse_ns("60", None).is_err());
    }
}
