//! The page of `detpath classify bench --json` output: the cells as the
//! terminal's table (rates in Mpps), each figure read from the file; the
//! environment and machine records when the file has them.

use detpath_instrument::html::env;
use detpath_instrument::html::page::{Cell, Page, Table};
use serde_json::Value;

/// The cells of a classify bench document: the document itself (older
/// files: a list of cells) or its `cells`.
pub fn cells(doc: &Value) -> Option<(&Vec<Value>, &'static str)> {
    let (cells, base) = match doc {
        Value::Array(a) => (a, ""),
        Value::Object(o) => (o.get("cells")?.as_array()?, "/cells"),
        _ => return None,
    };
    let is_cell = |c: &Value| c.get("program").is_some() && c.get("pps").is_some() && c.get("encap").is_some();
    (!cells.is_empty() && cells.iter().all(is_cell)).then_some((cells, base))
}

fn mpps(v: &Value) -> String {
    format!("{:.3}", v.as_f64().unwrap_or(f64::NAN) / 1e6)
}

fn whole(v: &Value) -> String {
    format!("{:.0}", v.as_f64().unwrap_or(f64::NAN))
}

fn two(v: &Value) -> String {
    format!("{:.2}", v.as_f64().unwrap_or(f64::NAN))
}

/// One file's sections on the page (`n`: its place, for unique ids).
pub fn section(page: &mut Page, n: usize, file: &str, doc: &Value) {
    page.section(&format!("classify-{n}"), &format!("classify bench: {file}"));
    page.text("Environment");
    env::environment(page, &format!("env-{n}"), file, "/environment", doc.get("environment").unwrap_or(&Value::Null));
    if let Some(m) = doc.get("machine") {
        page.text("Machine");
        env::environment(page, &format!("machine-{n}"), file, "/machine", m);
    }
    let Some((cells, base)) = cells(doc) else { return };
    let head = [
        "program", "rules", "encap", "size", "cpus", "verdict", "offered", "recv", "dropped", "passed", "fwd", "lost", "cpu%", "si%", "ns/frame", "anchor",
        "ratio", "q1-q3", "r_drop",
    ];
    let mut t =
        Table::new(&format!("classify-table-{n}"), "Frames per second in Mpps; ratio = classifier / the no-op anchor of the same verdict, same cell", &head);
    for (i, c) in cells.iter().enumerate() {
        let p = |f: &str| format!("{base}/{i}/{f}");
        let s = |f: &str| Cell::text(c.get(f).map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())).unwrap_or_default());
        let mut row = vec![s("program")];
        row.push(Cell::figure(file, doc, &p("rules"), |v| v.to_string(), "-"));
        row.push(s("encap"));
        for f in ["size", "cpus"] {
            row.push(Cell::figure(file, doc, &p(f), |v| v.to_string(), "-"));
        }
        row.push(s("verdict"));
        for f in ["offered_pps", "pps", "dropped_pps", "passed_pps", "forwarded_pps", "lost_pps"] {
            row.push(Cell::figure(file, doc, &p(f), mpps, "-"));
        }
        row.push(Cell::figure(file, doc, &p("cpu_pct"), whole, "-"));
        row.push(Cell::figure(file, doc, &p("softirq_pct"), whole, "-"));
        row.push(Cell::figure(file, doc, &p("ns_per_frame"), |v| v.to_string(), "-"));
        row.push(Cell::text(c.get("anchor").and_then(Value::as_str).unwrap_or("").to_string()));
        row.push(Cell::figure(file, doc, &p("ratio_to_noop"), two, ""));
        row.push(Cell::text(c.get("ratio_quartiles").and_then(Value::as_array).map(|q| q.iter().map(two).collect::<Vec<_>>().join("-")).unwrap_or_default()));
        row.push(Cell::figure(file, doc, &p("ratio_to_noop_drop"), two, ""));
        t.rows.push(row);
    }
    t.notes.push(
        "recv = frames the program ran on; anchors: noop counts and drops, noop_pass counts and passes to the stack; q1-q3 = the quartiles of the rounds' ratios; r_drop = classifier recv / noop recv."
            .into(),
    );
    page.table(&t);
}
