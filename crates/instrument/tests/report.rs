//! `detpath report` plots from a synthetic result directory: valid PNGs,
//! SVGs naming every series.
mod common;

use detpath_instrument::report;
use detpath_instrument::results::ResultDir;

fn synthetic_dir(base: &std::path::Path) -> std::path::PathBuf {
    let mut d = ResultDir::create(base).unwrap();
    // Three datapaths, two configurations; 20,000 rounds so the whiskers
    // are at p0.01/p99.99 and there are outliers; different tails.
    let cases = [("udp", 25_000, 4_000.0, 400_000), ("afxdp", 12_000, 1_500.0, 150_000), ("xdppoll", 9_000, 800.0, 60_000)];
    for (i, (dp, base_ns, spread, spike)) in cases.into_iter().enumerate() {
        for stress in [0u8, 80] {
            let recs = common::records(i as u64 * 7 + stress as u64, 20_000, base_ns, spread * (1.0 + stress as f64 / 40.0), spike, 2_500);
            let run = common::run(dp, stress, false, &recs);
            d.save_run(&run, &recs).unwrap();
        }
    }
    d.path().to_path_buf()
}

#[test]
fn report_writes_valid_png_and_svg() {
    // DETPATH_REPORT_KEEP=/some/dir keeps the result directory and the figures for a look.
    let tmp = tempfile::tempdir().unwrap();
    let base: std::path::PathBuf = std::env::var_os("DETPATH_REPORT_KEEP").map(Into::into).unwrap_or_else(|| tmp.path().into());
    let dir = synthetic_dir(&base.join("results"));
    let runs = report::load_dirs(std::slice::from_ref(&dir)).unwrap();
    assert_eq!(runs.len(), 6);
    let out = base.join("plots");
    let files = report::render(&runs, &out).unwrap();
    assert_eq!(files.len(), 6);
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        let name = f.file_name().unwrap().to_str().unwrap();
        if name.ends_with(".png") {
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{name} is a PNG");
            assert!(bytes.len() > 20_000, "{name}: {} bytes", bytes.len());
            let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
            let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
            assert!(w >= 1000 && h >= 400, "{name}: {w}x{h}");
        } else {
            let s = String::from_utf8(bytes).unwrap();
            assert!(s.starts_with("<svg"), "{name}");
            for dp in ["udp", "afxdp", "xdppoll"] {
                assert!(s.contains(dp) || s.contains(&detpath_instrument::table::display_name(dp)), "{name} names {dp}");
            }
        }
    }
    let boxplot = std::fs::read_to_string(out.join("boxplot.svg")).unwrap();
    for l in ["UDP socket", "AF_XDP", "XDP poll", "D = Default", "D&amp;S = Default &amp; Stress", "µs"] {
        assert!(boxplot.contains(l), "boxplot.svg lacks {l}");
    }
    let ccdf = std::fs::read_to_string(out.join("ccdf.svg")).unwrap();
    for l in ["udp D", "afxdp D&amp;S", "xdppoll D&amp;S", "P(latency &gt; x)"] {
        assert!(ccdf.contains(l), "ccdf.svg lacks {l}");
    }
    // The tables of the same runs.
    let t = report::tables(&runs);
    assert!(t.contains("XDP poll") && t.contains("Jitter"));
}

#[test]
fn duplicate_labels_across_dirs_are_made_unique() {
    let base = tempfile::tempdir().unwrap();
    let a = ResultDir::create_named(base.path(), "a").unwrap();
    let b = ResultDir::create_named(base.path(), "b").unwrap();
    for mut d in [a, b] {
        let recs = common::records(9, 300, 10_000, 100.0, 0, 0);
        d.save_run(&common::run("udp", 0, false, &recs), &recs).unwrap();
    }
    let runs = report::load_dirs(&[base.path().join("a"), base.path().join("b")]).unwrap();
    assert_eq!(runs[0].label, "udp D (a/udp-default)");
    assert_eq!(runs[1].label, "udp D (b/udp-default)");
    // Few samples: every round is a dot in the timeline, whiskers at min/max.
    report::render(&runs, &base.path().join("out")).unwrap();
}

#[test]
fn nothing_to_plot_is_an_error() {
    let base = tempfile::tempdir().unwrap();
    let mut d = ResultDir::create(base.path()).unwrap();
    let recs = common::records(9, 10, 10_000, 100.0, 0, 0);
    d.save_run(&common::run("sockperf", 0, false, &recs), &[]).unwrap();
    let runs = report::load_dirs(&[d.path().to_path_buf()]).unwrap();
    let err = report::render(&runs, &base.path().join("out")).unwrap_err();
    assert!(err.to_string().contains("nothing to plot"));
}

#[test]
fn the_timeline_marks_the_tail_threshold_and_each_gap_by_cause() {
    use detpath_instrument::tail::{Cause, GapReport, TailReport};
    let tmp = tempfile::tempdir().unwrap();
    let mut d = ResultDir::create(&tmp.path().join("results")).unwrap();
    let recs = common::records(3, 2_000, 20_000, 2_000.0, 900_000, 400);
    let mut run = common::run("afxdp", 0, false, &recs);
    let gap = |at_ms: f64, cause| GapReport { thread: "server".into(), at_ms, len_us: 800.0, cause };
    run.tail = Some(TailReport {
        threshold_us: 200.0,
        rounds: 5,
        descheduled: 3,
        steal: 2,
        // One gap in the warm-up (negative time): not on the timeline.
        largest_gaps: vec![gap(10.0, Cause::Descheduled), gap(20.0, Cause::Steal), gap(30.0, Cause::Descheduled), gap(-5.0, Cause::Interrupt)],
        ..TailReport::default()
    });
    d.save_run(&run, &recs).unwrap();
    let runs = report::load_dirs(&[d.path().to_path_buf()]).unwrap();
    report::render(&runs, &tmp.path().join("plots")).unwrap();
    let svg = std::fs::read_to_string(tmp.path().join("plots/timeline.svg")).unwrap();
    assert!(svg.contains("tail threshold 200.0 µs"), "threshold line labelled");
    assert_eq!(svg.matches("gap: thread descheduled").count(), 1, "one legend entry per cause");
    assert!(svg.contains("gap: hypervisor steal"));
    assert!(!svg.contains("gap: interrupt"), "a warm-up gap is not drawn");
}
