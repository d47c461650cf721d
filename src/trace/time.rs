//! Exact trace times: JSON number text in microseconds → integer nanoseconds.
//!
//! Owns: [`Nanos`] and the decimal parser. Never goes through `f64`: Kineto writes
//! absolute epoch microseconds with fractional digits (`1689179597343666.123`)
//! that no `f64` holds exactly. Imports nothing from the crate.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A point or span of time in integer nanoseconds.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Nanos(pub i64);

impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ns", self.0)
    }
}

impl Nanos {
    /// Microseconds with exactly three decimals, as Kineto writes them.
    pub fn as_micros_text(self) -> String {
        let sign = if self.0 < 0 { "-" } else { "" };
        let a = self.0.unsigned_abs();
        format!("{sign}{}.{:03}", a / 1000, a % 1000)
    }
}

/// Why a number was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NumberError {
    #[error("`{0}` is not a JSON number")]
    NotANumber(String),
    #[error("`{0}` is too large (the time must fit 64-bit nanoseconds)")]
    TooLarge(String),
    #[error("`{0}` must not be negative")]
    Negative(String),
    #[error("`{0}` is not a whole number")]
    NotWhole(String),
}

/// A JSON number as `digits × 10^exp` with its sign, exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decimal {
    pub negative: bool,
    pub digits: u128,
    pub exp: i32,
}

/// At most this many significant digits (u128 holds 38).
const MAX_DIGITS: usize = 36;

impl Decimal {
    /// Parse JSON number text (`-?int(.frac)?([eE][+-]?exp)?`), exactly.
    pub fn parse(text: &str) -> Result<Decimal, NumberError> {
        let bad = || NumberError::NotANumber(clip(text));
        let b = text.trim().as_bytes();
        let mut i = 0;
        let negative = b.first() == Some(&b'-');
        if negative {
            i += 1;
        }
        let mut digits: u128 = 0;
        let mut nd = 0usize; // significant digits kept
        let mut exp: i64 = 0;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            push_digit(&mut digits, &mut nd, &mut exp, b[i], false, text)?;
            i += 1;
        }
        if i == start {
            return Err(bad());
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            let fs = i;
            while i < b.len() && b[i].is_ascii_digit() {
                push_digit(&mut digits, &mut nd, &mut exp, b[i], true, text)?;
                i += 1;
            }
            if i == fs {
                return Err(bad());
            }
        }
        if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
            i += 1;
            let mut eneg = false;
            if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
                eneg = b[i] == b'-';
                i += 1;
            }
            let es = i;
            let mut e: i64 = 0;
            while i < b.len() && b[i].is_ascii_digit() {
                e = e * 10 + (b[i] - b'0') as i64;
                if e > 100_000 {
                    return Err(NumberError::TooLarge(clip(text)));
                }
                i += 1;
            }
            if i == es {
                return Err(bad());
            }
            exp += if eneg { -e } else { e };
        }
        if i != b.len() {
            return Err(bad());
        }
        if digits == 0 {
            exp = 0;
        }
        let exp = i32::try_from(exp).map_err(|_| NumberError::TooLarge(clip(text)))?;
        Ok(Decimal {
            negative,
            digits,
            exp,
        })
    }

    /// `self × 10^shift` as an integer, rounded toward −∞, and whether digits were dropped.
    pub fn scaled_floor(&self, shift: i32, text: &str) -> Result<(i64, bool), NumberError> {
        let e = self.exp as i64 + shift as i64;
        let too_large = || NumberError::TooLarge(clip(text));
        let (mag, exact) = if e >= 0 {
            if self.digits == 0 {
                (0u128, true)
            } else {
                if e > 38 {
                    return Err(too_large());
                }
                let m = self
                    .digits
                    .checked_mul(10u128.pow(e as u32))
                    .ok_or_else(too_large)?;
                (m, true)
            }
        } else if -e > 38 {
            (0, self.digits == 0)
        } else {
            let p = 10u128.pow((-e) as u32);
            (self.digits / p, self.digits % p == 0)
        };
        let mag = i128::try_from(mag).map_err(|_| too_large())?;
        let v = if self.negative {
            -mag - if exact { 0 } else { 1 }
        } else {
            mag
        };
        let v = i64::try_from(v).map_err(|_| too_large())?;
        Ok((v, !exact))
    }
}

fn push_digit(
    digits: &mut u128,
    nd: &mut usize,
    exp: &mut i64,
    c: u8,
    frac: bool,
    text: &str,
) -> Result<(), NumberError> {
    let d = (c - b'0') as u128;
    if *nd == 0 && d == 0 {
        // Leading zeros carry no information.
        if frac {
            *exp -= 1;
        }
        return Ok(());
    }
    if *nd >= MAX_DIGITS {
        // More significant digits than any 64-bit nanosecond time has.
        return Err(NumberError::TooLarge(clip(text)));
    }
    *digits = *digits * 10 + d;
    *nd += 1;
    if frac {
        *exp -= 1;
    }
    Ok(())
}

fn clip(s: &str) -> String {
    let s = s.trim();
    if s.len() > 40 {
        let mut end = 40;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &s[..end])
    } else {
        s.to_string()
    }
}

/// Parsed microseconds → nanoseconds, and whether sub-nanosecond digits were dropped
/// (rounded toward −∞).
pub fn micros_to_nanos(text: &str) -> Result<(Nanos, bool), NumberError> {
    let d = Decimal::parse(text)?;
    let (v, dropped) = d.scaled_floor(3, text)?;
    Ok((Nanos(v), dropped))
}

/// How many fractional digits the text carries (for the timestamp resolution).
pub fn fraction_digits(text: &str) -> u32 {
    match text.find('.') {
        None => 0,
        Some(p) => text[p + 1..]
            .bytes()
            .take_while(|c| c.is_ascii_digit())
            .count() as u32,
    }
}

/// A whole number that fits `i64` (sizes, ids, deltas). `1024.0` and `1e3` are whole.
pub fn whole(text: &str) -> Result<i64, NumberError> {
    let d = Decimal::parse(text)?;
    let (v, dropped) = d.scaled_floor(0, text)?;
    if dropped {
        return Err(NumberError::NotWhole(clip(text)));
    }
    Ok(v)
}

/// A non-negative whole number.
pub fn whole_nonneg(text: &str) -> Result<u64, NumberError> {
    let v = whole(text)?;
    u64::try_from(v).map_err(|_| NumberError::Negative(clip(text)))
}

/// A decimal written by a person (`--link-gbps 12.5`) as an exact fraction num/den.
pub fn decimal_fraction(text: &str) -> Result<(u128, u128), NumberError> {
    let d = Decimal::parse(text)?;
    if d.negative && d.digits != 0 {
        return Err(NumberError::Negative(clip(text)));
    }
    if d.exp >= 0 {
        if d.exp > 20 {
            return Err(NumberError::TooLarge(clip(text)));
        }
        let n = d
            .digits
            .checked_mul(10u128.pow(d.exp as u32))
            .ok_or_else(|| NumberError::TooLarge(clip(text)))?;
        Ok((n, 1))
    } else {
        if -d.exp > 30 {
            return Err(NumberError::TooLarge(clip(text)));
        }
        Ok((d.digits, 10u128.pow((-d.exp) as u32)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micros_are_exact_where_f64_is_not() {
        // 1689179597343666.123 µs: an f64 holds 1689179597343666.0 or .25, not .123.
        let (n, dropped) = micros_to_nanos("1689179597343666.123").unwrap();
        assert_eq!(n, Nanos(1_689_179_597_343_666_123));
        assert!(!dropped);
        assert_ne!((1689179597343666.123f64 * 1000.0) as i64, n.0);
        assert_eq!(micros_to_nanos("12").unwrap(), (Nanos(12_000), false));
        assert_eq!(micros_to_nanos("0.0015").unwrap(), (Nanos(1), true));
        assert_eq!(micros_to_nanos("-0.0015").unwrap(), (Nanos(-2), true));
        assert_eq!(micros_to_nanos("1.5e3").unwrap(), (Nanos(1_500_000), false));
        assert_eq!(micros_to_nanos("1e-3").unwrap(), (Nanos(1), false));
        assert_eq!(micros_to_nanos("0.000").unwrap(), (Nanos(0), false));
    }

    #[test]
    fn refuses_huge_and_malformed_numbers() {
        assert!(matches!(
            micros_to_nanos("1e400"),
            Err(NumberError::TooLarge(_))
        ));
        assert!(matches!(
            micros_to_nanos("99999999999999999999"),
            Err(NumberError::TooLarge(_))
        ));
        assert!(matches!(
            micros_to_nanos(&"9".repeat(5000)),
            Err(NumberError::TooLarge(_))
        ));
        assert!(matches!(
            micros_to_nanos("\"12\""),
            Err(NumberError::NotANumber(_))
        ));
        assert!(matches!(
            micros_to_nanos("1."),
            Err(NumberError::NotANumber(_))
        ));
        assert!(matches!(
            micros_to_nanos("-"),
            Err(NumberError::NotANumber(_))
        ));
        assert!(matches!(whole("1.5"), Err(NumberError::NotWhole(_))));
        assert_eq!(whole("1024.0").unwrap(), 1024);
        assert!(matches!(whole_nonneg("-3"), Err(NumberError::Negative(_))));
        assert_eq!(decimal_fraction("12.5").unwrap(), (125, 10));
    }

    #[test]
    fn micros_text_round_trips() {
        for v in [0i64, 1, 999, 1000, 1_689_179_597_343_666_123, -1, -1001] {
            let t = Nanos(v).as_micros_text();
            assert_eq!(micros_to_nanos(&t).unwrap(), (Nanos(v), false), "{t}");
        }
    }
}
