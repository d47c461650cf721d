//! Fuzz the rotor and rockmate chain importers: any input is either imported
//! (and then compiles) or rejected with an error naming a field; never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use offcert::family::remat_import::{import_rockmate, import_rotor, ImportOptions, RockmateTmp};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let o = ImportOptions {
            name: "fuzz".into(),
            mem_unit: 1 + (data.len() % 7) as u64,
            tick_us: 1 + (data.len() % 5) as u64,
            gpu_memory: None,
            bandwidth: None,
            source: "fuzz".into(),
            fastest_only: data.len() % 2 == 0,
            rockmate_tmp: match data.len() % 3 {
                0 => RockmateTmp::AsIs,
                1 => RockmateTmp::Hrockmate,
                _ => RockmateTmp::RkRotor,
            },
        };
        for r in [import_rotor(text, &o), import_rockmate(text, &o)] {
            if let Ok(c) = r {
                let _ = c.compile();
            }
        }
    }
});
