//! The fuzz targets link offcert, and so HiGHS: when `scripts/setup.sh` put a
//! prebuilt one in `../.deps/highs/lib`, find it there at run time (rpath), as
//! offcert's own build.rs does for its binaries and tests.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo");
        let lib = Path::new(&manifest)
            .join("..")
            .join(".deps")
            .join("highs")
            .join("lib");
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    }
}
