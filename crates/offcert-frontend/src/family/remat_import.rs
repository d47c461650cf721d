//! Importers of the chains rotor and rockmate users have, into `remat_chain`.
//!
//! - rotor's printed chain (`ChainStr`): a Python literal list of L+1 6-tuples
//!   `(fw, bw, cw, cbw, ftmp, btmp)`, the last with `None` for fw and ftmp; or a
//!   Python/JSON dict of the `Chain` attributes in either spelling (`fweigth`,
//!   `bweigth`, `cweigth`, `cbweigth`, `fwd_tmp`, `bwd_tmp` as in rotor;
//!   `fweight`, …, `fwd_mem_tmp`, `bwd_mem_tmp` as in ColossalAI).
//! - a JSON dump of rockmate's `RK_Chain`: `ln` and `fw[i][k]`, `bw[i][k]`,
//!   `cw[i]`, `cbw[i+1][k]`, `fwd_tmp[i][k]`, `bwd_tmp[i][k]`, `ff_fw[i]`,
//!   `ff_fwd_tmp[i]`, `nb_sol[i]`. Every option is kept: option k of block i is
//!   `fw[i][k]`, `bw[i][k]`, `cbw[i+1][k]`, `fwd_tmp[i][k]`, `bwd_tmp[i][k]`
//!   (option 0 as the layer's own fields, the others as its `options`), and the
//!   fast forward `F{ℓ}` is `ff_fw[i]`, `ff_fwd_tmp[i]` (models/MODEL.md §4.5).
//!   With [`ImportOptions::fastest_only`], one option per block is kept: the
//!   fastest (least fw + bw, then least cbw), recorded in the note.
//!
//! Mapping (`FAMILIES.md` §5.2): u_F(ℓ) = fw[ℓ−1], u_B(ℓ) = bw[ℓ−1],
//! |a_ℓ| = cw[ℓ], |ā_ℓ| = max(cbw[ℓ], cw[ℓ]), |a_0| = cw[0], o_f(ℓ) = ftmp[ℓ−1],
//! o_b(ℓ) = btmp[ℓ−1]; the loss: u_B = bw[L], o_b = btmp[L], u_F = 0, ā = 0.
//! rotor's ftmp/btmp and rockmate's fwd_tmp are scratch beyond inputs and
//! outputs as they stand; rockmate's ff_fwd_tmp/bwd_tmp depend on its version
//! ([`RockmateTmp`], read as-is by default, which is valid for every version).
//! Times are milliseconds, converted to ticks of `tick_us` µs and rounded up;
//! sizes are multiplied by `mem_unit` and rounded up. Numbers are read exactly
//! (decimal literals as rationals), so the rounding is the only change.
//!
//! Owns: [`ImportError`], [`ImportOptions`], [`import_rotor`], [`import_rockmate`].
//! Must not import: schedules, semantics, the checker, solvers.

use super::remat_chain::{RematChain, RematLayer, RematLoss, RematOption};
use super::BandwidthFile;
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Signed, ToPrimitive, Zero};

/// Why an import failed; `field` names the offending value.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum ImportError {
    #[error("{field}: {message}")]
    Field { field: String, message: String },
    #[error("offset {offset}: malformed literal: {message}")]
    Syntax { offset: usize, message: String },
}

fn field(f: impl Into<String>, m: impl Into<String>) -> ImportError {
    ImportError::Field {
        field: f.into(),
        message: m.into(),
    }
}

#[derive(Clone, Debug)]
pub struct ImportOptions {
    pub name: String,
    /// Bytes per source memory unit (chains are often in slots).
    pub mem_unit: u64,
    /// Microseconds per tick (source times are ms).
    pub tick_us: u64,
    /// M_GPU in bytes; default the peak with nothing rematerialised or offloaded.
    pub gpu_memory: Option<u64>,
    /// β in bytes per tick; default 12.2 GB/s (the activation paper's V100 link).
    pub bandwidth: Option<u64>,
    /// Where the chain came from, for the note.
    pub source: String,
    /// rockmate: keep only each block's fastest option (the behaviour before
    /// variant groups), not every option.
    pub fastest_only: bool,
    /// rockmate: what `ff_fwd_tmp` / `bwd_tmp` count besides scratch (it
    /// differs between rockmate versions; see [`RockmateTmp`]).
    pub rockmate_tmp: RockmateTmp,
}

/// What a rockmate dump's `ff_fwd_tmp[i]` and `bwd_tmp[i][k]` include besides
/// the scratch offcert wants (memory beyond an op's inputs and outputs,
/// models/MODEL.md §4.5). Read from rockmate's source:
///
/// - `fwd_tmp[i][k]` is the same in every version: `overhead = max(save + tmp)
///   − save[-1]` with the input not in `save` and `save[-1]` = ā (hrockmate
///   `solvers/def_op.py` `OpSchedule.get_mem_time`; rk_rotor's
///   `Full_sched.fwd_overhead`, `op_schedule.py` `get_overhead_`): the peak
///   beyond the input and ā, i.e. o_f exactly. Rotor's `fwd_tmp` too
///   (`fwd_max_mem_usage − activation_usage`, "input was already in memory").
/// - rotor's `bwd_tmp` is `bwd_max_mem_usage − (|x_i| + |y_{i+1}|)`: the two
///   gradients taken out ("y_{i+1} and y_i were added"): o_b exactly.
/// - hrockmate (`hrockmate/solvers/def_chain.py`): `ff_fwd_tmp[i] =
///   Fc_sched.overhead` = the peak beyond input and output (`save[-1]` is the
///   output): o_ff exactly. `bwd_tmp[i][k] = bwd_sched.overhead +
///   bwd_sched.save[-1] − size_a_bar` = the peak beyond the input less ā, the
///   input gradient added to `tmp` ("rotor assumes the space for input data
///   but not input grad") and the output gradient in `save`: both gradients
///   counted again by offcert's B{ℓ}, which holds δ_{ℓ−1} and δ_ℓ.
/// - rockmate's rk_rotor (`rockmate/src/rockmate/solvers/rk_rotor/rk_rotor.py`,
///   `hg_to_rk_chain`): `overhead_fast_fwd = Fc_sched.fwd_overhead +
///   output_kdn_data.mem` ("since interfaces is empty, output is counted in
///   memory"): the output is counted in ff_fwd_tmp and again by F{ℓ}'s P.
///   `bwd_tmp = max(Full_sched.save_mem + Full_sched.overhead) −
///   Full_sched.mem` with the input data and input gradient interfaces left
///   out of `save_mem`: the output gradient δ_ℓ is counted again.
///
/// Every subtraction is saturating, and sound whatever the dump: with the
/// number the peak beyond what is subtracted, offcert's footprint (those
/// tensors + max(0, tmp − their sizes)) is at least the true peak.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RockmateTmp {
    /// Take both as scratch (o_ff = ff_fwd_tmp, o_b = bwd_tmp): exact for
    /// hrockmate's ff_fwd_tmp, an over-count elsewhere (valid, looser). The
    /// default, because a dump does not say which version wrote it and this
    /// reading is sound for every version.
    #[default]
    AsIs,
    /// hrockmate: o_ff = ff_fwd_tmp, o_b = bwd_tmp − |δ_{ℓ−1}| − |δ_ℓ|.
    Hrockmate,
    /// rockmate's rk_rotor: o_ff = ff_fwd_tmp − |a_ℓ|, o_b = bwd_tmp − |δ_ℓ|.
    RkRotor,
}

/// A parsed value: an exact number, `None`, a list or a dict.
#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    Num(BigRational),
    None,
    List(Vec<Lit>),
    Dict(Vec<(String, Lit)>),
}

/// Parse a decimal literal (`12`, `-1.5`, `3e-4`, `1.5E+2`) exactly.
pub fn decimal(s: &str) -> Option<BigRational> {
    let (mant, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().ok()?),
        None => (s, 0),
    };
    let (neg, mant) = match mant.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mant.strip_prefix('+').unwrap_or(mant)),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit()) || exp.abs() > 400 {
        return None;
    }
    let digits: BigInt = format!("0{int}{frac}").parse().ok()?;
    let scale = exp - frac.len() as i32;
    let ten = BigInt::from(10);
    let mut r = BigRational::from_integer(digits);
    if scale >= 0 {
        r *= BigRational::from_integer(num_traits::pow(ten, scale as usize));
    } else {
        r /= BigRational::from_integer(num_traits::pow(ten, (-scale) as usize));
    }
    Some(if neg { -r } else { r })
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

impl Parser<'_> {
    fn err(&self, m: &str) -> ImportError {
        ImportError::Syntax {
            offset: self.i,
            message: m.into(),
        }
    }
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn value(&mut self) -> Result<Lit, ImportError> {
        self.ws();
        if self.depth > 64 {
            return Err(self.err("nested too deeply"));
        }
        let Some(&c) = self.s.get(self.i) else {
            return Err(self.err("unexpected end"));
        };
        match c {
            b'[' | b'(' => {
                let close = if c == b'[' { b']' } else { b')' };
                self.i += 1;
                self.depth += 1;
                let mut v = Vec::new();
                loop {
                    self.ws();
                    if self.s.get(self.i) == Some(&close) {
                        self.i += 1;
                        break;
                    }
                    v.push(self.value()?);
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(x) if *x == close => {}
                        _ => return Err(self.err("expected `,` or a closing bracket")),
                    }
                }
                self.depth -= 1;
                Ok(Lit::List(v))
            }
            b'{' => {
                self.i += 1;
                self.depth += 1;
                let mut v = Vec::new();
                loop {
                    self.ws();
                    if self.s.get(self.i) == Some(&b'}') {
                        self.i += 1;
                        break;
                    }
                    let k = self.string()?;
                    self.ws();
                    if self.s.get(self.i) != Some(&b':') {
                        return Err(self.err("expected `:`"));
                    }
                    self.i += 1;
                    v.push((k, self.value()?));
                    self.ws();
                    match self.s.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {}
                        _ => return Err(self.err("expected `,` or `}`")),
                    }
                }
                self.depth -= 1;
                Ok(Lit::Dict(v))
            }
            b'N' if self.s[self.i..].starts_with(b"None") => {
                self.i += 4;
                Ok(Lit::None)
            }
            b'n' if self.s[self.i..].starts_with(b"null") => {
                self.i += 4;
                Ok(Lit::None)
            }
            _ => {
                let start = self.i;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_alphanumeric() || b"+-.".contains(&self.s[self.i]))
                {
                    self.i += 1;
                }
                let tok = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
                decimal(tok).map(Lit::Num).ok_or(ImportError::Syntax {
                    offset: start,
                    message: format!(
                        "expected a number, found `{}`",
                        tok.chars().take(20).collect::<String>()
                    ),
                })
            }
        }
    }
    fn string(&mut self) -> Result<String, ImportError> {
        let q = *self
            .s
            .get(self.i)
            .ok_or_else(|| self.err("unexpected end"))?;
        if q != b'"' && q != b'\'' {
            return Err(self.err("expected a quoted key"));
        }
        self.i += 1;
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i] != q {
            self.i += 1;
        }
        if self.i >= self.s.len() {
            return Err(self.err("unterminated string"));
        }
        let k = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
        self.i += 1;
        Ok(k)
    }
}

/// Parse a Python (or JSON) literal.
pub fn parse_literal(text: &str) -> Result<Lit, ImportError> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        depth: 0,
    };
    let v = p.value()?;
    p.ws();
    if p.i != p.s.len() {
        return Err(p.err("trailing characters"));
    }
    Ok(v)
}

fn num<'a>(v: &'a Lit, f: &str) -> Result<&'a BigRational, ImportError> {
    match v {
        Lit::Num(n) if !n.is_negative() => Ok(n),
        Lit::Num(_) => Err(field(f, "must be >= 0")),
        _ => Err(field(f, "expected a number")),
    }
}

fn list<'a>(v: &'a Lit, f: &str) -> Result<&'a [Lit], ImportError> {
    match v {
        Lit::List(l) => Ok(l),
        _ => Err(field(f, "expected a list")),
    }
}

/// The converted numbers: ⌈x·unit⌉ for sizes, ⌈ms·1000/tick_us⌉ for times.
struct Conv<'a> {
    o: &'a ImportOptions,
    rounded: usize,
    /// Fields whose subtraction (`bytes_less`) went below zero, set to 0.
    saturated: Vec<String>,
}

impl Conv<'_> {
    fn ceil(&mut self, x: BigRational, f: &str, max: u64) -> Result<u64, ImportError> {
        let c = x.ceil();
        if c != x {
            self.rounded += 1;
        }
        c.to_integer()
            .to_u64()
            .filter(|v| *v <= max)
            .ok_or_else(|| field(f, "value too large"))
    }
    fn bytes(&mut self, v: &Lit, f: &str) -> Result<u64, ImportError> {
        let x = num(v, f)? * BigRational::from_integer(self.o.mem_unit.into());
        self.ceil(x, f, 1 << 50)
    }
    /// `v` less the `minus` values, exactly (before rounding), at least 0;
    /// a field that would go negative is recorded in `saturated`.
    fn bytes_less(&mut self, v: &Lit, minus: &[(&Lit, &str)], f: &str) -> Result<u64, ImportError> {
        let mut x = num(v, f)?.clone();
        for (m, mf) in minus {
            x -= num(m, mf)?;
        }
        if x.is_negative() {
            self.saturated.push(f.to_string());
            x = BigRational::zero();
        }
        self.ceil(
            x * BigRational::from_integer(self.o.mem_unit.into()),
            f,
            1 << 50,
        )
    }
    fn ticks(&mut self, v: &Lit, f: &str) -> Result<i64, ImportError> {
        let x = num(v, f)? * BigRational::new(1000.into(), self.o.tick_us.into());
        Ok(self.ceil(x, f, 1 << 40)? as i64)
    }
}

/// The six rotor columns, each a list, the last layer being the loss.
struct Columns<'a> {
    fw: Vec<&'a Lit>,
    bw: Vec<&'a Lit>,
    cw: Vec<&'a Lit>,
    cbw: Vec<&'a Lit>,
    ftmp: Vec<&'a Lit>,
    btmp: Vec<&'a Lit>,
    names: [&'static str; 6],
}

fn columns(v: &Lit) -> Result<Columns<'_>, ImportError> {
    match v {
        Lit::List(rows) => {
            let mut c = Columns {
                fw: vec![],
                bw: vec![],
                cw: vec![],
                cbw: vec![],
                ftmp: vec![],
                btmp: vec![],
                names: ["fw", "bw", "cw", "cbw", "ftmp", "btmp"],
            };
            for (k, r) in rows.iter().enumerate() {
                let r = list(r, &format!("[{k}]"))?;
                if r.len() != 6 {
                    return Err(field(
                        format!("[{k}]"),
                        format!(
                            "expected a 6-tuple (fw, bw, cw, cbw, ftmp, btmp), found {} entries",
                            r.len()
                        ),
                    ));
                }
                c.fw.push(&r[0]);
                c.bw.push(&r[1]);
                c.cw.push(&r[2]);
                c.cbw.push(&r[3]);
                c.ftmp.push(&r[4]);
                c.btmp.push(&r[5]);
            }
            Ok(c)
        }
        Lit::Dict(kv) => {
            let get = |names: &[&'static str]| -> Result<(Vec<&Lit>, &'static str), ImportError> {
                for n in names {
                    if let Some((_, v)) = kv.iter().find(|(k, _)| k == n) {
                        return Ok((list(v, n)?.iter().collect(), n));
                    }
                }
                Err(field(names.join(" or "), "missing"))
            };
            let (fw, n0) = get(&["fweigth", "fweight", "fw"])?;
            let (bw, n1) = get(&["bweigth", "bweight", "bw"])?;
            let (cw, n2) = get(&["cweigth", "cweight", "cw"])?;
            let (cbw, n3) = get(&["cbweigth", "cbweight", "cbw"])?;
            let (ftmp, n4) = get(&["fwd_tmp", "fwd_mem_tmp", "ftmp"])?;
            let (btmp, n5) = get(&["bwd_tmp", "bwd_mem_tmp", "btmp"])?;
            Ok(Columns {
                fw,
                bw,
                cw,
                cbw,
                ftmp,
                btmp,
                names: [n0, n1, n2, n3, n4, n5],
            })
        }
        _ => Err(field(
            "(top level)",
            "expected a list of 6-tuples or a dict of Chain attributes",
        )),
    }
}

/// Import rotor's printed chain.
pub fn import_rotor(text: &str, o: &ImportOptions) -> Result<RematChain, ImportError> {
    check_options(o)?;
    let v = parse_literal(text)?;
    let c = columns(&v)?;
    let n = c.bw.len(); // L+1
    if n < 2 {
        return Err(field(
            c.names[1],
            "needs at least one layer and the loss (L+1 ≥ 2 entries)",
        ));
    }
    let l = n - 1;
    for (col, name, want) in [
        (&c.cw, c.names[2], n),
        (&c.cbw, c.names[3], n),
        (&c.btmp, c.names[5], n),
    ] {
        if col.len() != want {
            return Err(field(
                name,
                format!("expected {want} entries, found {}", col.len()),
            ));
        }
    }
    // fw and ftmp have L entries, or L+1 with None (or 0) last.
    for (col, name) in [(&c.fw, c.names[0]), (&c.ftmp, c.names[4])] {
        if col.len() != l && col.len() != n {
            return Err(field(
                name,
                format!("expected {l} or {n} entries, found {}", col.len()),
            ));
        }
    }
    let mut cv = Conv {
        o,
        rounded: 0,
        saturated: vec![],
    };
    let mut clamped = 0;
    let mut layers = Vec::with_capacity(l);
    for k in 0..l {
        let f = |col: &str, i: usize| format!("{col}[{i}]");
        let a = cv.bytes(c.cw[k + 1], &f(c.names[2], k + 1))?;
        let abar = cv.bytes(c.cbw[k + 1], &f(c.names[3], k + 1))?;
        if abar < a {
            clamped += 1;
        }
        layers.push(RematLayer {
            u_f: cv.ticks(c.fw[k], &f(c.names[0], k))?,
            u_b: cv.ticks(c.bw[k], &f(c.names[1], k))?,
            a,
            abar: abar.max(a),
            o_f: cv.bytes(c.ftmp[k], &f(c.names[4], k))?,
            o_b: cv.bytes(c.btmp[k], &f(c.names[5], k))?,
            delta: None,
            ..Default::default()
        });
    }
    let loss = RematLoss {
        u_f: 0,
        u_b: cv.ticks(c.bw[l], &format!("{}[{l}]", c.names[1]))?,
        abar: 0,
        o_f: 0,
        o_b: cv.bytes(c.btmp[l], &format!("{}[{l}]", c.names[5]))?,
    };
    let a0 = cv.bytes(c.cw[0], &format!("{}[0]", c.names[2]))?;
    let extra = if clamped > 0 {
        format!(" {clamped} layer(s) had cbw < cw: |ā| raised to |a|.")
    } else {
        String::new()
    };
    finish(o, layers, loss, a0, cv.rounded, "rotor Chain", &extra)
}

fn check_options(o: &ImportOptions) -> Result<(), ImportError> {
    if o.mem_unit == 0 {
        return Err(field("--mem-unit", "must be >= 1"));
    }
    if o.tick_us == 0 {
        return Err(field("--tick-us", "must be >= 1"));
    }
    if o.bandwidth == Some(0) {
        return Err(field("--bandwidth", "must be >= 1"));
    }
    Ok(())
}

fn finish(
    o: &ImportOptions,
    layers: Vec<RematLayer>,
    loss: RematLoss,
    a0: u64,
    rounded: usize,
    what: &str,
    extra: &str,
) -> Result<RematChain, ImportError> {
    let bandwidth = o.bandwidth.unwrap_or(12_200 * o.tick_us);
    let mut c = RematChain {
        name: o.name.clone(),
        note: None,
        layers,
        loss,
        a0,
        delta0: None,
        gpu_memory: 0,
        bandwidth: BandwidthFile::PerTick(bandwidth),
        release: Default::default(),
        allocator: Default::default(),
    };
    c.validate()
        .map_err(|e| field("(converted chain)", e.to_string()))?;
    let peak = c
        .store_all_peak()
        .ok_or_else(|| field("(converted chain)", "peak overflows"))?;
    c.gpu_memory = o.gpu_memory.unwrap_or(peak);
    c.note = Some(format!(
        "Imported from {what} `{}`. Units: sizes × {} B (rounded up), times in ms → ticks of {} µs \
         (rounded up; {} value(s) rounded). β = {} B/tick{}. M_GPU = {} B{}. Loss: u_F = 0, ā = 0 \
         (rotor's convention); |δ_ℓ| = |a_ℓ|.{}",
        o.source,
        o.mem_unit,
        o.tick_us,
        rounded,
        bandwidth,
        if o.bandwidth.is_none() { " (default: 12.2 GB/s)" } else { "" },
        c.gpu_memory,
        if o.gpu_memory.is_none() {
            " (default: the peak with nothing rematerialised or offloaded)"
        } else {
            ""
        },
        extra
    ));
    Ok(c)
}

fn obj<'a>(v: &'a serde_json::Value, k: &str) -> Result<&'a serde_json::Value, ImportError> {
    v.get(k).ok_or_else(|| field(k, "missing"))
}

fn jarr<'a>(v: &'a serde_json::Value, f: &str) -> Result<&'a Vec<serde_json::Value>, ImportError> {
    v.as_array().ok_or_else(|| field(f, "expected a list"))
}

/// A JSON number as an exact rational (through its shortest decimal form).
fn jnum(v: &serde_json::Value, f: &str) -> Result<Lit, ImportError> {
    match v {
        serde_json::Value::Number(n) => decimal(&n.to_string())
            .map(Lit::Num)
            .ok_or_else(|| field(f, "not a finite number")),
        _ => Err(field(f, "expected a number")),
    }
}

/// The columns of an `RK_Chain` dump, each value a parsed number.
struct RkDump {
    ln: usize,
    fw: Vec<Vec<Lit>>,
    bw: Vec<Vec<Lit>>,
    fwd_tmp: Vec<Vec<Lit>>,
    bwd_tmp: Vec<Vec<Lit>>,
    cbw: Vec<Vec<Lit>>,
    cw: Vec<Lit>,
    nb_sol: Vec<u64>,
    ff_fw: Vec<Lit>,
    ff_fwd_tmp: Vec<Lit>,
}

/// A list of numbers `v[k]` with at least `len` entries.
fn jnums(v: &serde_json::Value, k: &str, len: usize) -> Result<Vec<Lit>, ImportError> {
    let a = jarr(obj(v, k)?, k)?;
    if a.len() < len {
        return Err(field(
            k,
            format!("expected {len} entries, found {}", a.len()),
        ));
    }
    a.iter()
        .enumerate()
        .map(|(i, x)| jnum(x, &format!("{k}[{i}]")))
        .collect()
}

/// Parse the dump: every field present, lists of the right shape, numbers.
fn rk_parse(text: &str) -> Result<RkDump, ImportError> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| ImportError::Syntax {
        offset: 0,
        message: format!("line {} column {}: {e}", e.line(), e.column()),
    })?;
    if !v.is_object() {
        return Err(field("(top level)", "expected a JSON object"));
    }
    let ln = obj(&v, "ln")?
        .as_u64()
        .filter(|n| (1..=1 << 16).contains(n))
        .ok_or_else(|| field("ln", "expected a block count between 1 and 65536"))?
        as usize;
    let per_opt = |k: &str, len: usize| -> Result<Vec<Vec<Lit>>, ImportError> {
        let a = jarr(obj(&v, k)?, k)?;
        if a.len() < len {
            return Err(field(
                k,
                format!("expected at least {len} entries, found {}", a.len()),
            ));
        }
        a.iter()
            .enumerate()
            .map(|(i, x)| {
                let f = format!("{k}[{i}]");
                jarr(x, &f)?
                    .iter()
                    .enumerate()
                    .map(|(j, y)| jnum(y, &format!("{f}[{j}]")))
                    .collect()
            })
            .collect()
    };
    let nb_sol: Vec<u64> = jarr(obj(&v, "nb_sol")?, "nb_sol")?
        .iter()
        .enumerate()
        .map(|(i, x)| {
            x.as_u64()
                .ok_or_else(|| field(format!("nb_sol[{i}]"), "expected a count"))
        })
        .collect::<Result<_, _>>()?;
    Ok(RkDump {
        ln,
        fw: per_opt("fw", ln)?,
        bw: per_opt("bw", ln)?,
        fwd_tmp: per_opt("fwd_tmp", ln)?,
        bwd_tmp: per_opt("bwd_tmp", ln)?,
        cbw: per_opt("cbw", ln + 1)?,
        cw: jnums(&v, "cw", ln + 1)?,
        nb_sol,
        ff_fw: jnums(&v, "ff_fw", 0)?,
        ff_fwd_tmp: jnums(&v, "ff_fwd_tmp", 0)?,
    })
}

impl RkDump {
    /// Block i's option count, each per-option column checked against it.
    fn options(&self, i: usize) -> Result<usize, ImportError> {
        let n = *self
            .nb_sol
            .get(i)
            .ok_or_else(|| field(format!("nb_sol[{i}]"), "missing"))? as usize;
        if n == 0 {
            return Err(field(
                format!("nb_sol[{i}]"),
                "a block needs at least one option",
            ));
        }
        for (name, col) in [
            ("fw", &self.fw[i]),
            ("bw", &self.bw[i]),
            ("fwd_tmp", &self.fwd_tmp[i]),
            ("bwd_tmp", &self.bwd_tmp[i]),
            ("cbw", &self.cbw[i + 1]),
        ] {
            if col.len() != n {
                return Err(field(
                    format!("{name}[{}]", if name == "cbw" { i + 1 } else { i }),
                    format!("expected nb_sol[{i}] = {n} options, found {}", col.len()),
                ));
            }
        }
        Ok(n)
    }

    /// Block i's fastest option: least fw + bw, then least cbw.
    fn fastest(&self, i: usize, n: usize) -> Result<usize, ImportError> {
        let mut best: Option<(BigRational, BigRational, usize)> = None;
        for k in 0..n {
            let t = num(&self.fw[i][k], &format!("fw[{i}][{k}]"))?
                + num(&self.bw[i][k], &format!("bw[{i}][{k}]"))?;
            let m = num(&self.cbw[i + 1][k], &format!("cbw[{}][{k}]", i + 1))?.clone();
            if best.as_ref().is_none_or(|b| (&t, &m) < (&b.0, &b.1)) {
                best = Some((t, m, k));
            }
        }
        Ok(best.map(|b| b.2).unwrap_or(0))
    }

    /// Option k of block i, with |ā| raised to |a| (`clamped` counts it),
    /// its backward scratch read as `cv.o.rockmate_tmp` says.
    fn option(
        &self,
        cv: &mut Conv,
        i: usize,
        k: usize,
        a: u64,
        clamped: &mut usize,
    ) -> Result<RematOption, ImportError> {
        let bt = format!("bwd_tmp[{i}][{k}]");
        let o_b = match cv.o.rockmate_tmp {
            RockmateTmp::Hrockmate => {
                let (cw_i, cw_o) = (format!("cw[{i}]"), format!("cw[{}]", i + 1));
                cv.bytes_less(
                    &self.bwd_tmp[i][k],
                    &[(&self.cw[i], &cw_i), (&self.cw[i + 1], &cw_o)],
                    &bt,
                )?
            }
            RockmateTmp::RkRotor => {
                let cw_o = format!("cw[{}]", i + 1);
                cv.bytes_less(&self.bwd_tmp[i][k], &[(&self.cw[i + 1], &cw_o)], &bt)?
            }
            RockmateTmp::AsIs => cv.bytes(&self.bwd_tmp[i][k], &bt)?,
        };
        let abar = cv.bytes(&self.cbw[i + 1][k], &format!("cbw[{}][{k}]", i + 1))?;
        if abar < a {
            *clamped += 1;
        }
        Ok(RematOption {
            u_f: cv.ticks(&self.fw[i][k], &format!("fw[{i}][{k}]"))?,
            u_b: cv.ticks(&self.bw[i][k], &format!("bw[{i}][{k}]"))?,
            abar: abar.max(a),
            o_f: cv.bytes(&self.fwd_tmp[i][k], &format!("fwd_tmp[{i}][{k}]"))?,
            o_b,
        })
    }

    /// The fast forward of block i (`ff_fw[i]`, `ff_fwd_tmp[i]`).
    fn fast_forward(&self, cv: &mut Conv, i: usize) -> Result<(i64, u64), ImportError> {
        let get = |col: &'_ [Lit], name: &str| {
            col.get(i)
                .cloned()
                .ok_or_else(|| field(format!("{name}[{i}]"), "missing"))
        };
        let f = get(&self.ff_fw, "ff_fw")?;
        let t = get(&self.ff_fwd_tmp, "ff_fwd_tmp")?;
        let ft = format!("ff_fwd_tmp[{i}]");
        let o_ff = if cv.o.rockmate_tmp == RockmateTmp::RkRotor {
            cv.bytes_less(&t, &[(&self.cw[i + 1], &format!("cw[{}]", i + 1))], &ft)?
        } else {
            cv.bytes(&t, &ft)?
        };
        Ok((cv.ticks(&f, &format!("ff_fw[{i}]"))?, o_ff))
    }
}

/// Import a JSON dump of rockmate's `RK_Chain`: every option of every block
/// (option 0 as the layer's own fields, the others as its `options`, the fast
/// forward as `ff_u_f` / `ff_o_f`), or, with `fastest_only`, only each block's
/// fastest option (ff_fw ignored).
pub fn import_rockmate(text: &str, o: &ImportOptions) -> Result<RematChain, ImportError> {
    check_options(o)?;
    let d = rk_parse(text)?;
    let ln = d.ln;
    let mut cv = Conv {
        o,
        rounded: 0,
        saturated: vec![],
    };
    let mut layers = Vec::with_capacity(ln);
    let mut chosen = Vec::with_capacity(ln);
    let mut clamped = 0;
    for i in 0..ln {
        let n = d.options(i)?;
        let a = cv.bytes(&d.cw[i + 1], &format!("cw[{}]", i + 1))?;
        let ks: Vec<usize> = if o.fastest_only {
            vec![d.fastest(i, n)?]
        } else {
            (0..n).collect()
        };
        chosen.push(ks[0]);
        let mut opts = ks
            .iter()
            .map(|&k| d.option(&mut cv, i, k, a, &mut clamped))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter();
        let x = opts.next().unwrap_or_default();
        let (ff_u_f, ff_o_f) = if o.fastest_only {
            (None, None)
        } else {
            let (f, t) = d.fast_forward(&mut cv, i)?;
            (Some(f), Some(t))
        };
        layers.push(RematLayer {
            u_f: x.u_f,
            u_b: x.u_b,
            a,
            abar: x.abar,
            o_f: x.o_f,
            o_b: x.o_b,
            delta: None,
            options: opts.collect(),
            ff_u_f,
            ff_o_f,
        });
    }
    // A loss block: bw/bwd_tmp with ln+1 entries (the last one the loss).
    let zero = Lit::Num(BigRational::zero());
    let loss_col = |col: &[Vec<Lit>]| col.get(ln).and_then(|x| x.first()).cloned();
    let loss = RematLoss {
        u_f: 0,
        u_b: cv.ticks(
            loss_col(&d.bw).as_ref().unwrap_or(&zero),
            &format!("bw[{ln}][0]"),
        )?,
        abar: 0,
        o_f: 0,
        o_b: cv.bytes(
            loss_col(&d.bwd_tmp).as_ref().unwrap_or(&zero),
            &format!("bwd_tmp[{ln}][0]"),
        )?,
    };
    let a0 = cv.bytes(&d.cw[0], "cw[0]")?;
    let how = if o.fastest_only {
        format!(
            " One option per block (--fastest-only): the fastest (least fw + bw, then least \
             cbw): options {chosen:?}; ff_fw/ff_fwd_tmp read and ignored."
        )
    } else {
        " Every option kept (nb_sol = {:?}; option 0 as the layer, the others as `options`; \
         a block's backward options form the variant group bwd{ℓ}); F{ℓ} is the fast forward \
         ff_fw/ff_fwd_tmp."
            .replace("{:?}", &format!("{:?}", &d.nb_sol[..ln]))
    };
    let tmp = match o.rockmate_tmp {
        RockmateTmp::AsIs => {
            " ff_fwd_tmp and bwd_tmp taken as scratch as they are (--rockmate-tmp as-is: \
             exact for hrockmate's ff_fwd_tmp, an over-count otherwise)."
                .to_string()
        }
        RockmateTmp::Hrockmate => {
            " --rockmate-tmp hrockmate: o_b = bwd_tmp[i][k] − cw[i] − cw[i+1] (both \
             gradients, counted by B{ℓ}), o_ff = ff_fwd_tmp[i]."
                .to_string()
        }
        RockmateTmp::RkRotor => {
            " --rockmate-tmp rk-rotor: o_ff = ff_fwd_tmp[i] − cw[i+1] (the block \
             output, counted by F{ℓ}), o_b = bwd_tmp[i][k] − cw[i+1] (δ_ℓ)."
                .to_string()
        }
    };
    let extra = format!(
        "{how}{tmp}{}{}",
        if clamped > 0 {
            format!(" {clamped} option(s) had cbw < cw: |ā| raised to |a|.")
        } else {
            String::new()
        },
        if cv.saturated.is_empty() {
            String::new()
        } else {
            format!(
                " Inconsistent dump: {} below the sizes subtracted, set to 0: {}.",
                cv.saturated.len(),
                cv.saturated.join(", ")
            )
        }
    );
    finish(o, layers, loss, a0, cv.rounded, "rockmate RK_Chain", &extra)
}
