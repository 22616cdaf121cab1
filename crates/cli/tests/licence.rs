//! The licence statements agree with each other: every eBPF source's SPDX
//! line names a licence that the string it declares to the kernel
//! (`SEC("license")`) stands for, the BPF headers carry the same expression,
//! the Debian `copyright` file states the same for `bpf/*`, and the rest of
//! the project (LICENSE, Cargo, the Python module) says Apache-2.0.
//!
//! Why it matters: the kernel reads only the string (a GPL-compatible one
//! opens the GPL-only helpers), while people and distributions read the SPDX
//! line; the two used to disagree (Apache-2.0 headers declaring "GPL").

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The SPDX expression on a file's first lines (`// SPDX-License-Identifier: X` or `/* ... */`).
fn spdx_of(text: &str) -> Option<String> {
    text.lines().take(3).find_map(|l| {
        let rest = l.split("SPDX-License-Identifier:").nth(1)?;
        Some(rest.trim().trim_end_matches("*/").trim().to_string())
    })
}

/// The string in `char LICENSE[] SEC("license") = "...";`.
fn kernel_licence_of(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.contains("SEC(\"license\")"))?;
    let value = line.split('=').nth(1)?;
    Some(value.trim().trim_end_matches(';').trim().trim_matches('"').to_string())
}

/// The kernel licence strings that state exactly the licences of an SPDX
/// expression (include/linux/license.h lists what the kernel accepts as GPL-compatible).
fn kernel_strings_for(spdx: &str) -> &'static [&'static str] {
    let terms: Vec<String> = spdx.replace(['(', ')'], " ").split_whitespace().filter(|t| *t != "OR").map(str::to_string).collect();
    let has = |t: &str| terms.iter().any(|x| x == t);
    let gpl2 = has("GPL-2.0-only") || has("GPL-2.0") || has("GPL-2.0-or-later");
    match (gpl2, terms.len()) {
        (true, 1) if has("GPL-2.0-only") => &["GPL v2", "GPL"],
        (true, 1) => &["GPL", "GPL v2"],
        (true, 2) if has("BSD-2-Clause") || has("BSD-3-Clause") => &["Dual BSD/GPL"],
        (true, 2) if has("MIT") => &["Dual MIT/GPL"],
        (true, 2) if has("MPL-1.1") => &["Dual MPL/GPL"],
        _ => &[],
    }
}

/// What is wrong with one BPF program's licence lines, if anything.
fn check_program(name: &str, text: &str) -> Result<String, String> {
    let spdx = spdx_of(text).ok_or_else(|| format!("{name}: no SPDX-License-Identifier line at the top"))?;
    let declared = kernel_licence_of(text).ok_or_else(|| format!("{name}: no `char LICENSE[] SEC(\"license\")` string"))?;
    let ok = kernel_strings_for(&spdx);
    if !ok.contains(&declared.as_str()) {
        return Err(format!("{name}: SPDX `{spdx}` but declares \"{declared}\" to the kernel (expected one of {ok:?})"));
    }
    Ok(spdx)
}

#[test]
fn the_checker_refuses_the_old_mismatch_and_accepts_dual() {
    let old = "// SPDX-License-Identifier: Apache-2.0\nchar LICENSE[] SEC(\"license\") = \"GPL\";\n";
    assert!(check_program("old.bpf.c", old).unwrap_err().contains("Apache-2.0"));
    let lgpl = "// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)\nchar LICENSE[] SEC(\"license\") = \"Dual BSD/GPL\";\n";
    assert!(check_program("lgpl.bpf.c", lgpl).is_err(), "LGPL-2.1 is not what \"Dual BSD/GPL\" says");
    let dual = "/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */\nchar LICENSE[] SEC(\"license\") = \"Dual BSD/GPL\";\n";
    assert_eq!(check_program("dual.bpf.c", dual).unwrap(), "GPL-2.0-only OR BSD-2-Clause");
    assert!(check_program("none.bpf.c", "int x;\n").is_err());
}

#[test]
fn every_bpf_source_declares_what_its_spdx_line_says() {
    let dir = repo().join("bpf");
    let mut programs = Vec::new();
    let mut headers = Vec::new();
    for e in std::fs::read_dir(&dir).expect("bpf/ exists") {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&p).unwrap();
        if name.ends_with(".bpf.c") {
            programs.push((name, text));
        } else if name.ends_with(".h") {
            headers.push((name, text));
        }
    }
    assert!(programs.len() >= 4, "expected the project's BPF programs in {}", dir.display());
    let mut errors = Vec::new();
    let mut exprs = Vec::new();
    for (name, text) in &programs {
        match check_program(name, text) {
            Ok(spdx) => exprs.push(spdx),
            Err(e) => errors.push(e),
        }
    }
    // Headers are compiled into the programs: same licence as them.
    for (name, text) in &headers {
        match spdx_of(text) {
            Some(s) if exprs.first() == Some(&s) => {}
            other => errors.push(format!("{name}: SPDX {other:?}, the programs say {:?}", exprs.first())),
        }
    }
    exprs.dedup();
    if exprs.len() > 1 {
        errors.push(format!("the BPF programs carry different licences: {exprs:?}"));
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));

    // The Debian copyright file says the same for bpf/* (DEP-5 writes `or` for `OR`).
    let copyright = std::fs::read_to_string(repo().join("packaging/debian/copyright")).unwrap();
    let stanza = copyright.split("\n\n").find(|s| s.lines().any(|l| l.trim() == "Files: bpf/*")).expect("a `Files: bpf/*` stanza");
    let licence = stanza.lines().find_map(|l| l.strip_prefix("License: ")).expect("its License: field").trim();
    assert_eq!(licence, exprs[0].replace(" OR ", " or "), "packaging/debian/copyright disagrees with bpf/");
    assert!(copyright.contains(&format!("\nLicense: {licence}\n")), "the copyright file has no text for `{licence}`");
}

#[test]
fn the_rest_is_apache_2_0_everywhere_it_is_stated() {
    let root = repo();
    let licence = std::fs::read_to_string(root.join("LICENSE")).expect("LICENSE at the top");
    assert!(licence.contains("Apache License") && licence.contains("Version 2.0, January 2004"), "LICENSE is the Apache-2.0 text");
    let cargo = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(cargo.contains("license = \"Apache-2.0\""), "workspace licence");
    let py = std::fs::read_to_string(root.join("crates/python/pyproject.toml")).unwrap();
    assert!(py.contains("Apache-2.0"), "the Python module's licence");
    let copyright = std::fs::read_to_string(root.join("packaging/debian/copyright")).unwrap();
    assert!(copyright.starts_with("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"), "DEP-5 header");
    let star = copyright.split("\n\n").find(|s| s.lines().any(|l| l.trim() == "Files: *")).expect("a `Files: *` stanza");
    assert!(star.contains("License: Apache-2.0"), "Files: * is Apache-2.0");
}
