//! The operation sequences that rotor and rockmate compute for a chain, read
//! into offcert's terms so that the checker can replay them.
//!
//! - **rotor** (`rotor/algorithms/sequence.py`; `persistent` prints
//!   `repr(sequence)`): a list such as `[CF_0, Fn_1, Fe_2, L, B_2, B_1, B_0]`,
//!   as rotor prints it or as a JSON list of the same strings. Indices are
//!   rotor's (0-based, `0..L-1`); `Fe_i` is `ForwardEnable` (saves everything
//!   for the backward), `CF_i` is `ForwardCheck` (keeps its input),
//!   `Fn_i` is `ForwardNograd` (keeps nothing, not even its input), `B_i` is
//!   `Backward`, and `L` is `Loss` (the loss stage: its forward and backward).
//! - **rockmate** (`rockmate/def_sequence.py`, `SeqBlockFn|Fc|Fe|Bwd`,
//!   `SeqLoss`; written by `scripts/export_rockmate_sequence.py`): a JSON
//!   object `{"ops": [...]}` whose entries are either strings as above or
//!   objects `{"op": "Fe", "index": i, "option": k}` with `op` one of
//!   `Fn`, `Fc` (= `CF`), `Fe`, `Bwd` (= `B`), `Loss` (= `L`); `option` (the
//!   block's solution k, default 0) applies to `Fe` and `Bwd`.
//!
//! Every op is checked against the chain here (index in range, option in
//! range); errors name the op by its position (`ops[3]`). rotor's plain
//! `F_i` and `F_i->j` (homogeneous sequences) are refused: they are not part
//! of a persistent or rockmate sequence, and their meaning (what is kept) is
//! not in the sequence.
//!
//! Owns: [`ChainOp`], [`parse_sequence`], [`rotor_notation`].
//! Must not import: schedules, semantics, the checker, solvers.

use super::remat_chain::RematChain;

/// One op of a chain sequence, in offcert's 1-based layers (rotor's index
/// `i` is layer `i + 1`; the loss is layer `L + 1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainOp {
    /// `Fe_i`: the forward of `layer` with `option`, saving ā for the backward
    /// (`Fall{ℓ}` / `Fall{ℓ}.{k}`).
    ForwardAll { layer: usize, option: usize },
    /// `CF_i`: the forward `F{ℓ}`, keeping its input.
    ForwardCheck { layer: usize },
    /// `Fn_i`: the forward `F{ℓ}`, releasing its input at its end.
    ForwardNograd { layer: usize },
    /// `L`: the loss's forward and backward (`Fall{L+1}`, `B{L+1}`).
    Loss,
    /// `B_i`: the backward of `layer` with `option` (`B{ℓ}` / `B{ℓ}.{k}`).
    Backward { layer: usize, option: usize },
}

/// Why a sequence cannot be read; `field` names the op (`ops[3]`) or
/// `(syntax)`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{field}: {message}")]
pub struct SequenceError {
    pub field: String,
    pub message: String,
}

fn err(field: impl Into<String>, message: impl Into<String>) -> SequenceError {
    SequenceError {
        field: field.into(),
        message: message.into(),
    }
}

/// Reads a rotor or rockmate sequence (any of the forms in the module doc)
/// for chain `c`.
pub fn parse_sequence(text: &str, c: &RematChain) -> Result<Vec<ChainOp>, SequenceError> {
    let trimmed = text.trim_start();
    let json = trimmed.starts_with('{')
        || (trimmed.starts_with('[') && trimmed[1..].trim_start().starts_with(['"', '{']));
    let entries: Vec<Entry> = if json {
        json_entries(text)?
    } else {
        printed_entries(text)
    };
    if entries.is_empty() {
        return Err(err("ops", "the sequence has no op"));
    }
    entries
        .iter()
        .enumerate()
        .map(|(n, e)| resolve(e, c).map_err(|m| err(format!("ops[{n}]"), m)))
        .collect()
}

/// One entry before it is resolved against the chain.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    kind: String,
    index: Option<i64>,
    option: Option<i64>,
    text: String,
}

/// rotor's printed list: `[CF_0, Fn_1, L, B_0]`, brackets optional, entries
/// separated by commas or white space.
fn printed_entries(text: &str) -> Vec<Entry> {
    let body = text.trim().trim_start_matches('[').trim_end_matches(']');
    body.split(|ch: char| ch == ',' || ch.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(entry_of_name)
        .collect()
}

/// `Fe_2` → kind `Fe`, index 2; `L` → kind `L`.
fn entry_of_name(s: &str) -> Entry {
    let s = s.trim().trim_matches(['"', '\'']);
    let (kind, index) = match s.rsplit_once('_') {
        Some((k, i)) => (k.to_string(), i.parse::<i64>().ok()),
        None => (s.to_string(), None),
    };
    // `F_0->3` keeps its whole text as the kind so that it is refused by name.
    let kind = if s.contains("->") {
        s.to_string()
    } else {
        kind
    };
    Entry {
        kind,
        index,
        option: None,
        text: s.to_string(),
    }
}

fn json_entries(text: &str) -> Result<Vec<Entry>, SequenceError> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        err(
            "(syntax)",
            format!("line {} column {}: {e}", e.line(), e.column()),
        )
    })?;
    let list = match &v {
        serde_json::Value::Array(a) => a,
        serde_json::Value::Object(o) => match o.get("ops") {
            Some(serde_json::Value::Array(a)) => a,
            _ => return Err(err("ops", "expected a list of ops under \"ops\"")),
        },
        _ => {
            return Err(err(
                "(syntax)",
                "expected a list of ops or {\"ops\": [...]}",
            ))
        }
    };
    list.iter()
        .enumerate()
        .map(|(n, x)| json_entry(x).map_err(|m| err(format!("ops[{n}]"), m)))
        .collect()
}

fn json_entry(x: &serde_json::Value) -> Result<Entry, String> {
    match x {
        serde_json::Value::String(s) => Ok(entry_of_name(s)),
        serde_json::Value::Object(o) => {
            let kind = o
                .get("op")
                .and_then(|k| k.as_str())
                .ok_or("expected a string field \"op\"")?
                .to_string();
            let int = |f: &str| -> Result<Option<i64>, String> {
                match o.get(f) {
                    None | Some(serde_json::Value::Null) => Ok(None),
                    Some(v) => v
                        .as_i64()
                        .map(Some)
                        .ok_or_else(|| format!("\"{f}\" must be an integer")),
                }
            };
            let index = int("index")?;
            let option = int("option")?;
            Ok(Entry {
                text: format!("{kind}_{}", index.map_or("?".into(), |i| i.to_string())),
                kind,
                index,
                option,
            })
        }
        _ => Err("expected a string such as \"Fe_2\" or an object {\"op\": ..}".into()),
    }
}

/// The op an entry names, checked against the chain.
fn resolve(e: &Entry, c: &RematChain) -> Result<ChainOp, String> {
    let l = c.l();
    let kind = e.kind.as_str();
    if matches!(kind, "L" | "Loss") {
        return Ok(ChainOp::Loss);
    }
    if !matches!(kind, "Fe" | "CF" | "Fc" | "Fn" | "B" | "Bwd") {
        return Err(format!(
            "`{}`: unknown op (rotor's persistent sequences use Fe, CF, Fn, B and L; \
             plain F_i and F_i->j say nothing of what is kept)",
            e.text
        ));
    }
    let index = e.index.ok_or_else(|| {
        format!(
            "`{}`: expected an op such as Fe_2, CF_0, Fn_1, B_2 or L",
            e.text
        )
    })?;
    if index < 0 || index as usize >= l {
        return Err(format!(
            "`{}`: index {index} is outside the chain's blocks 0..{}",
            e.text,
            l.saturating_sub(1)
        ));
    }
    let layer = index as usize + 1;
    let option = |e: &Entry| -> Result<usize, String> {
        let k = e.option.unwrap_or(0);
        let n = c.options_of(layer).len() as i64;
        if k < 0 || k >= n {
            return Err(format!(
                "`{}`: option {k}, but block {index} has {n} option(s)",
                e.text
            ));
        }
        Ok(k as usize)
    };
    match kind {
        "Fe" => Ok(ChainOp::ForwardAll {
            layer,
            option: option(e)?,
        }),
        "CF" | "Fc" => no_option(e, ChainOp::ForwardCheck { layer }),
        "Fn" => no_option(e, ChainOp::ForwardNograd { layer }),
        "B" | "Bwd" => Ok(ChainOp::Backward {
            layer,
            option: option(e)?,
        }),
        _ => unreachable!("the kinds are matched above"),
    }
}

fn no_option(e: &Entry, op: ChainOp) -> Result<ChainOp, String> {
    match e.option {
        None | Some(0) => Ok(op),
        Some(k) => Err(format!(
            "`{}`: option {k} on a forward that saves nothing (options apply to Fe and Bwd)",
            e.text
        )),
    }
}

/// The sequence in rotor's notation (`Fe_i` … with rotor's 0-based indices);
/// an option other than 0 is written `Fe_i.k` / `B_i.k`, which
/// [`parse_sequence`] does not read (use the JSON object form for options).
pub fn rotor_notation(ops: &[ChainOp]) -> String {
    let names: Vec<String> = ops
        .iter()
        .map(|op| match *op {
            ChainOp::ForwardAll { layer, option: 0 } => format!("Fe_{}", layer - 1),
            ChainOp::ForwardAll { layer, option } => format!("Fe_{}.{option}", layer - 1),
            ChainOp::ForwardCheck { layer } => format!("CF_{}", layer - 1),
            ChainOp::ForwardNograd { layer } => format!("Fn_{}", layer - 1),
            ChainOp::Loss => "L".into(),
            ChainOp::Backward { layer, option: 0 } => format!("B_{}", layer - 1),
            ChainOp::Backward { layer, option } => format!("B_{}.{option}", layer - 1),
        })
        .collect();
    format!("[{}]", names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::remat_chain::{RematLayer, RematLoss, RematOption};
    use crate::family::BandwidthFile;

    fn chain(options: usize) -> RematChain {
        let layer = RematLayer {
            u_f: 1,
            u_b: 1,
            a: 1,
            abar: 2,
            options: vec![
                RematOption {
                    u_f: 2,
                    u_b: 2,
                    abar: 1,
                    o_f: 0,
                    o_b: 0
                };
                options
            ],
            ..Default::default()
        };
        RematChain {
            name: "c".into(),
            note: None,
            layers: vec![layer.clone(), layer],
            loss: RematLoss {
                u_f: 0,
                u_b: 1,
                abar: 0,
                o_f: 0,
                o_b: 0,
            },
            a0: 1,
            delta0: None,
            gpu_memory: 100,
            bandwidth: BandwidthFile::PerTick(1),
            release: Default::default(),
            allocator: Default::default(),
        }
    }

    #[test]
    fn the_printed_list_the_json_list_and_the_object_form_agree() {
        let c = chain(1);
        let want = vec![
            ChainOp::ForwardCheck { layer: 1 },
            ChainOp::ForwardNograd { layer: 2 },
            ChainOp::Loss,
            ChainOp::ForwardAll {
                layer: 1,
                option: 0,
            },
            ChainOp::ForwardAll {
                layer: 2,
                option: 0,
            },
            ChainOp::Backward {
                layer: 2,
                option: 0,
            },
            ChainOp::Backward {
                layer: 1,
                option: 0,
            },
        ];
        let printed = "[CF_0, Fn_1, L, Fe_0, Fe_1, B_1, B_0]";
        assert_eq!(parse_sequence(printed, &c).unwrap(), want);
        assert_eq!(
            parse_sequence("CF_0 Fn_1\nL Fe_0 Fe_1 B_1 B_0", &c).unwrap(),
            want
        );
        let json = r#"["CF_0", "Fn_1", "L", "Fe_0", "Fe_1", "B_1", "B_0"]"#;
        assert_eq!(parse_sequence(json, &c).unwrap(), want);
        let obj = r#"{"ops": [{"op": "Fc", "index": 0}, {"op": "Fn", "index": 1}, {"op": "Loss"},
            {"op": "Fe", "index": 0}, "Fe_1", {"op": "Bwd", "index": 1, "option": 0}, "B_0"]}"#;
        assert_eq!(parse_sequence(obj, &c).unwrap(), want);
        assert_eq!(rotor_notation(&want), printed);
    }

    #[test]
    fn options_are_read_and_checked() {
        let c = chain(1);
        let obj = r#"{"ops": [{"op": "Fe", "index": 1, "option": 1}, {"op": "Bwd", "index": 1, "option": 1}]}"#;
        assert_eq!(
            parse_sequence(obj, &c).unwrap(),
            vec![
                ChainOp::ForwardAll {
                    layer: 2,
                    option: 1
                },
                ChainOp::Backward {
                    layer: 2,
                    option: 1
                }
            ]
        );
        let e =
            parse_sequence(r#"{"ops": [{"op": "Fe", "index": 1, "option": 2}]}"#, &c).unwrap_err();
        assert_eq!(e.field, "ops[0]");
        assert!(
            e.message.contains("option 2, but block 1 has 2 option(s)"),
            "{e}"
        );
        let e =
            parse_sequence(r#"{"ops": [{"op": "Fn", "index": 1, "option": 1}]}"#, &c).unwrap_err();
        assert!(e.message.contains("saves nothing"), "{e}");
    }

    #[test]
    fn errors_name_the_op() {
        let c = chain(0);
        for (text, field, msg) in [
            (
                "[Fe_0, Fe_2, L]",
                "ops[1]",
                "index 2 is outside the chain's blocks 0..1",
            ),
            ("[Fe_0, F_0->1]", "ops[1]", "unknown op"),
            ("[Fe_0, F_1]", "ops[1]", "unknown op"),
            ("[Fe_0, Fe]", "ops[1]", "expected an op such as"),
            ("[Fe_0, Fx_1]", "ops[1]", "unknown op"),
            ("[Fe_-1]", "ops[0]", "index -1"),
            ("[]", "ops", "no op"),
            ("{\"ops\": 3}", "ops", "expected a list"),
            ("[\"Fe_0\", 7]", "ops[1]", "expected a string"),
            ("{\"ops\": [{\"index\": 0}]}", "ops[0]", "\"op\""),
            ("{\"ops\": [", "(syntax)", "line 1"),
        ] {
            let e = parse_sequence(text, &c).unwrap_err();
            assert_eq!(e.field, field, "{text}: {e}");
            assert!(e.message.contains(msg), "{text}: {e}");
        }
    }
}
