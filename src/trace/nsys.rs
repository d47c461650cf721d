//! Nsight Systems SQLite export importer (`nsys export --type sqlite`).
//!
//! Owns: reading `CUPTI_ACTIVITY_KIND_KERNEL`, `…_MEMCPY`, `…_MEMSET`, `…_RUNTIME`
//! and `NVTX_EVENTS` row by row (rusqlite, read-only), with enums decoded from the
//! file's own `ENUM_*` tables (their numeric ids change between Nsight versions)
//! and names from `StringIds`. Times are the file's integer nanoseconds (relative to
//! the session start). Must not import: the checker, solvers.

use super::{
    CopyKind, Format, GpuEvent, GpuKind, Nanos, Range, RangeKind, RuntimeCall, Trace, TraceError,
};
use crate::io::FieldError;
use rusqlite::{Connection, OpenFlags, Row};
use std::collections::HashMap;
use std::path::Path;

const KERNEL: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
const MEMCPY: &str = "CUPTI_ACTIVITY_KIND_MEMCPY";
const MEMSET: &str = "CUPTI_ACTIVITY_KIND_MEMSET";
const RUNTIME: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
const NVTX: &str = "NVTX_EVENTS";

/// Import an Nsight Systems SQLite export.
pub fn load(path: &Path) -> Result<Trace, TraceError> {
    let file = path.display().to_string();
    if let Err(source) = std::fs::metadata(path) {
        return Err(TraceError::Read {
            file,
            error: source,
        });
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| TraceError::Sqlite {
        file: file.clone(),
        message: e.to_string(),
    })?;
    read(&file, &conn)
}

/// Import from an open connection; `file` names it in errors.
pub fn read(file: &str, conn: &Connection) -> Result<Trace, TraceError> {
    let mut r = Reader {
        file: file.to_string(),
        conn,
        t: Trace::new(file.to_string(), Format::Nsys),
        strings: HashMap::new(),
    };
    let tables = r.tables()?;
    for t in [KERNEL, MEMCPY, RUNTIME] {
        if !tables.iter().any(|x| x == t) {
            // Nsight omits a table when no such activity was captured.
            r.t.counts.insert(format!("{t} (absent)"), 0);
        }
    }
    if !tables.iter().any(|x| x == "StringIds")
        && [KERNEL, RUNTIME]
            .iter()
            .any(|t| tables.iter().any(|x| x == t))
    {
        return Err(TraceError::Format {
            file: file.into(),
            message: "table StringIds is missing (kernel and runtime names refer to it)".into(),
        });
    }
    if tables.iter().any(|x| x == "StringIds") {
        r.strings()?;
    }
    if tables.iter().any(|x| x == KERNEL) {
        r.kernels()?;
    }
    if tables.iter().any(|x| x == MEMCPY) {
        let kinds = r.enum_table("ENUM_CUDA_MEMCPY_OPER", MEMCPY)?;
        r.copies(&kinds)?;
    }
    if tables.iter().any(|x| x == MEMSET) {
        r.memsets()?;
    }
    if tables.iter().any(|x| x == RUNTIME) {
        r.runtime()?;
    }
    if tables.iter().any(|x| x == NVTX) {
        let types = r.enum_table("ENUM_NSYS_EVENT_TYPE", NVTX)?;
        r.nvtx(&types)?;
    }
    r.t.resolution = Nanos(1);
    r.t.finish();
    Ok(r.t)
}

struct Reader<'c> {
    file: String,
    conn: &'c Connection,
    t: Trace,
    /// StringIds id → interned name.
    strings: HashMap<i64, super::NameId>,
}

impl Reader<'_> {
    fn sql(&self, table: &str, e: rusqlite::Error) -> TraceError {
        TraceError::Sqlite {
            file: self.file.clone(),
            message: format!("{table}: {e}"),
        }
    }

    fn tables(&self) -> Result<Vec<String>, TraceError> {
        let mut st = self
            .conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
            .map_err(|e| self.sql("sqlite_master", e))?;
        let rows = st
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| self.sql("sqlite_master", e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.sql("sqlite_master", e))
    }

    /// Run `query` over `table` and hand each row to `f`, with errors naming the row.
    fn rows(
        &mut self,
        table: &str,
        query: &str,
        mut f: impl FnMut(&mut Trace, &HashMap<i64, super::NameId>, &Row, u64) -> Result<(), RowError>,
    ) -> Result<(), TraceError> {
        let mut st = self.conn.prepare(query).map_err(|e| TraceError::Sqlite {
            file: self.file.clone(),
            message: format!("{table}: {e}"),
        })?;
        let mut rows = st.query([]).map_err(|e| TraceError::Sqlite {
            file: self.file.clone(),
            message: format!("{table}: {e}"),
        })?;
        let mut n: u64 = 0;
        loop {
            let row = match rows.next() {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) => {
                    return Err(TraceError::Sqlite {
                        file: self.file.clone(),
                        message: format!("{table}: row {n}: {e}"),
                    })
                }
            };
            f(&mut self.t, &self.strings, row, n).map_err(|e| {
                TraceError::Field(FieldError {
                    file: self.file.clone(),
                    field: format!("{table}[row {n}].{}", e.column),
                    message: e.message,
                })
            })?;
            n += 1;
        }
        self.t.total_events += n;
        *self.t.counts.entry(table.to_string()).or_insert(0) += n;
        Ok(())
    }

    fn strings(&mut self) -> Result<(), TraceError> {
        let mut st = self
            .conn
            .prepare("SELECT id, value FROM StringIds")
            .map_err(|e| self.sql("StringIds", e))?;
        let mut rows = st.query([]).map_err(|e| self.sql("StringIds", e))?;
        let mut n = 0u64;
        while let Some(row) = rows.next().map_err(|e| self.sql("StringIds", e))? {
            let id: i64 = row.get(0).map_err(|e| {
                TraceError::Field(FieldError {
                    file: self.file.clone(),
                    field: format!("StringIds[row {n}].id"),
                    message: e.to_string(),
                })
            })?;
            let v: String = row.get(1).map_err(|e| {
                TraceError::Field(FieldError {
                    file: self.file.clone(),
                    field: format!("StringIds[row {n}].value"),
                    message: e.to_string(),
                })
            })?;
            let nid = self.t.names.intern(&v);
            self.strings.insert(id, nid);
            n += 1;
        }
        Ok(())
    }

    /// An `ENUM_*` table: id → symbol name. `user` names the table that needs it.
    fn enum_table(&self, table: &str, user: &str) -> Result<HashMap<i64, String>, TraceError> {
        let mut st = self
            .conn
            .prepare(&format!("SELECT id, name FROM {table}"))
            .map_err(|e| TraceError::Sqlite {
                file: self.file.clone(),
                message: format!("{table} (needed to decode {user}): {e}"),
            })?;
        let rows = st
            .query_map([], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, Option<String>>(1)?))
            })
            .map_err(|e| self.sql(table, e))?;
        let mut m = HashMap::new();
        for r in rows {
            let (id, name) = r.map_err(|e| self.sql(table, e))?;
            m.insert(id, name.unwrap_or_default());
        }
        Ok(m)
    }

    fn kernels(&mut self) -> Result<(), TraceError> {
        self.rows(KERNEL, "SELECT start, end, deviceId, streamId, correlationId, demangledName, shortName FROM CUPTI_ACTIVITY_KIND_KERNEL", |t, s, row, _| {
            let (start, end) = interval(row)?;
            let name = match (int_opt(row, 5, "demangledName")?, int_opt(row, 6, "shortName")?) {
                (Some(d), _) if s.contains_key(&d) => s[&d],
                (_, Some(sh)) if s.contains_key(&sh) => s[&sh],
                (d, _) => return Err(RowError { column: "demangledName", message: format!("string id {d:?} is not in StringIds") }),
            };
            t.gpu.push(GpuEvent {
                kind: GpuKind::Kernel,
                device: int(row, 2, "deviceId")?,
                stream: int(row, 3, "streamId")?,
                start,
                end,
                bytes: None,
                correlation: int_opt(row, 4, "correlationId")?,
                name,
            });
            Ok(())
        })
    }

    fn copies(&mut self, kinds: &HashMap<i64, String>) -> Result<(), TraceError> {
        let mut names: HashMap<CopyKind, super::NameId> = HashMap::new();
        for k in [
            CopyKind::HtoD,
            CopyKind::DtoH,
            CopyKind::DtoD,
            CopyKind::HtoH,
            CopyKind::PtoP,
            CopyKind::Other,
        ] {
            names.insert(k, self.t.names.intern(&format!("Memcpy {}", k.label())));
        }
        self.rows(MEMCPY, "SELECT start, end, deviceId, streamId, correlationId, bytes, copyKind FROM CUPTI_ACTIVITY_KIND_MEMCPY", |t, _, row, _| {
            let (start, end) = interval(row)?;
            let bytes = int(row, 5, "bytes")?;
            let bytes = u64::try_from(bytes).map_err(|_| RowError { column: "bytes", message: format!("negative byte count {bytes}") })?;
            let code = int(row, 6, "copyKind")?;
            let sym = kinds.get(&code).ok_or_else(|| RowError {
                column: "copyKind",
                message: format!("value {code} is not in ENUM_CUDA_MEMCPY_OPER"),
            })?;
            let kind = copy_kind(sym);
            t.gpu.push(GpuEvent {
                kind: GpuKind::Memcpy(kind),
                device: int(row, 2, "deviceId")?,
                stream: int(row, 3, "streamId")?,
                start,
                end,
                bytes: Some(bytes),
                correlation: int_opt(row, 4, "correlationId")?,
                name: names[&kind],
            });
            Ok(())
        })
    }

    fn memsets(&mut self) -> Result<(), TraceError> {
        let name = self.t.names.intern("Memset");
        self.rows(MEMSET, "SELECT start, end, deviceId, streamId, correlationId, bytes FROM CUPTI_ACTIVITY_KIND_MEMSET", |t, _, row, _| {
            let (start, end) = interval(row)?;
            let bytes = int(row, 5, "bytes")?;
            t.gpu.push(GpuEvent {
                kind: GpuKind::Memset,
                device: int(row, 2, "deviceId")?,
                stream: int(row, 3, "streamId")?,
                start,
                end,
                bytes: u64::try_from(bytes).ok(),
                correlation: int_opt(row, 4, "correlationId")?,
                name,
            });
            Ok(())
        })
    }

    fn runtime(&mut self) -> Result<(), TraceError> {
        self.rows(
            RUNTIME,
            "SELECT start, end, globalTid, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME",
            |t, s, row, _| {
                let (start, end) = interval(row)?;
                let nid = int(row, 4, "nameId")?;
                let name = *s.get(&nid).ok_or_else(|| RowError {
                    column: "nameId",
                    message: format!("string id {nid} is not in StringIds"),
                })?;
                t.runtime.push(RuntimeCall {
                    thread: int_opt(row, 2, "globalTid")?.unwrap_or(0),
                    start,
                    end,
                    correlation: int_opt(row, 3, "correlationId")?,
                    name,
                });
                Ok(())
            },
        )
    }

    fn nvtx(&mut self, types: &HashMap<i64, String>) -> Result<(), TraceError> {
        let mut marks = 0u64;
        self.rows(
            NVTX,
            "SELECT start, end, eventType, text, textId, globalTid FROM NVTX_EVENTS",
            |t, s, row, _| {
                let code = int(row, 2, "eventType")?;
                let ty = types.get(&code).ok_or_else(|| RowError {
                    column: "eventType",
                    message: format!("value {code} is not in ENUM_NSYS_EVENT_TYPE"),
                })?;
                // Push/pop and start/end ranges have an extent; marks, domain and
                // category declarations do not.
                if ty != "NvtxPushPopRange" && ty != "NvtxStartEndRange" {
                    marks += 1;
                    return Ok(());
                }
                let start = Nanos(int(row, 0, "start")?);
                let end = match int_opt(row, 1, "end")? {
                    Some(e) => Nanos(e),
                    // A range still open when the capture stopped.
                    None => start,
                };
                if end < start {
                    return Err(RowError {
                        column: "end",
                        message: format!("ends at {} before it starts at {}", end.0, start.0),
                    });
                }
                let text: Option<String> = row.get(3).map_err(|e| RowError {
                    column: "text",
                    message: e.to_string(),
                })?;
                let name = match (text, int_opt(row, 4, "textId")?) {
                    (Some(x), _) => t.names.intern(&x),
                    (None, Some(id)) => *s.get(&id).ok_or_else(|| RowError {
                        column: "textId",
                        message: format!("string id {id} is not in StringIds"),
                    })?,
                    (None, None) => t.names.intern(""),
                };
                let thread = int_opt(row, 5, "globalTid")?.unwrap_or(0);
                t.ranges.push(Range {
                    kind: RangeKind::Nvtx,
                    device: 0,
                    thread,
                    start,
                    end,
                    name,
                });
                Ok(())
            },
        )?;
        if marks > 0 {
            self.t.counts.insert(format!("{NVTX} (not ranges)"), marks);
        }
        Ok(())
    }
}

/// A bad value in one row; the caller adds the table and row.
struct RowError {
    column: &'static str,
    message: String,
}

fn int(row: &Row, i: usize, column: &'static str) -> Result<i64, RowError> {
    row.get::<_, i64>(i).map_err(|e| RowError {
        column,
        message: e.to_string(),
    })
}

fn int_opt(row: &Row, i: usize, column: &'static str) -> Result<Option<i64>, RowError> {
    row.get::<_, Option<i64>>(i).map_err(|e| RowError {
        column,
        message: e.to_string(),
    })
}

fn interval(row: &Row) -> Result<(Nanos, Nanos), RowError> {
    let start = int(row, 0, "start")?;
    let end = int(row, 1, "end")?;
    if end < start {
        return Err(RowError {
            column: "end",
            message: format!("ends at {end} before it starts at {start}"),
        });
    }
    Ok((Nanos(start), Nanos(end)))
}

/// `CUDA_MEMCPY_KIND_HTOD` → HtoD (unified-memory migrations cross the link too).
fn copy_kind(symbol: &str) -> CopyKind {
    let s = symbol.to_ascii_uppercase();
    if s.ends_with("HTOD") {
        CopyKind::HtoD
    } else if s.ends_with("DTOH") {
        CopyKind::DtoH
    } else if s.ends_with("DTOD") {
        CopyKind::DtoD
    } else if s.ends_with("HTOH") {
        CopyKind::HtoH
    } else if s.ends_with("PTOP") {
        CopyKind::PtoP
    } else {
        CopyKind::Other
    }
}
