//! The book (docs/book, built by docs/build.sh) as a reader meets it:
//!
//! - it builds offline with every internal link and anchor resolved (Sphinx
//!   `-W -n`, then docs/check_links.py over the built HTML), and build.sh's
//!   last line is the path of its index.html;
//! - every fenced code block of the book and of the files it includes is
//!   either checked here or marked illustrative: a `<!-- checked: cli -->`
//!   block's every `detpath ...` line must name a real (sub)command, and every
//!   `--option` on it must be in that command's `--help`; a
//!   `<!-- illustrative: why -->` block is not run. `text` and `console`
//!   fences are output or transcripts, and directives (`{include}`,
//!   `{toctree}`) are the book's structure.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_detpath");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The book's own pages and the root files it includes.
fn sources() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let root = repo();
    let mut out = vec![root.join("ARCHITECTURE.md"), root.join("docs/classify.md"), root.join("docs/dpdk.md")];
    walk(&root.join("docs/book"), &mut out);
    out
}

/// A fenced block: its info string, body, the marker comment just above it, its line.
struct Block {
    lang: String,
    body: String,
    marker: Option<String>,
    line: usize,
}

fn blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim_start();
        if let Some(info) = l.strip_prefix("```") {
            let start = i;
            let mut body = Vec::new();
            i += 1;
            while i < lines.len() && !lines[i].trim_start().starts_with("```") {
                body.push(lines[i]);
                i += 1;
            }
            // The marker is the nearest non-blank line above the fence, when it is a comment.
            let marker = lines[..start].iter().rev().find(|l| !l.trim().is_empty()).filter(|l| l.trim_start().starts_with("<!--")).map(|l| l.trim().to_string());
            out.push(Block { lang: info.trim().to_string(), body: body.join("\n"), marker, line: start + 1 });
        }
        i += 1;
    }
    out
}

#[test]
fn every_code_block_is_checked_or_marked_illustrative() {
    let mut bad = Vec::new();
    let mut checked = 0;
    for p in sources() {
        let text = std::fs::read_to_string(&p).unwrap();
        for b in blocks(&text) {
            let output_or_structure = b.lang.is_empty() || b.lang == "text" || b.lang == "console" || b.lang.starts_with('{');
            let marked = b.marker.as_deref().is_some_and(|m| m.contains("checked: cli") || m.contains("illustrative:"));
            if b.marker.as_deref().is_some_and(|m| m.contains("checked: cli")) {
                checked += 1;
            }
            if !output_or_structure && !marked {
                bad.push(format!("{}:{}: a ```{} block that is neither `<!-- checked: cli -->` nor `<!-- illustrative: why -->`", p.display(), b.line, b.lang));
            }
        }
    }
    assert!(checked >= 8, "only {checked} checked blocks: the markers moved?");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// `detpath <path...> --help`, cached.
fn help(cache: &mut HashMap<Vec<String>, Option<String>>, path: &[String]) -> Option<String> {
    cache
        .entry(path.to_vec())
        .or_insert_with(|| {
            let out = Command::new(BIN).args(path).arg("--help").output().expect("run detpath");
            out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
        })
        .clone()
}

/// The subcommand names a help text lists under "Commands:".
fn subcommands(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for l in help.lines() {
        if l.starts_with("Commands:") {
            inside = true;
            continue;
        }
        if inside {
            if !l.starts_with("  ") {
                break;
            }
            if let Some(w) = l.split_whitespace().next() {
                out.push(w.to_string());
            }
        }
    }
    out
}

/// Problems of one `detpath ...` command line (with its continuation lines) of a checked block.
fn check_command(cache: &mut HashMap<Vec<String>, Option<String>>, line: &str) -> Vec<String> {
    let code = line.split(" #").next().unwrap_or(line);
    let words: Vec<&str> = code.split_whitespace().skip(1).collect();
    // The command path: leading words that are subcommands (`a|b` alternatives each checked).
    let mut paths: Vec<Vec<String>> = vec![vec![]];
    let mut errs = Vec::new();
    for w in &words {
        let alts: Vec<&str> = w.split('|').collect();
        let first = &paths[0];
        let Some(h) = help(cache, first) else {
            errs.push(format!("`detpath {} --help` fails", first.join(" ")));
            return errs;
        };
        let subs = subcommands(&h);
        if !alts.iter().all(|a| subs.iter().any(|s| s == a)) {
            break;
        }
        paths = paths.iter().flat_map(|p| alts.iter().map(move |a| [p.clone(), vec![a.to_string()]].concat())).collect();
    }
    let flags: Vec<String> = words
        .iter()
        .flat_map(|w| w.split(['[', ']', '|', '=']))
        .filter(|t| t.starts_with("--") && t.len() > 2)
        .map(|t| t.trim_end_matches([',', '.']).to_string())
        .collect();
    for p in &paths {
        let Some(h) = help(cache, p) else {
            errs.push(format!("`detpath {} --help` fails: no such command", p.join(" ")));
            continue;
        };
        for f in &flags {
            let listed = h.lines().any(|l| l.split([' ', ',', '=', '<', '[']).any(|t| t == f));
            if !listed {
                errs.push(format!("`detpath {}` has no option {f}", p.join(" ")));
            }
        }
    }
    errs
}

#[test]
fn checked_blocks_name_real_commands_and_options() {
    let mut cache = HashMap::new();
    let mut bad = Vec::new();
    let mut lines = 0;
    for p in sources() {
        let text = std::fs::read_to_string(&p).unwrap();
        for b in blocks(&text).into_iter().filter(|b| b.marker.as_deref().is_some_and(|m| m.contains("checked: cli"))) {
            // Join continuation lines (indented, no `detpath` of their own) to their command.
            let mut cmds: Vec<String> = Vec::new();
            for l in b.body.lines() {
                if l.trim_start().starts_with("detpath ") && !l.starts_with(' ') {
                    cmds.push(l.to_string());
                } else if let Some(last) = cmds.last_mut() {
                    if !l.trim_start().starts_with('#') {
                        last.push(' ');
                        last.push_str(l.split(" #").next().unwrap_or(""));
                    }
                }
            }
            for c in cmds {
                lines += 1;
                for e in check_command(&mut cache, &c) {
                    bad.push(format!("{}:{}: {e}\n    {c}", p.display(), b.line));
                }
            }
        }
    }
    assert!(lines >= 30, "only {lines} command lines checked");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn the_command_check_catches_a_wrong_command_and_a_wrong_option() {
    let mut cache = HashMap::new();
    assert!(check_command(&mut cache, "detpath bench --rounds 10 --matrix").is_empty());
    assert!(!check_command(&mut cache, "detpath bench --no-such-option").is_empty());
    assert!(check_command(&mut cache, "detpath tune audit|apply --json").is_empty());
    assert!(!check_command(&mut cache, "detpath tune apply|revert --save cell.json").is_empty(), "revert has no --save");
    assert!(!check_command(&mut cache, "detpath nosuchcommand --json").is_empty() || help(&mut cache, &["nosuchcommand".to_string()]).is_none());
}

#[test]
fn the_book_builds_offline_with_every_link_and_anchor_resolved() {
    let root = repo();
    let have = |c: &str| Command::new("sh").args(["-c", c]).status().is_ok_and(|s| s.success());
    let sphinx = have("command -v sphinx-build >/dev/null && /usr/bin/python3 -c 'import myst_parser' 2>/dev/null");
    if !detpath_testkit::need("the_book_builds_offline_with_every_link_and_anchor_resolved", "Sphinx and MyST", sphinx, "apt-get install -y python3-sphinx python3-myst-parser groff-base (deps/apt-docs.txt; make deps)") {
        return;
    }
    if !detpath_testkit::need_tool("the_book_builds_offline_with_every_link_and_anchor_resolved", "groff", "groff-base") {
        return;
    }
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("book");
    let out = Command::new("bash")
        .arg(root.join("docs/build.sh"))
        .env("DETPATH_BIN", BIN)
        .env("DETPATH_BOOK_OUT", &out_dir)
        .output()
        .expect("bash docs/build.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "docs/build.sh failed ({:?}):\n{stderr}\n{stdout}", out.status);
    let last = stdout.lines().last().unwrap_or_default();
    assert!(last.ends_with("/index.html") && Path::new(last).is_file(), "build.sh's last line is not the book's index.html: {last:?}");
    assert!(stderr.contains("none broken"), "the link check did not run:\n{stderr}");
    let html = |p: &str| std::fs::read_to_string(out_dir.join("html").join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
    // Generated from the binary: a command the CLI has, a key a datapath takes, a metric it serves.
    assert!(html("reference/commands.html").contains("detpath-bench-server"), "the command reference lacks bench server");
    assert!(html("reference/spec-keys.html").contains("zerocopy"), "the spec keys lack afxdp's zerocopy");
    assert!(html("reference/metrics.html").contains("detpath_endpoint_rx_packets"), "the metrics page lacks the endpoint counters");
    assert!(html("results/paper000.html").contains("2026-11-22-matrix-1M.txt"), "the results page lost its sources");
}

/// The keys a datapath takes, as the binary lists them when a spec names one it does not.
fn binary_keys(datapath: &str) -> Vec<String> {
    let out = Command::new(BIN).args(["echo", &format!("{datapath}://lo?port=9&detpath_docs_probe=1")]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let list = err.split("it takes: ").nth(1).unwrap_or_else(|| panic!("no key list for {datapath}: {err}"));
    list.lines().next().unwrap().split(',').map(|k| k.trim().to_string()).collect()
}

#[test]
fn the_datagram_chapter_names_exactly_the_keys_each_datapath_takes() {
    // The chapter's table says what each key's values are; the binary is the truth of which keys exist.
    let text = std::fs::read_to_string(repo().join("docs/book/jobs/datagrams.md")).unwrap();
    let common = ["iface", "addr", "port"];
    for dp in ["udp", "xdppoll", "afxdp", "dpdk"] {
        let row = text.lines().find(|l| l.starts_with(&format!("| `{dp}` | `"))).unwrap_or_else(|| panic!("datagrams.md has no key row for {dp}"));
        // `\|` is a pipe inside a cell (`mode=auto\|native`), not a column.
        let row = row.replace("\\|", "/");
        let cell = row.split('|').nth(2).unwrap();
        // Parenthesised notes mention values (`shared`), not keys.
        let mut depth = 0;
        let cell: String = cell
            .chars()
            .filter(|c| {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => return depth == 0,
                }
                false
            })
            .collect();
        // A key is a backticked word, or the word before `=` in a backticked `key=values`.
        let mut named: Vec<String> = cell
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|t| t.split('=').next().unwrap().to_string())
            .filter(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
            .collect();
        named.sort();
        named.dedup();
        let mut takes: Vec<String> = binary_keys(dp).into_iter().filter(|k| !common.contains(&k.as_str())).collect();
        takes.sort();
        assert_eq!(named, takes, "docs/book/jobs/datagrams.md's row for {dp} against the keys the binary takes");
    }
}

#[test]
fn the_bindings_chapter_shows_the_readme_blocks_that_are_run() {
    // Its C and Python blocks are marked illustrative because the README's copies are the ones
    // run (readme_examples.rs, test_readme.py): they must stay the same text.
    let book = std::fs::read_to_string(repo().join("docs/book/jobs/bindings.md")).unwrap();
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    for lang in ["c", "python"] {
        let pick = |text: &str| blocks(text).into_iter().find(|b| b.lang == lang).map(|b| b.body).unwrap_or_else(|| panic!("no {lang} block"));
        assert_eq!(pick(&book), pick(&readme), "docs/book/jobs/bindings.md's {lang} block differs from README.md's (the one a test runs)");
    }
}
