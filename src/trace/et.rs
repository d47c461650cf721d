//! PyTorch execution traces (ET) → `op_sequence` instances (FAMILIES.md §4.8).
//!
//! Owns: [`import`] and its options, the ET reader (schemas 1.0.1 and Chakra
//! `1.x.y-chakra.*`), the Kineto CPU-op/kernel linking for durations, the
//! stated cost model, and [`EtError`].
//! Must not import: solvers, heuristics, bounds, the checker.
//!
//! Mapping:
//! - variables are storages of CUDA tensors (`[tensor_id, storage_id, offset,
//!   numel, itemsize, device]`); a storage's size is the largest
//!   (offset + numel)·itemsize over its references, so views share it;
//!   host tensors and empty storages are left out (counted in the report);
//! - functions are top-level operators (nodes with an `op_schema` and no
//!   operator ancestor), in `rf_id` order; every descendant's tensors are
//!   folded into its top-level operator;
//! - a storage first met as an input existed before the iteration: persistent;
//!   one first met as an output is written for the first time there; an output
//!   of an already known storage is a modification for in-place operators
//!   (name ending in `_` or a `!` in the schema); otherwise it is a view (a
//!   read) when the storage is among the node's inputs, and a modification
//!   when it is not;
//! - an operator modifies the input arguments its schema marks `!` (every
//!   tensor of a written list), host or not: `copy_(host, cuda)` only reads
//!   the CUDA tensor. Where the schema's arguments do not line up with the
//!   inputs, an in-place operator modifies its first tensor argument;
//! - with [`EtOptions::split_reused_storages`] (the CLI's default; off with
//!   `--merge-reused-storages`, the reading before 2026-11-27, kept to
//!   compare): storage ids are reused: PyTorch's ET names a storage by its data pointer,
//!   and the caching allocator hands a freed block to the next request, so one
//!   id can name several tensors in turn. A *new* tensor (a tensor id not met
//!   before on that storage) output by an operator that is not in-place, at a
//!   storage that is not among the node's inputs, is a fresh allocation at a
//!   reused address: a new variable `s{id}.{k}` (k = 1, 2, ...), written
//!   there, and every later reference to the storage id names it (once per
//!   top-level operator: its nested nodes name one tensor). Without this,
//!   every reuse read as a modification of one long-lived variable;
//! - storages created in the iteration are dead after their last use (the
//!   ET records no frees; PyTorch's allocator frees a storage when its last
//!   reference goes), so "alive after the last operator" means persistent.
//!
//! Durations: with a Kineto trace of the same run, ET operators are matched to
//! Kineto top-level CPU ops by an ordering match (the Kineto files at hand
//! carry no `Record function id`, so `rf_id` cannot be joined): both sequences
//! are start-ordered; the ET names are matched as a subsequence from the
//! Kineto start that links most operators, each operator looking at most
//! [`LOOKAHEAD`] Kineto ops ahead. A matched op's duration is the sum of the
//! GPU activities (kernels, memsets, memcpys) whose `correlation` is that of a
//! runtime call on the op's thread inside its interval, in ns. Without Kineto
//! (or for an unlinked operator) the cost model applies: view-like operators
//! 1 ns, others 5 µs + bytes touched / 450 GB/s. Every duration is at least
//! 1 ns (family rule). The instance note says which source was used.

use crate::family::op_sequence::{Function, OpSequence, Variable};
use crate::family::BandwidthFile;
use crate::io::{json_error, FieldError, InputError};
use crate::model::{Duplex, ReleaseRule, TensorKind};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::path::Path;

/// Kineto ops an ET operator may skip to find its match.
pub const LOOKAHEAD: usize = 64;
/// Largest decompressed input accepted (hostile-input guard).
const MAX_BYTES: u64 = 2 << 30;

/// Why an ET (or its Kineto trace) cannot be imported: the input errors every
/// loader shares (unreadable file, malformed JSON, a bad field, named as the
/// loaders name them), or a corrupt gzip stream.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EtError {
    /// Read, Json or Field, as [`InputError`] says them.
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("{file}: corrupt or truncated gzip stream: {message}")]
    Gzip { file: String, message: String },
}

/// Options of `offcert import et`.
#[derive(Clone, Debug)]
pub struct EtOptions {
    pub name: String,
    /// GPU memory; `None`: the no-offload peak.
    pub gpu_memory: Option<u64>,
    /// β in bytes per ns (per direction, full duplex).
    pub bandwidth: BandwidthFile,
    /// A storage id reused by a fresh tensor becomes a new variable (module
    /// docs; the CLI's default). Off (`--merge-reused-storages`): every reuse
    /// reads as a modification of one variable, the reading before
    /// 2026-11-27, kept to compare.
    pub split_reused_storages: bool,
}

/// What the import could and could not link.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct EtReport {
    pub schema: String,
    pub functions: usize,
    pub variables: usize,
    pub persistent: usize,
    pub host_tensors_skipped: usize,
    pub empty_storages_skipped: usize,
    pub duration_source: String,
    pub linked: usize,
    pub unlinked: Vec<String>,
    pub kernels_linked: usize,
}

/// Read a file, gunzipping it if it starts with the gzip magic.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, EtError> {
    let file = path.display().to_string();
    let raw = std::fs::read(path).map_err(|error| InputError::Read {
        file: file.clone(),
        error,
    })?;
    gunzip(&file, raw)
}

pub fn gunzip(file: &str, raw: Vec<u8>) -> Result<Vec<u8>, EtError> {
    if !raw.starts_with(&[0x1f, 0x8b]) {
        return Ok(raw);
    }
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(raw.as_slice())
        .take(MAX_BYTES)
        .read_to_end(&mut out)
        .map_err(|e| EtError::Gzip {
            file: file.into(),
            message: e.to_string(),
        })?;
    Ok(out)
}

fn parse(file: &str, bytes: &[u8]) -> Result<Value, EtError> {
    Ok(serde_json::from_slice(bytes).map_err(|e| json_error(file, e))?)
}

fn field(file: &str, f: impl Into<String>, m: impl Into<String>) -> EtError {
    InputError::Field(FieldError {
        file: file.into(),
        field: f.into(),
        message: m.into(),
    })
    .into()
}

/// One ET node, schema-independent.
struct Node<'a> {
    id: i64,
    parent: Option<i64>,
    name: &'a str,
    rf_id: Option<i64>,
    is_op: bool,
    /// The schema marks an argument as written (`Tensor(a!)`).
    mutating: bool,
    /// Per schema argument (in the order of `inputs`), whether the schema
    /// marks it written; `None` when the schema's arguments cannot be read.
    written_args: Option<Vec<bool>>,
    ins: Vec<(&'a Value, &'a str)>,
    outs: Vec<(&'a Value, &'a str)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Schema {
    Legacy,
    Chakra,
}

fn schema_of(file: &str, root: &Value) -> Result<(Schema, String), EtError> {
    let s = root.get("schema").and_then(Value::as_str).ok_or_else(|| {
        field(
            file,
            "schema",
            "missing or not a string (not an execution trace)",
        )
    })?;
    if s.contains("chakra") && s.starts_with("1.") {
        Ok((Schema::Chakra, s.into()))
    } else if s.starts_with("1.0.") {
        Ok((Schema::Legacy, s.into()))
    } else {
        Err(field(
            file,
            "schema",
            format!("unknown schema `{s}` (1.0.x or 1.x.y-chakra.*)"),
        ))
    }
}

fn pairs<'a>(
    file: &str,
    at: &str,
    vals: Option<&'a Value>,
    types: Option<&'a Value>,
) -> Result<Vec<(&'a Value, &'a str)>, EtError> {
    let (Some(vals), Some(types)) = (vals, types) else {
        return Ok(vec![]);
    };
    let (Some(v), Some(t)) = (vals.as_array(), types.as_array()) else {
        return Err(field(file, at, "values and types must be arrays"));
    };
    if v.len() != t.len() {
        return Err(field(
            file,
            at,
            format!("{} values but {} types", v.len(), t.len()),
        ));
    }
    v.iter()
        .zip(t)
        .map(|(x, ty)| {
            Ok((
                x,
                ty.as_str()
                    .ok_or_else(|| field(file, at, "a type is not a string"))?,
            ))
        })
        .collect()
}

fn nodes<'a>(file: &str, root: &'a Value, schema: Schema) -> Result<Vec<Node<'a>>, EtError> {
    let arr = root
        .get("nodes")
        .and_then(Value::as_array)
        .ok_or_else(|| field(file, "nodes", "missing or not an array"))?;
    let mut out = Vec::with_capacity(arr.len());
    for (i, n) in arr.iter().enumerate() {
        let at = |k: &str| format!("nodes[{i}].{k}");
        let id = n
            .get("id")
            .and_then(Value::as_i64)
            .ok_or_else(|| field(file, at("id"), "missing or not an integer"))?;
        let name = n
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| field(file, at("name"), "missing or not a string"))?;
        let (parent, rf_id, schema_s, ins, outs) = match schema {
            Schema::Legacy => (
                n.get("parent").and_then(Value::as_i64),
                n.get("rf_id").and_then(Value::as_i64),
                n.get("op_schema").and_then(Value::as_str).unwrap_or(""),
                pairs(file, &at("inputs"), n.get("inputs"), n.get("input_types"))?,
                pairs(
                    file,
                    &at("outputs"),
                    n.get("outputs"),
                    n.get("output_types"),
                )?,
            ),
            Schema::Chakra => {
                let attr = |k: &str| {
                    n.get("attrs")
                        .and_then(Value::as_array)
                        .and_then(|a| {
                            a.iter()
                                .find(|x| x.get("name").and_then(Value::as_str) == Some(k))
                        })
                        .and_then(|x| x.get("value"))
                };
                let io = |k: &str| -> Result<Vec<(&'a Value, &'a str)>, EtError> {
                    match n.get(k) {
                        None => Ok(vec![]),
                        Some(o) => pairs(file, &at(k), o.get("values"), o.get("types")),
                    }
                };
                (
                    n.get("ctrl_deps").and_then(Value::as_i64),
                    attr("rf_id").and_then(Value::as_i64),
                    attr("op_schema").and_then(Value::as_str).unwrap_or(""),
                    io("inputs")?,
                    io("outputs")?,
                )
            }
        };
        let mutating = schema_s.contains('!');
        let written_args = written_args(schema_s);
        out.push(Node {
            id,
            parent,
            name,
            rf_id,
            is_op: !schema_s.is_empty(),
            mutating,
            written_args,
            ins,
            outs,
        });
    }
    Ok(out)
}

/// Which arguments of an operator schema (`name(Tensor(a!) self, Tensor
/// src, *, bool non_blocking=False) -> Tensor(a!)`) are written (`!`), in
/// order, the keyword marker `*` left out; `None` without an argument list.
fn written_args(schema: &str) -> Option<Vec<bool>> {
    let open = schema.find('(')?;
    let mut depth = 0usize;
    let mut args = vec![String::new()];
    for c in schema[open + 1..].chars() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' if depth > 0 => depth -= 1,
            ')' => {
                return Some(
                    args.iter()
                        .map(|a| a.trim())
                        .filter(|a| !a.is_empty() && *a != "*")
                        .map(|a| a.contains('!'))
                        .collect(),
                )
            }
            ',' if depth == 0 => {
                args.push(String::new());
                continue;
            }
            _ => {}
        }
        args.last_mut()?.push(c);
    }
    None
}

/// A CUDA tensor reference: (storage, bytes needed, tensor id) or why it is
/// skipped.
enum TRef {
    Cuda(i64, u64, i64),
    Host,
    Empty,
}

fn tensor(file: &str, at: &str, v: &Value) -> Result<Option<TRef>, EtError> {
    let Some(a) = v.as_array() else {
        return Ok(None);
    };
    if a.is_empty() {
        return Ok(None);
    }
    if a.len() != 6 {
        return Err(field(
            file,
            at,
            format!(
                "a tensor must be [id, storage, offset, numel, itemsize, device], got {} entries",
                a.len()
            ),
        ));
    }
    let num = |k: usize, what: &str| -> Result<i64, EtError> {
        a[k].as_i64()
            .ok_or_else(|| field(file, at, format!("{what} is not an integer")))
    };
    let storage = num(1, "storage_id")?;
    let tensor_id = num(0, "tensor_id")?;
    let (offset, numel, itemsize) = (num(2, "offset")?, num(3, "numel")?, num(4, "itemsize")?);
    if offset < 0 || numel < 0 {
        return Err(field(
            file,
            at,
            format!("inconsistent sizes: offset {offset}, numel {numel}"),
        ));
    }
    if !(0..=16).contains(&itemsize) {
        return Err(field(
            file,
            at,
            format!("inconsistent sizes: itemsize {itemsize}"),
        ));
    }
    let dev = a[5].as_str().unwrap_or("");
    if !dev.starts_with("cuda") {
        return Ok(Some(if dev.is_empty() {
            TRef::Empty
        } else {
            TRef::Host
        }));
    }
    let bytes = (offset as u128 + numel as u128) * itemsize as u128;
    let bytes = u64::try_from(bytes)
        .ok()
        .filter(|b| *b < (1u64 << 50))
        .ok_or_else(|| {
            field(
                file,
                at,
                "inconsistent sizes: storage larger than 2^50 bytes",
            )
        })?;
    Ok(Some(if bytes == 0 {
        TRef::Empty
    } else {
        TRef::Cuda(storage, bytes, tensor_id)
    }))
}

/// Which input arguments (by position) node `n` writes: those its schema
/// marks `!` (every tensor of a written list: `_foreach_add_`'s `self`, an
/// `out=` argument); when the schema's arguments do not line up with the
/// inputs, an in-place operator's first tensor argument. The first tensor
/// argument, host or not: `copy_(cpu, cuda)` writes the host tensor and
/// only reads the CUDA one (it used to be the first *CUDA* tensor, so the
/// save_on_cpu pack hook's copy "modified" every tensor it saved).
fn written_inputs(n: &Node, inplace: bool, ins: &[(usize, TRef)]) -> impl Fn(usize) -> bool {
    let by_schema = n.written_args.clone().filter(|w| w.len() == n.ins.len());
    let first = ins.first().map(|(p, _)| *p);
    move |pos| match &by_schema {
        Some(w) => w[pos],
        None => inplace && Some(pos) == first,
    }
}

/// The tensor references of an argument list, each with its argument's
/// position.
fn tensors_of<'a>(
    file: &str,
    at: &str,
    list: &[(&'a Value, &'a str)],
    out: &mut Vec<(usize, TRef)>,
) -> Result<(), EtError> {
    for (k, (v, ty)) in list.iter().enumerate() {
        let at = format!("{at}[{k}]");
        if ty.starts_with("Tensor") || ty.starts_with("Optional[Tensor") {
            if let Some(t) = tensor(file, &at, v)? {
                out.push((k, t));
            }
        } else if ty.starts_with("GenericList[Tensor") || ty.starts_with("TensorList") {
            for (j, x) in v
                .as_array()
                .map(|a| a.as_slice())
                .unwrap_or(&[])
                .iter()
                .enumerate()
            {
                if let Some(t) = tensor(file, &format!("{at}[{j}]"), x)? {
                    out.push((k, t));
                }
            }
        }
    }
    Ok(())
}

const VIEWS: [&str; 18] = [
    "view",
    "t",
    "transpose",
    "as_strided",
    "detach",
    "expand",
    "reshape",
    "flatten",
    "permute",
    "squeeze",
    "unsqueeze",
    "slice",
    "select",
    "alias",
    "_unsafe_view",
    "unflatten",
    "numpy_T",
    "_reshape_alias",
];

fn is_view(name: &str) -> bool {
    let base = name.rsplit("::").next().unwrap_or(name);
    VIEWS.contains(&base)
}

struct Folded {
    name: String,
    rf_id: i64,
    reads: Vec<Var>,
    writes: Vec<Var>,
    modifies: Vec<Var>,
    bytes_touched: u64,
    kernel_like: bool,
}

/// Import an ET (and optionally its Kineto trace) as an `op_sequence` instance.
///
/// The steps, one function each: read the nodes, find each node's top-level
/// operator, fold every operator's tensors into storages read, written or
/// modified ([`Storages`]), give each storage one access per function, take
/// the durations, and assemble the sequence (its memory, its note).
pub fn import(
    et_file: &str,
    et: &[u8],
    kineto: Option<(&str, &[u8])>,
    opts: &EtOptions,
) -> Result<(OpSequence, EtReport), EtError> {
    let root = parse(et_file, et)?;
    let (schema, schema_s) = schema_of(et_file, &root)?;
    let nodes = nodes(et_file, &root, schema)?;
    let mut rep = EtReport {
        schema: schema_s.clone(),
        ..Default::default()
    };
    let members = top_level_members(et_file, &nodes)?;
    let key = |i: usize| (nodes[i].rf_id.unwrap_or(i64::MAX), nodes[i].id);
    let mut tops: Vec<usize> = members.keys().copied().collect();
    tops.sort_by_key(|&i| key(i));
    let mut st = Storages {
        split: opts.split_reused_storages,
        ..Default::default()
    };
    for &t in &tops {
        let mut ms = members[&t].clone();
        ms.sort_by_key(|&i| key(i));
        let f = st.fold(et_file, &nodes, t, &ms, &mut rep)?;
        st.folded.push(f);
    }
    st.one_access_each();
    let durations = durations(et_file, &nodes, &tops, &st.folded, kineto, &mut rep)?;
    st.assemble(et_file, &schema_s, &durations, opts, rep)
}

/// The top-level operator of every node (its outermost ancestor, itself
/// included, with an `op_schema`), as operator → member nodes; nodes under no
/// operator are left out. A cycle in the parent links is an error.
fn top_level_members(
    et_file: &str,
    nodes: &[Node],
) -> Result<BTreeMap<usize, Vec<usize>>, EtError> {
    let by_id: HashMap<i64, usize> = nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
    if by_id.len() != nodes.len() {
        return Err(field(et_file, "nodes", "duplicate node ids"));
    }
    let mut members: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for i in 0..nodes.len() {
        let mut cur = i;
        let mut steps = 0usize;
        let mut found = None;
        loop {
            if nodes[cur].is_op {
                found = Some(cur);
            }
            let Some(p) = nodes[cur].parent.and_then(|p| by_id.get(&p).copied()) else {
                break;
            };
            if p == cur {
                break;
            }
            cur = p;
            steps += 1;
            if steps > nodes.len() {
                return Err(field(
                    et_file,
                    format!("nodes[{i}].parent"),
                    "the parent links form a cycle",
                ));
            }
        }
        if let Some(t) = found {
            members.entry(t).or_default().push(i);
        }
    }
    Ok(members)
}

/// A variable: a storage id and its generation (0, then one more for each
/// fresh tensor at a reused address; module docs).
type Var = (i64, u32);

/// The storages met so far (largest size, first-met order, which were first
/// met as inputs: persistent), the tensor ids met on each, each storage id's
/// current generation, and the folded operators.
#[derive(Default)]
struct Storages {
    size: HashMap<Var, u64>,
    seen: HashSet<Var>,
    persistent: Vec<Var>,
    order: Vec<Var>,
    tensors: HashSet<(i64, i64)>,
    generation: HashMap<i64, u32>,
    /// Split reused storage ids ([`EtOptions::split_reused_storages`]).
    split: bool,
    folded: Vec<Folded>,
}

impl Storages {
    /// The variable a storage id names now.
    fn var(&self, storage: i64) -> Var {
        (storage, self.generation.get(&storage).copied().unwrap_or(0))
    }

    /// Fold the tensors of top-level operator `t`'s member nodes `ms` (in
    /// order) into one function (module docs, "Mapping").
    fn fold(
        &mut self,
        et_file: &str,
        nodes: &[Node],
        t: usize,
        ms: &[usize],
        rep: &mut EtReport,
    ) -> Result<Folded, EtError> {
        let mut f = Folded {
            name: nodes[t].name.to_string(),
            rf_id: nodes[t].rf_id.unwrap_or(-1),
            reads: vec![],
            writes: vec![],
            modifies: vec![],
            bytes_touched: 0,
            kernel_like: !is_view(nodes[t].name),
        };
        let mut written_here: HashSet<i64> = HashSet::new();
        for &m in ms {
            let n = &nodes[m];
            let mut ins = Vec::new();
            let mut outs = Vec::new();
            tensors_of(et_file, &format!("nodes[{m}].inputs"), &n.ins, &mut ins)?;
            tensors_of(et_file, &format!("nodes[{m}].outputs"), &n.outs, &mut outs)?;
            let inplace = n.is_op && (n.name.ends_with('_') && !n.name.ends_with("__"));
            let cuda = |t: &TRef| match t {
                TRef::Cuda(s, _, _) => Some(*s),
                _ => None,
            };
            let in_set: Vec<i64> = ins.iter().map(|(_, t)| t).filter_map(cuda).collect();
            let written_in = written_inputs(n, inplace, &ins);
            for (k, list) in [(0, &ins), (1, &outs)] {
                for (pos, t) in list.iter() {
                    let (storage, b, tid) = match t {
                        TRef::Cuda(s, b, tid) => (*s, *b, *tid),
                        TRef::Host => {
                            rep.host_tensors_skipped += 1;
                            continue;
                        }
                        TRef::Empty => {
                            rep.empty_storages_skipped += 1;
                            continue;
                        }
                    };
                    let fresh = self.tensors.insert((tid, storage));
                    if self.split
                        && k == 1
                        && fresh
                        && !inplace
                        && !n.mutating
                        && !in_set.contains(&storage)
                        && self.seen.contains(&self.var(storage))
                        && !written_here.contains(&storage)
                    {
                        // a new tensor at a reused address: a new variable
                        let g = self.generation.entry(storage).or_insert(0);
                        *g += 1;
                    }
                    let s = self.var(storage);
                    if k == 1 {
                        written_here.insert(storage);
                    }
                    let e = self.size.entry(s).or_insert(0);
                    *e = (*e).max(b);
                    if self.seen.insert(s) {
                        self.order.push(s);
                        if k == 0 {
                            self.persistent.push(s);
                            f.reads.push(s);
                        } else {
                            f.writes.push(s);
                        }
                        continue;
                    }
                    let modifies = (k == 1
                        && (inplace || n.mutating || !in_set.contains(&storage)))
                        || (k == 0 && written_in(*pos));
                    if modifies {
                        f.modifies.push(s);
                    } else {
                        f.reads.push(s);
                    }
                }
            }
        }
        Ok(f)
    }

    /// Per function, each storage once: write > modify > read; then the bytes
    /// it touches (for the cost model).
    fn one_access_each(&mut self) {
        for f in &mut self.folded {
            let w: HashSet<Var> = f.writes.iter().copied().collect();
            dedup(&mut f.writes);
            f.modifies.retain(|s| !w.contains(s));
            dedup(&mut f.modifies);
            let m: HashSet<Var> = f.modifies.iter().copied().collect();
            f.reads.retain(|s| !w.contains(s) && !m.contains(s));
            dedup(&mut f.reads);
            f.bytes_touched = f
                .reads
                .iter()
                .chain(&f.writes)
                .chain(&f.modifies)
                .map(|s| self.size[s])
                .sum();
        }
    }

    /// The `op_sequence`: storages as variables `s{id}`, operators as
    /// functions `f{i} name (rf_id r)`, GPU memory the option or the
    /// no-offload peak, and a note saying where each figure came from.
    fn assemble(
        self,
        et_file: &str,
        schema_s: &str,
        durations: &[i64],
        opts: &EtOptions,
        mut rep: EtReport,
    ) -> Result<(OpSequence, EtReport), EtError> {
        let pers: HashSet<Var> = self.persistent.iter().copied().collect();
        let vname = |(s, g): Var| {
            if g == 0 {
                format!("s{s}")
            } else {
                format!("s{s}.{g}")
            }
        };
        let variables: Vec<Variable> = self
            .order
            .iter()
            .map(|&s| Variable {
                name: vname(s),
                bytes: self.size[&s],
                kind: if pers.contains(&s) {
                    TensorKind::Other
                } else {
                    TensorKind::Activation
                },
            })
            .collect();
        let width = self.folded.len().to_string().len();
        let functions: Vec<Function> = self
            .folded
            .iter()
            .zip(durations)
            .enumerate()
            .map(|(i, (f, d))| Function {
                name: format!("f{i:0width$} {} (rf_id {})", f.name, f.rf_id),
                duration: *d,
                reads: f.reads.iter().map(|&s| vname(s)).collect(),
                writes: f.writes.iter().map(|&s| vname(s)).collect(),
                modifies: f.modifies.iter().map(|&s| vname(s)).collect(),
                clears: vec![],
            })
            .collect();
        if functions.is_empty() {
            return Err(field(
                et_file,
                "nodes",
                "no operator with a CUDA tensor or an op_schema",
            ));
        }
        rep.functions = functions.len();
        rep.variables = variables.len();
        rep.persistent = self.persistent.len();
        let mut seq = OpSequence {
            name: opts.name.clone(),
            note: None,
            variables,
            functions,
            persistent: self.persistent.iter().map(|&s| vname(s)).collect(),
            gpu_memory: 0,
            bandwidth: opts.bandwidth,
            duplex: Duplex::FullDuplex,
            release: ReleaseRule::AfterEnd,
            allocator: Default::default(),
            tick: Some(crate::units::TickUnit { ns: 1 }),
        };
        let u = seq.uses().map_err(|e| {
            field(
                et_file,
                "nodes",
                format!("the imported sequence is inconsistent: {e}"),
            )
        })?;
        seq.gpu_memory = opts.gpu_memory.unwrap_or_else(|| u.resident_peak());
        seq.note = Some(format!(
            "imported by `offcert import et` from {et_file} (schema {schema_s}); 1 tick = 1 ns; durations: {}; \
             {} of {} operators linked{}; variables are CUDA storages{} ({} host tensor references and {} empty storages left out); \
             storages first met as inputs are persistent; gpu_memory {} B{}; link full duplex (assumption)",
            rep.duration_source,
            rep.linked,
            rep.functions,
            if rep.unlinked.is_empty() { String::new() } else { format!(" ({} fell back to the cost model)", rep.unlinked.len()) },
            if self.split {
                ", a storage id reused by a fresh tensor a new variable `s{id}.{k}`"
            } else {
                ""
            },
            rep.host_tensors_skipped,
            rep.empty_storages_skipped,
            seq.gpu_memory,
            if opts.gpu_memory.is_none() { " (the no-offload peak)" } else { "" },
        ));
        Ok((seq, rep))
    }
}

fn dedup(v: &mut Vec<Var>) {
    let mut s = HashSet::new();
    v.retain(|x| s.insert(*x));
}

/// The stated cost model (module docs), in ns.
pub fn cost_model(bytes_touched: u64, kernel_like: bool) -> i64 {
    if !kernel_like {
        return 1;
    }
    (5_000 + (bytes_touched as u128).div_ceil(450) as i64).max(1)
}

fn durations(
    et_file: &str,
    nodes: &[Node],
    tops: &[usize],
    folded: &[Folded],
    kineto: Option<(&str, &[u8])>,
    rep: &mut EtReport,
) -> Result<Vec<i64>, EtError> {
    let model: Vec<i64> = folded
        .iter()
        .map(|f| cost_model(f.bytes_touched, f.kernel_like))
        .collect();
    let Some((kfile, kbytes)) = kineto else {
        rep.duration_source = "cost model (no Kineto trace): view-like operators 1 ns, others 5 us + bytes touched / 450 GB/s (not calibrated)".into();
        return Ok(model);
    };
    let op_names: HashSet<&str> = nodes.iter().filter(|n| n.is_op).map(|n| n.name).collect();
    let k = kineto_ops(kfile, kbytes, &op_names)?;
    let names: Vec<&str> = tops.iter().map(|&t| nodes[t].name).collect();
    let matched = order_match(&names, &k.ops);
    let _ = et_file;
    let mut out = model.clone();
    for (i, m) in matched.iter().enumerate() {
        match m {
            Some(j) => {
                out[i] = k.ops[*j].gpu_ns.max(1);
                rep.linked += 1;
                rep.kernels_linked += k.ops[*j].kernels;
            }
            None => rep
                .unlinked
                .push(format!("{} (rf_id {})", folded[i].name, folded[i].rf_id)),
        }
    }
    rep.duration_source = format!(
        "Kineto trace {kfile}: ordering match of top-level CPU ops (no `Record function id` to join on rf_id), \
         duration = GPU time of the kernels/memsets/memcpys correlated to the op's runtime calls; unlinked operators use the cost model"
    );
    Ok(out)
}

/// A Kineto top-level CPU op with its GPU time.
pub struct KOp {
    pub name: String,
    pub ts: f64,
    pub gpu_ns: i64,
    pub kernels: usize,
}

pub struct KinetoOps {
    pub ops: Vec<KOp>,
}

fn num(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64)
}

/// Kineto top-level operators (names among `op_names`, not nested in another
/// such op on the same thread), start-ordered, with their GPU time.
pub fn kineto_ops(
    file: &str,
    bytes: &[u8],
    op_names: &HashSet<&str>,
) -> Result<KinetoOps, EtError> {
    let root = parse(file, bytes)?;
    let evs = match &root {
        Value::Array(a) => a,
        Value::Object(o) => o
            .get("traceEvents")
            .and_then(Value::as_array)
            .ok_or_else(|| field(file, "traceEvents", "missing or not an array"))?,
        _ => return Err(field(file, "(top level)", "expected an object or an array")),
    };
    // (tid, ts, end, name) of CPU ops; (tid, ts, correlation) of runtime calls; correlation → (ns, count).
    let mut cpu: Vec<(String, f64, f64, &str)> = Vec::new();
    let mut rt: Vec<(String, f64, i64)> = Vec::new();
    let mut gpu: HashMap<i64, (i64, usize)> = HashMap::new();
    for (i, e) in evs.iter().enumerate() {
        let cat = e.get("cat").and_then(Value::as_str).unwrap_or("");
        if e.get("ph").and_then(Value::as_str) != Some("X") {
            continue;
        }
        let at = |k: &str| format!("traceEvents[{i}].{k}");
        let ts =
            num(e.get("ts")).ok_or_else(|| field(file, at("ts"), "missing or not a number"))?;
        let dur =
            num(e.get("dur")).ok_or_else(|| field(file, at("dur"), "missing or not a number"))?;
        if !(dur >= 0.0) || !ts.is_finite() {
            return Err(field(file, at("dur"), "negative or not finite"));
        }
        let tid = format!(
            "{}/{}",
            e.get("pid").map(|v| v.to_string()).unwrap_or_default(),
            e.get("tid").map(|v| v.to_string()).unwrap_or_default()
        );
        let corr = e
            .get("args")
            .and_then(|a| a.get("correlation"))
            .and_then(Value::as_i64);
        match cat {
            "cpu_op" | "operator" => {
                let name = e
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| field(file, at("name"), "missing or not a string"))?;
                if op_names.contains(name) {
                    cpu.push((tid, ts, ts + dur, name));
                }
            }
            "cuda_runtime" | "Runtime" => {
                if let Some(c) = corr {
                    rt.push((tid, ts, c));
                }
            }
            "kernel" | "Kernel" | "gpu_memset" | "gpu_memcpy" | "Memset" | "Memcpy" => {
                if let Some(c) = corr {
                    let g = gpu.entry(c).or_insert((0, 0));
                    g.0 += (dur * 1000.0).round() as i64;
                    g.1 += 1;
                }
            }
            _ => {}
        }
    }
    cpu.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(a.1.total_cmp(&b.1))
            .then(b.2.total_cmp(&a.2))
    });
    rt.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut ops = Vec::new();
    let mut i = 0;
    while i < cpu.len() {
        // cpu[i] is top-level on its thread; skip everything it contains.
        let (tid, ts, end, name) = (&cpu[i].0, cpu[i].1, cpu[i].2, cpu[i].3);
        let mut j = i + 1;
        while j < cpu.len() && &cpu[j].0 == tid && cpu[j].1 < end {
            j += 1;
        }
        let lo = rt.partition_point(|r| (&r.0, r.1) < (tid, ts));
        let (mut ns, mut kernels) = (0i64, 0usize);
        for r in rt[lo..].iter().take_while(|r| &r.0 == tid && r.1 <= end) {
            if let Some(g) = gpu.get(&r.2) {
                ns += g.0;
                kernels += g.1;
            }
        }
        ops.push(KOp {
            name: name.to_string(),
            ts,
            gpu_ns: ns,
            kernels,
        });
        i = j;
    }
    ops.sort_by(|a, b| a.ts.total_cmp(&b.ts));
    Ok(KinetoOps { ops })
}

/// Match ET names to Kineto ops as a subsequence (module docs); the start with
/// the most links wins (earliest on a tie).
pub fn order_match(et: &[&str], k: &[KOp]) -> Vec<Option<usize>> {
    let Some(first) = et.first() else {
        return vec![];
    };
    let mut best: (usize, Vec<Option<usize>>) = (0, vec![None; et.len()]);
    for s in (0..k.len()).filter(|&s| k[s].name == *first) {
        let mut m = vec![None; et.len()];
        let mut pos = s;
        let mut linked = 0;
        for (i, n) in et.iter().enumerate() {
            if let Some(d) = k[pos.min(k.len())..]
                .iter()
                .take(LOOKAHEAD)
                .position(|o| o.name == *n)
            {
                m[i] = Some(pos + d);
                pos += d + 1;
                linked += 1;
            }
        }
        if linked > best.0 {
            best = (linked, m);
        }
    }
    best.1
}

/// Import from paths (the CLI's entry point).
pub fn import_files(
    et: &Path,
    kineto: Option<&Path>,
    opts: &EtOptions,
) -> Result<(OpSequence, EtReport), EtError> {
    let eb = read_bytes(et)?;
    let kb = kineto.map(read_bytes).transpose()?;
    let kname = kineto.map(|p| p.display().to_string());
    import(
        &et.display().to_string(),
        &eb,
        kname.as_deref().zip(kb.as_deref()),
        opts,
    )
}
