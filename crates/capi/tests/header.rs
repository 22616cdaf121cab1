//! include/detpath.h is what cbindgen makes of src/lib.rs today. Set
//! DETPATH_BLESS=1 to rewrite it after changing the ABI.

use std::path::Path;

#[test]
fn committed_header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("reading cbindgen.toml");
    let bindings = cbindgen::Builder::new().with_crate(dir).with_config(config).generate().expect("cbindgen could not generate the header");
    let mut fresh = Vec::new();
    bindings.write(&mut fresh);
    let fresh = String::from_utf8(fresh).expect("the header is UTF-8");
    let path = dir.join("include/detpath.h");
    if std::env::var_os("DETPATH_BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("writing include/detpath.h");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "include/detpath.h is out of date with src/lib.rs: run `DETPATH_BLESS=1 cargo test -p detpath-capi --test header` and commit it"
    );
}

/// `struct detpath_counters` in the header lists detpath's counters table,
/// name for name, in table order (the library copies the table's values
/// into it as an array, so an order or a name out of step would misreport).
#[test]
fn counters_struct_follows_the_table() {
    let header = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("include/detpath.h")).unwrap();
    let body = header.split("struct detpath_counters {").nth(1).expect("struct detpath_counters in the header").split("};").next().unwrap();
    let fields: Vec<&str> =
        body.lines().map(str::trim).filter(|l| l.starts_with("uint64_t ")).map(|l| l.trim_start_matches("uint64_t ").trim_end_matches(';')).collect();
    let table: Vec<&str> = dp::Counters::FIELDS.iter().map(|f| f.name).collect();
    assert_eq!(fields, table, "struct detpath_counters and detpath::Counters::FIELDS");
}
