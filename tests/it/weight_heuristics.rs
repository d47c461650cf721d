//! Every weight heuristic returns a schedule the checker accepts, on random small
//! chains and on hand-made corner cases.

use crate::common;

use common::{qc, SmallChain};
use offcert::heuristic::{run, weight, HeuristicError};

/// quickcheck's default number of cases (100), none discarded.
#[test]
fn every_heuristic_schedule_is_valid() {
    qc(100, 100).quickcheck(valid as fn(SmallChain) -> bool);
}

fn valid(c: SmallChain) -> bool {
    let file = c.file();
    let inst = file.compile().expect("random chains compile");
    for h in weight::heuristics() {
        match run(h.as_ref(), &file, &inst) {
            Ok(r) => assert!(r.checked.report().valid),
            Err(HeuristicError::Invalid {
                first, rejected, ..
            }) => {
                panic!(
                    "{} on {:?}: {first}\n{:?}",
                    h.name(),
                    c.0,
                    rejected.violations()
                )
            }
            Err(e) => panic!(
                "{} found no schedule for a feasible chain {:?}: {e}",
                h.name(),
                c.0
            ),
        }
    }
    true
}
