use offcert::exact::{milp, Limits, Status};
use offcert::io::load_instance;
use std::path::Path;

#[test]
fn scratch() {
    for f in ["/tmp/w3.json", "/tmp/a3.json"] {
        let (_, inst) = load_instance(Path::new(f)).unwrap();
        let o = milp::solve(&inst, &Limits::default()).unwrap();
        eprintln!("{f}: {:?} {:?} {:?}", o.status, o.bound, o.notes);
        if let Some(s) = &o.schedule {
            eprintln!(
                "{}",
                serde_json::to_string(&offcert::schedule::ScheduleFile::from_schedule(s, &inst))
                    .unwrap()
            );
        }
    }
}
