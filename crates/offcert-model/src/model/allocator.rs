//! Which allocator the memory rule R7 counts with (`models/MODEL.md` §2.8).
//!
//! Owns: the name of an allocator model, [`Allocator`], its text form
//! (`exact`, `va:40MB`, `caching`) and its serde form (the same text).
//! Must not import: the rules or the allocators' state machines (those live in
//! `offcert-core`'s `allocator` module and, independently, in the re-check).

use crate::units::Bytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The allocator model R7 is judged under. [`Allocator::Exact`], the default
/// and the papers' model, counts bytes exactly; the two others are stricter:
/// a schedule valid under them is valid under `Exact`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Allocator {
    /// Today's rule: the exact sum of the bytes alive on the GPU.
    #[default]
    Exact,
    /// Virtual addressing with physical chunks of `chunk` bytes (the window
    /// paper's §4.2): every GPU allocation occupies ⌈size / chunk⌉ · chunk.
    Va { chunk: Bytes },
    /// A deterministic model of PyTorch's CUDA caching allocator (best fit,
    /// segments, splitting, no compaction), replayed request by request.
    Caching,
}

impl Allocator {
    pub fn is_default(&self) -> bool {
        *self == Allocator::Exact
    }
    /// What a report says next to the allocator's name.
    pub fn describe(self) -> &'static str {
        match self {
            Allocator::Exact => "exact byte count, no allocator (the papers' model)",
            Allocator::Va { .. } => {
                "virtual addressing: each GPU allocation rounded up to whole chunks"
            }
            Allocator::Caching => {
                "caching best-fit allocator (PyTorch's, modelled): segments, splits, no compaction"
            }
        }
    }
}

impl std::fmt::Display for Allocator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Allocator::Exact => f.write_str("exact"),
            Allocator::Va { chunk } => write!(f, "va:{}", chunk.human().replace(' ', "")),
            Allocator::Caching => f.write_str("caching"),
        }
    }
}

impl std::str::FromStr for Allocator {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "exact" => Ok(Allocator::Exact),
            "caching" => Ok(Allocator::Caching),
            other => {
                let Some(size) = other.strip_prefix("va:") else {
                    return Err(format!(
                        "unknown allocator `{s}` (exact, va:CHUNK such as va:40MB, or caching)"
                    ));
                };
                let chunk = Bytes::parse(size).map_err(|e| format!("allocator `{s}`: {e}"))?;
                if chunk == Bytes::ZERO {
                    return Err(format!("allocator `{s}`: the chunk must be positive"));
                }
                Ok(Allocator::Va { chunk })
            }
        }
    }
}

impl Serialize for Allocator {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Allocator {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips() {
        for (text, a) in [
            ("exact", Allocator::Exact),
            ("caching", Allocator::Caching),
            (
                "va:40MB",
                Allocator::Va {
                    chunk: Bytes(40_000_000),
                },
            ),
            (
                "va:2MiB",
                Allocator::Va {
                    chunk: Bytes(2 << 20),
                },
            ),
        ] {
            let parsed: Allocator = text.parse().unwrap();
            assert_eq!(parsed, a);
            assert_eq!(parsed.to_string().parse::<Allocator>().unwrap(), a);
        }
        assert_eq!(
            Allocator::Va {
                chunk: Bytes(40_000_000)
            }
            .to_string(),
            "va:40MB"
        );
    }

    #[test]
    fn bad_text_is_refused() {
        for bad in ["", "va:", "va:0", "va:1.5", "best_fit", "va:40XB", "Exact"] {
            assert!(bad.parse::<Allocator>().is_err(), "{bad}");
        }
    }
}
