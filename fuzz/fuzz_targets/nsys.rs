//! Nsight Systems importer: SQLite bytes are written to a file and opened read-only.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path =
        std::env::temp_dir().join(format!("offcert-fuzz-nsys-{}.sqlite", std::process::id()));
    if std::fs::write(&path, data).is_ok() {
        if let Ok(t) = offcert::trace::nsys::load(&path) {
            let _ = offcert::trace::audit::audit_trace(&t, &Default::default());
        }
    }
});
