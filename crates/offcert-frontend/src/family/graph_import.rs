//! networkx `node_link_data` JSON (the graphs of MOCCASIN's repository) as a
//! [`Graph`] (MODEL.md §4.7). Two schemas, told apart by the first node:
//!
//! - **Checkmate-derived** (`checkmate.tf2.extraction.dfgraph_from_keras`, as
//!   MOCCASIN stores them): nodes `{id, name, backward, cost_cpu, cost_ram}`,
//!   links `{source, target}`;
//! - **random layered** (*Neural Topological Ordering for Computation Graphs*,
//!   App. A): nodes `{name, out_cost, param_cost, duration}`, link endpoints under
//!   `"0"` and `"1"`, `graph.order` the baseline topological order.
//!
//! networkx itself: the edge list is `links` (networkx < 3.4 and MOCCASIN's
//! files) or `edges` (the newer default); `directed` must not be false;
//! `multigraph` edges between the same two nodes are one data dependency (kept
//! once, counted); a node's key is its `id`, else its `name` (random layered).
//! Node `i` of the result is the file's `nodes[i]`; its name is the node's
//! `name` (Checkmate) or key (random layered), `#key` appended when a name
//! repeats. MOCCASIN ignores `param_cost`, and so does this import (counted).
//!
//! A cost of 0 becomes 1 tick (the family needs ≥ 1, MODEL.md §4.7 item 5);
//! [`NodeLink::zero_costs`] counts them. The budget is left at 0: the CLI sets
//! it from the checked baseline peak.
//!
//! Owns: [`parse_node_link`], [`NodeLink`], [`GraphImportError`]. Every error
//! names the field (`nodes[3].cost_ram`, `links[7].target`, `graph.order[2]`).
//! Must not import: schedules, semantics, the checker, solvers.

use super::graph::{Graph, Node, MAX_NODES};
use crate::model::{Allocator, ReleaseRule};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// Why an import failed; `field` names the offending value.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{field}: {message}")]
pub struct GraphImportError {
    pub field: String,
    pub message: String,
}

fn field(f: impl Into<String>, m: impl Into<String>) -> GraphImportError {
    GraphImportError {
        field: f.into(),
        message: m.into(),
    }
}

/// Which of MOCCASIN's two schemas a file uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schema {
    Checkmate,
    RandomLayered,
}

impl Schema {
    pub fn as_str(self) -> &'static str {
        match self {
            Schema::Checkmate => "Checkmate-derived",
            Schema::RandomLayered => "random layered",
        }
    }
    /// The node keys of (duration, output size).
    fn cost_keys(self) -> (&'static str, &'static str) {
        match self {
            Schema::Checkmate => ("cost_cpu", "cost_ram"),
            Schema::RandomLayered => ("duration", "out_cost"),
        }
    }
}

/// The imported graph (budget 0) and what the import did to it.
#[derive(Clone, Debug)]
pub struct NodeLink {
    pub graph: Graph,
    pub schema: Schema,
    /// Edges kept (distinct data dependencies).
    pub edges: usize,
    /// Links that repeated an edge already kept (multigraph parallel edges).
    pub duplicate_edges: usize,
    /// Nodes whose cost 0 became 1 tick.
    pub zero_costs: usize,
    /// Nodes with a non-zero `param_cost` (ignored, as MOCCASIN does).
    pub param_costs_ignored: usize,
    /// Did the file give `graph.order`?
    pub has_order: bool,
}

/// The most links a file may have.
pub const MAX_LINKS: usize = 1 << 24;
/// The largest cost accepted (bytes or ticks of one node).
pub const MAX_COST: u64 = 1 << 52;

/// A node key as a map key: numbers and strings never collide.
fn key_of(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(format!("n:{n}")),
        Value::String(s) => Some(format!("s:{s}")),
        _ => None,
    }
}

fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A non-negative whole cost (an integral float such as `3.0` is accepted).
fn cost(v: Option<&Value>, f: impl Fn() -> String) -> Result<u64, GraphImportError> {
    let v = v.ok_or_else(|| field(f(), "missing"))?;
    let n = match v {
        Value::Number(n) => n,
        _ => return Err(field(f(), format!("expected a number, found {v}"))),
    };
    let x = if let Some(u) = n.as_u64() {
        u
    } else if n.as_i64().is_some() {
        return Err(field(f(), format!("negative cost {n}")));
    } else {
        let x = n.as_f64().unwrap_or(f64::NAN);
        if !x.is_finite() || x.fract() != 0.0 {
            return Err(field(f(), format!("not a whole number: {n}")));
        }
        if x < 0.0 {
            return Err(field(f(), format!("negative cost {n}")));
        }
        if x > MAX_COST as f64 {
            return Err(field(f(), format!("{n} is above 2^52")));
        }
        x as u64
    };
    if x > MAX_COST {
        return Err(field(f(), format!("{x} is above 2^52")));
    }
    Ok(x)
}

/// Parse a `node_link_data` JSON text. `name`: the instance name (default the
/// file's `graph.name`, else `graph`).
pub fn parse_node_link(text: &str, name: Option<String>) -> Result<NodeLink, GraphImportError> {
    let v: Value = serde_json::from_str(text).map_err(|e| field("(json)", e.to_string()))?;
    let top = v
        .as_object()
        .ok_or_else(|| field("(top level)", "expected a JSON object"))?;
    if top.get("directed") == Some(&Value::Bool(false)) {
        return Err(field(
            "directed",
            "an undirected graph has no data-flow direction",
        ));
    }
    let gattrs = match top.get("graph") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => return Err(field("graph", format!("expected an object, found {other}"))),
    };
    let nodes = top
        .get("nodes")
        .ok_or_else(|| field("nodes", "missing"))?
        .as_array()
        .ok_or_else(|| field("nodes", "expected a list"))?;
    if nodes.is_empty() {
        return Err(field("nodes", "no nodes"));
    }
    if nodes.len() > MAX_NODES {
        return Err(field("nodes", format!("more than {MAX_NODES} nodes")));
    }
    let schema = schema_of(&nodes[0])?;
    let (keys, mut out, counts) = read_nodes(nodes, schema)?;
    let (edges, duplicate_edges) = read_links(top, &keys, &mut out)?;
    let graph_name = name.unwrap_or_else(|| match gattrs.get("name") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => "graph".into(),
    });
    let mut g = Graph {
        name: graph_name,
        note: None,
        nodes: out,
        gpu_memory: 0,
        offload: None,
        baseline: None,
        release: ReleaseRule::AfterEnd,
        allocator: Allocator::Exact,
    };
    if let Err(e) = g.topological_order() {
        let msg = e.to_string();
        return Err(field(
            "links",
            msg.split_once(": ")
                .map_or(msg.clone(), |x| x.1.to_string()),
        ));
    }
    let has_order = match gattrs.get("order") {
        None | Some(Value::Null) => false,
        Some(o) => {
            g.baseline = Some(read_order(o, &keys, &g)?);
            true
        }
    };
    g.validate().map_err(|e| field("nodes", e.to_string()))?;
    Ok(NodeLink {
        graph: g,
        schema,
        edges,
        duplicate_edges,
        zero_costs: counts.0,
        param_costs_ignored: counts.1,
        has_order,
    })
}

fn schema_of(first: &Value) -> Result<Schema, GraphImportError> {
    let o = first
        .as_object()
        .ok_or_else(|| field("nodes[0]", "expected an object"))?;
    if o.contains_key("cost_ram") || o.contains_key("cost_cpu") {
        Ok(Schema::Checkmate)
    } else if o.contains_key("out_cost") || o.contains_key("duration") {
        Ok(Schema::RandomLayered)
    } else {
        Err(field(
            "nodes[0]",
            "neither `cost_ram`/`cost_cpu` (Checkmate-derived) nor `out_cost`/`duration` (random layered)",
        ))
    }
}

type Keys = HashMap<String, usize>;

/// The nodes, the key → index map, and (zero costs, param costs ignored).
fn read_nodes(
    nodes: &[Value],
    schema: Schema,
) -> Result<(Keys, Vec<Node>, (usize, usize)), GraphImportError> {
    let (dur_key, mem_key) = schema.cost_keys();
    let mut keys = HashMap::new();
    let mut out = Vec::with_capacity(nodes.len());
    let (mut zeros, mut params) = (0, 0);
    for (i, nv) in nodes.iter().enumerate() {
        let f = |k: &str| format!("nodes[{i}].{k}");
        let o = nv
            .as_object()
            .ok_or_else(|| field(format!("nodes[{i}]"), "expected an object"))?;
        let key_field = if o.contains_key("id") { "id" } else { "name" };
        let kv = o
            .get(key_field)
            .ok_or_else(|| field(f("id"), "missing (neither `id` nor `name`)"))?;
        let k = key_of(kv).ok_or_else(|| {
            field(
                f(key_field),
                format!("a node key is a number or a string, not {kv}"),
            )
        })?;
        if let Some(j) = keys.insert(k, i) {
            return Err(field(
                f(key_field),
                format!("duplicate node key {kv} (also nodes[{j}])"),
            ));
        }
        let d = cost(o.get(dur_key), || f(dur_key))?;
        let memory = cost(o.get(mem_key), || f(mem_key))?;
        if d == 0 {
            zeros += 1;
        }
        if schema == Schema::RandomLayered {
            if let Some(p) = o.get("param_cost") {
                if cost(Some(p), || f("param_cost"))? != 0 {
                    params += 1;
                }
            }
        }
        let name = match (schema, o.get("name")) {
            (Schema::Checkmate, Some(n)) if !n.is_null() && !shown(n).is_empty() => shown(n),
            _ => shown(kv),
        };
        let backward = match o.get("backward") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(field(
                    f("backward"),
                    format!("expected true or false, found {other}"),
                ))
            }
        };
        out.push(Node {
            name,
            duration: d.max(1) as i64,
            memory,
            inputs: vec![],
            backward,
            transferable: true,
        });
    }
    disambiguate(&mut out, nodes);
    Ok((keys, out, (zeros, params)))
}

/// A name that repeats gets `#key` appended (every later occurrence).
fn disambiguate(out: &mut [Node], nodes: &[Value]) {
    let mut seen: HashSet<String> = HashSet::new();
    for (i, n) in out.iter_mut().enumerate() {
        if !seen.insert(n.name.clone()) {
            let kv = nodes[i]
                .get("id")
                .or_else(|| nodes[i].get("name"))
                .map(shown)
                .unwrap_or_else(|| i.to_string());
            let mut name = format!("{}#{kv}", n.name);
            while !seen.insert(name.clone()) {
                name.push('\'');
            }
            n.name = name;
        }
    }
}

/// Read the edge list into each target's `inputs`: (edges kept, duplicates).
fn read_links(
    top: &Map<String, Value>,
    keys: &Keys,
    out: &mut [Node],
) -> Result<(usize, usize), GraphImportError> {
    let (lname, links) = match (top.get("links"), top.get("edges")) {
        (Some(l), _) => ("links", l),
        (None, Some(e)) => ("edges", e),
        (None, None) => return Err(field("links", "missing (neither `links` nor `edges`)")),
    };
    let links = links
        .as_array()
        .ok_or_else(|| field(lname, "expected a list"))?;
    if links.len() > MAX_LINKS {
        return Err(field(lname, format!("more than {MAX_LINKS} links")));
    }
    let mut seen = HashSet::new();
    let mut dups = 0;
    for (j, l) in links.iter().enumerate() {
        let o = l
            .as_object()
            .ok_or_else(|| field(format!("{lname}[{j}]"), "expected an object"))?;
        let (sk, tk) = if o.contains_key("source") || !o.contains_key("0") {
            ("source", "target")
        } else {
            ("0", "1")
        };
        let end = |k: &str| -> Result<usize, GraphImportError> {
            let f = || format!("{lname}[{j}].{k}");
            let v = o.get(k).ok_or_else(|| field(f(), "missing"))?;
            key_of(v)
                .and_then(|key| keys.get(&key).copied())
                .ok_or_else(|| field(f(), format!("no node has the key {v}")))
        };
        let (s, t) = (end(sk)?, end(tk)?);
        if s == t {
            return Err(field(
                format!("{lname}[{j}]"),
                format!("a self-loop on node {}", out[s].name),
            ));
        }
        if seen.insert((s, t)) {
            out[t].inputs.push(s);
        } else {
            dups += 1;
        }
    }
    for n in out.iter_mut() {
        n.inputs.sort_unstable();
    }
    Ok((seen.len(), dups))
}

fn read_order(o: &Value, keys: &Keys, g: &Graph) -> Result<Vec<usize>, GraphImportError> {
    let list = o
        .as_array()
        .ok_or_else(|| field("graph.order", "expected a list of node keys"))?;
    let mut out = Vec::with_capacity(list.len());
    for (p, v) in list.iter().enumerate() {
        let i = key_of(v)
            .and_then(|k| keys.get(&k).copied())
            .ok_or_else(|| {
                field(
                    format!("graph.order[{p}]"),
                    format!("no node has the key {v}"),
                )
            })?;
        out.push(i);
    }
    g.validate_order("graph.order", &out).map_err(|e| {
        let msg = e.to_string();
        match msg.split_once(": ") {
            Some((f, m)) => field(f, m),
            None => field("graph.order", msg),
        }
    })?;
    Ok(out)
}
