//! Execution-trace importer: any bytes (plain or gzip JSON, optionally a Kineto
//! trace in the second half) give an instance or an error, never a panic; an
//! imported instance compiles.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let opts = offcert::trace::et::EtOptions {
        name: "fuzz".into(),
        gpu_memory: None,
        bandwidth: offcert::family::BandwidthFile::PerTick(12),
        split_reused_storages: true,
    };
    let (et, kineto) = data.split_at(data.len() / 2);
    let Ok(et) = offcert::trace::et::gunzip("fuzz.json", et.to_vec()) else { return };
    let Ok(k) = offcert::trace::et::gunzip("kineto.json", kineto.to_vec()) else { return };
    for kin in [None, Some(("kineto.json", k.as_slice()))] {
        if let Ok((seq, _)) = offcert::trace::et::import("fuzz.json", &et, kin, &opts) {
            let _ = offcert::family::InstanceFile::OpSequence(seq).compile();
        }
    }
});
