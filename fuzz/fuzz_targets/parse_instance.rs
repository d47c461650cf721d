//! Instance loader: any text gives an instance or an error naming the field.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = offcert::io::parse_instance("fuzz.json", text);
    }
});
