//! The paper-scale instances: the files equal their derivation, Σu matches
//! Table 1, and every heuristic schedule on them passes the checker.
//! `OFFCERT_REGENERATE=1 cargo test --test weight_paper` rewrites the files.

use crate::weight_table1;

use offcert::family::InstanceFile;
use offcert::heuristic::{run, weight};
use offcert::io::load_instance;
use weight_table1::{derive, TABLE1};

#[test]
fn paper_instances_equal_their_derivation() {
    for row in &TABLE1 {
        let want = InstanceFile::WeightChain(derive(row));
        if std::env::var_os("OFFCERT_REGENERATE").is_some() {
            let text = serde_json::to_string_pretty(&want).unwrap() + "\n";
            std::fs::write(row.path(), text).unwrap();
        }
        let (file, inst) =
            load_instance(std::path::Path::new(&row.path())).expect("bundled instance loads");
        assert_eq!(file, want, "{} differs from its derivation", row.path());
        assert_eq!(
            inst.total_compute().0,
            row.sum_u as i64 * 1000,
            "{}: Σu",
            row.name()
        );
        let InstanceFile::WeightChain(c) = &file else {
            unreachable!()
        };
        assert!(c.note.as_deref().is_some_and(|n| n.contains("Table 1")));
    }
}

fn heuristics_valid_on(names: &[&str]) {
    for row in TABLE1
        .iter()
        .filter(|r| names.is_empty() || names.contains(&r.name().as_str()))
    {
        let file = InstanceFile::WeightChain(derive(row));
        let inst = file.compile().unwrap();
        for h in weight::heuristics() {
            let r = run(h.as_ref(), &file, &inst)
                .unwrap_or_else(|e| panic!("{} on {}: {e}", h.name(), row.name()));
            assert!(r.checked.report().makespan.0 >= row.sum_u as i64 * 1000);
        }
    }
}

#[test]
fn heuristics_are_valid_on_the_smallest_paper_instance() {
    heuristics_valid_on(&["gpt2-L38-b16"]);
}

#[test]
#[ignore = "all 15 paper instances: about a minute in debug builds"]
fn heuristics_are_valid_on_every_paper_instance() {
    heuristics_valid_on(&[]);
}
