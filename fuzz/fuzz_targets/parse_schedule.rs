//! Schedule loader (against the bundled chain3 instance), then the checker.
#![no_main]
use libfuzzer_sys::fuzz_target;

const INSTANCE: &str = include_str!("../../instances/examples/chain3.json");

fuzz_target!(|data: &[u8]| {
    let (_, inst) = offcert::io::parse_instance("chain3.json", INSTANCE).expect("bundled instance");
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(s) = offcert::io::parse_schedule("fuzz.json", text, &inst) {
            let _ = offcert::check::check(&inst, &s);
        }
    }
});
