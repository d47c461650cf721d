//! Kineto importer: any bytes (plain or gzip JSON) give a trace or an error, never a panic;
//! an imported trace audits without panicking.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = offcert::trace::kineto::parse_bytes("fuzz.json", data) {
        let opts = offcert::trace::audit::Options {
            budget: Some(offcert::units::Bytes(1 << 20)),
            link: Some(offcert::trace::audit::LinkRate { bytes: 12, ns: 1 }),
            ..Default::default()
        };
        let _ = offcert::trace::audit::audit_trace(&t, &opts);
    }
});
