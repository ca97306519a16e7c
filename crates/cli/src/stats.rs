//! `--stats`' text: the driver's table with, for TPC-B, TPC-C and TPC-E, the column of
//! "From A to E"'s Table 4 beside it (transcribed in `lab`'s `papers/a-to-e.toml`).

/// The paper's column for this workload: (row label, value as printed).
pub fn paper_column(workload: &str) -> Option<Vec<(String, String)>> {
    let col = match workload {
        "tpcb" => "TPC-B",
        "tpcc" => "TPC-C",
        "tpce" => "TPC-E",
        _ => return None,
    };
    let paper = lab::reproduce::load_paper("a-to-e").expect("the transcribed papers parse");
    let t = paper.table.iter().find(|t| t.id == "table4")?;
    let i = t.columns.iter().position(|c| c == col)?;
    Some(
        t.rows
            .iter()
            .map(|r| (r.name.clone(), r.values[i].clone()))
            .collect(),
    )
}

pub fn text(s: &driver::stats::StatsReport, workload: &str) -> String {
    let paper = paper_column(workload);
    let extra: Vec<(String, Vec<(String, String)>)> = paper
        .iter()
        .map(|c| ("A-to-E".to_string(), c.clone()))
        .collect();
    let mut o = s.to_text(&extra);
    if let Some(c) = paper {
        let get = |k: &str| {
            c.iter()
                .find(|(l, _)| l == k)
                .map_or("?", |(_, v)| v.as_str())
                .to_string()
        };
        o += &format!(
            "  A-to-E Table 4 (Shore-MT, scale 1, all tables): records {}, heap pages {}, index pages {}\n",
            get("records (database)"),
            get("heap pages (database)"),
            get("index pages (database)")
        );
        o += "  (the A-to-E column: Shore-MT with one worker thread, as printed in the paper's Table 4)\n";
    }
    o
}
