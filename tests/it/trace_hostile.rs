//! Deterministic fuzz-style robustness test (the cargo-fuzz targets in `fuzz/` do
//! the same at random for longer): truncated and mutated traces, instances and
//! schedules give an error, never a panic.

use offcert::trace::export::{write_chrome_trace, ExportOptions};
use offcert::trace::kineto;
use std::io::Write;
use std::panic::catch_unwind;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// xorshift64*: reproducible mutations without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const TOKENS: &[&[u8]] = &[
    b"1e999",
    b"-1",
    b"\"x\"",
    b"null",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"99999999999999999999999999",
    b"0.0000001",
    b"\"stream 7\"",
    b"\\u0000",
    b"NaN",
];

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut v = base.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len());
        match rng.below(4) {
            0 => v[at] = rng.next() as u8,
            1 => {
                v.remove(at);
            }
            2 => {
                let t = TOKENS[rng.below(TOKENS.len())];
                v.splice(at..at, t.iter().copied());
            }
            _ => {
                let end = (at + rng.below(40)).min(v.len());
                v.drain(at..end);
            }
        }
    }
    v
}

fn gzip(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

fn exported() -> Vec<u8> {
    let (_, inst) =
        offcert::io::load_instance(format!("{ROOT}/instances/examples/chain3.json").as_ref())
            .unwrap();
    let s = offcert::io::load_schedule(
        format!("{ROOT}/instances/examples/chain3.offload-x0.schedule.json").as_ref(),
        &inst,
    )
    .unwrap();
    let mut out = Vec::new();
    write_chrome_trace(&mut out, "x.json", &inst, &s, ExportOptions::default()).unwrap();
    out
}

fn import_and_audit(bytes: &[u8]) -> bool {
    match kineto::parse_bytes("fuzz.json", bytes) {
        Ok(t) => {
            let opts = offcert::trace::audit::Options {
                budget: Some(offcert::units::Bytes(8)),
                link: Some(offcert::trace::audit::LinkRate { bytes: 1, ns: 1 }),
                ..Default::default()
            };
            let _ = offcert::trace::audit::audit_trace(&t, &opts);
            true
        }
        Err(e) => {
            // Every error names the input.
            assert!(e.to_string().starts_with("fuzz.json"), "{e}");
            false
        }
    }
}

#[test]
fn truncated_traces_are_errors() {
    let plain = exported();
    let gz = gzip(&plain);
    for cut in (0..plain.len()).step_by(7) {
        assert!(
            !catch_unwind(|| import_and_audit(&plain[..cut])).unwrap(),
            "a {cut}-byte prefix imported"
        );
    }
    for cut in 0..gz.len() {
        assert!(
            !catch_unwind(|| import_and_audit(&gz[..cut])).unwrap(),
            "a {cut}-byte gzip prefix imported"
        );
    }
    assert!(import_and_audit(&plain) && import_and_audit(&gz));
}

#[test]
fn mutated_traces_never_panic() {
    let plain = exported();
    let gz = gzip(&plain);
    let mut rng = Rng(0x5eed_0ff_c3e7);
    for _ in 0..3000 {
        let m = mutate(&mut rng, &plain);
        assert!(
            catch_unwind(|| import_and_audit(&m)).is_ok(),
            "panic on {}",
            String::from_utf8_lossy(&m)
        );
    }
    for _ in 0..500 {
        let m = mutate(&mut rng, &gz);
        assert!(catch_unwind(|| import_and_audit(&m)).is_ok());
    }
}

#[test]
fn mutated_instances_and_schedules_never_panic() {
    let itext = std::fs::read(format!("{ROOT}/instances/examples/chain3.json")).unwrap();
    let stext = std::fs::read(format!(
        "{ROOT}/instances/examples/chain3.offload-x0.schedule.json"
    ))
    .unwrap();
    let (_, inst) =
        offcert::io::parse_instance("chain3.json", std::str::from_utf8(&itext).unwrap()).unwrap();
    let mut rng = Rng(42);
    for _ in 0..2000 {
        let m = mutate(&mut rng, &itext);
        let r = catch_unwind(|| {
            if let Ok(t) = std::str::from_utf8(&m) {
                let _ = offcert::io::parse_instance("fuzz.json", t);
            }
        });
        assert!(
            r.is_ok(),
            "panic on instance {}",
            String::from_utf8_lossy(&m)
        );
        let m = mutate(&mut rng, &stext);
        let r = catch_unwind(|| {
            if let Ok(t) = std::str::from_utf8(&m) {
                if let Ok(s) = offcert::io::parse_schedule("fuzz.json", t, &inst) {
                    let _ = offcert::check::check(&inst, &s);
                }
            }
        });
        assert!(
            r.is_ok(),
            "panic on schedule {}",
            String::from_utf8_lossy(&m)
        );
    }
}

#[test]
fn hostile_nsys_files_are_errors() {
    let dir = std::env::temp_dir().join(format!("offcert-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let real = std::fs::read(format!(
        "{ROOT}/tests/data/traces/nsys_h200_nvfuser_report1.sqlite"
    ))
    .unwrap();
    // Truncated database files: error or a (partial) read, never a panic.
    for (i, cut) in [16usize, 100, 4096, 65536, real.len() / 2]
        .into_iter()
        .enumerate()
    {
        let p = dir.join(format!("cut{i}.sqlite"));
        std::fs::write(&p, &real[..cut]).unwrap();
        let r = catch_unwind(|| offcert::trace::load(&p).map(|_| ()));
        assert!(r.is_ok(), "panic on a {cut}-byte prefix");
    }
    // A well-formed database whose tables hold wrong types and unknown enum values.
    let p = dir.join("bad.sqlite");
    let c = rusqlite::Connection::open(&p).unwrap();
    c.execute_batch(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO StringIds VALUES (1, 'k');
         CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER PRIMARY KEY, name TEXT, label TEXT);
         INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (1, 'CUDA_MEMCPY_KIND_HTOD', 'Host-to-Device');
         CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, correlationId INTEGER, bytes INTEGER, copyKind INTEGER);
         INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (0, 10, 0, 7, 1, 100, 77);",
    )
    .unwrap();
    drop(c);
    let e = offcert::trace::load(&p).unwrap_err().to_string();
    assert!(
        e.contains("CUPTI_ACTIVITY_KIND_MEMCPY[row 0].copyKind")
            && e.contains("ENUM_CUDA_MEMCPY_OPER"),
        "{e}"
    );
    let c = rusqlite::Connection::open(&p).unwrap();
    c.execute_batch("UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind = 1, start = 'soon';")
        .unwrap();
    drop(c);
    let e = offcert::trace::load(&p).unwrap_err().to_string();
    assert!(e.contains("CUPTI_ACTIVITY_KIND_MEMCPY[row 0].start"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
