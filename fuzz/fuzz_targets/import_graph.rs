//! Fuzz the networkx graph importer and the two solution decoders: any input
//! is either imported (and then compiles) or rejected with an error naming a
//! field; never a panic. The input is split at the first NUL byte: a graph,
//! then a solution decoded against it (as Checkmate's and as MOCCASIN's).
#![no_main]
use libfuzzer_sys::fuzz_target;
use offcert::family::graph_import::parse_node_link;
use offcert::family::graph_solution::{checkmate_solution, moccasin_solution};

fuzz_target!(|data: &[u8]| {
    let (graph, solution) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    let (Ok(text), Ok(sol)) = (std::str::from_utf8(graph), std::str::from_utf8(solution)) else {
        return;
    };
    if let Ok(imported) = parse_node_link(text, None) {
        let g = imported.graph;
        let _ = g.compile().expect("an imported graph compiles");
        for d in [checkmate_solution(&g, sol), moccasin_solution(&g, sol)]
            .into_iter()
            .flatten()
        {
            let _ = g.sequence_peak(&d.seq);
        }
    }
});
