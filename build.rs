//! Lets offcert's binaries, tests, benches and examples find the prebuilt HiGHS
//! that `scripts/setup.sh` puts in `.deps/highs/lib` at run time, through an
//! rpath to that directory of this clone (harmless when HiGHS was compiled from
//! source and linked statically instead). Nothing to export.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo");
        let lib = Path::new(&manifest).join(".deps").join("highs").join("lib");
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    }
}
