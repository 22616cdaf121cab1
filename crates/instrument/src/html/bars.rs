//! The tail-cause figure of the page: one horizontal bar per run, split by
//! cause in the timeline's colours, as SVG written directly (a few
//! rectangles need no plotting library).

use super::page::esc;
use crate::report::{cause_color, LoadedRun};
use crate::tail::{Cause, TailReport};
use std::fmt::Write as _;

/// Each cause's count in a tail report, in the order the terminal lists them.
fn parts(t: &TailReport) -> [(Cause, u64); 9] {
    [
        (Cause::ClientLate, t.client_late),
        (Cause::ServerSlow, t.server_slow),
        (Cause::Descheduled, t.descheduled),
        (Cause::Interrupt, t.interrupt),
        (Cause::Steal, t.steal),
        (Cause::KernelTime, t.kernel),
        (Cause::DeferredSoftirq, t.ksoftirqd),
        (Cause::KernelTraced, t.kernel_traced.values().sum()),
        (Cause::Unexplained, t.unexplained),
    ]
}

/// The figure: runs with a tail report, each bar the run's slow rounds (100%).
pub fn tail_causes(runs: &[LoadedRun]) -> String {
    let with: Vec<(&LoadedRun, &TailReport)> = runs.iter().filter_map(|r| r.run.tail.as_ref().map(|t| (r, t))).collect();
    let (label_w, bar_w, row_h) = (260.0, 760.0, 34.0);
    let legend_y = 20.0 + row_h * with.len() as f64 + 16.0;
    let causes = {
        let mut c: Vec<Cause> = Vec::new();
        for (cause, _) in with.iter().flat_map(|(_, t)| parts(t)).filter(|p| p.1 > 0) {
            if !c.contains(&cause) {
                c.push(cause);
            }
        }
        c.len().max(1)
    };
    let (w, h) = (label_w + bar_w + 120.0, legend_y + 26.0 * causes.div_ceil(3) as f64 + 8.0);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"14\">\
<rect width=\"{w}\" height=\"{h}\" fill=\"white\"/>"
    );
    let mut used: Vec<Cause> = Vec::new();
    for (k, (r, t)) in with.iter().enumerate() {
        let y = 20.0 + row_h * k as f64;
        let _ = write!(s, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", label_w - 10.0, y + row_h * 0.6, esc(&r.label));
        let total: u64 = parts(t).iter().map(|p| p.1).sum();
        let mut x = label_w;
        for (cause, n) in parts(t) {
            if n == 0 || total == 0 {
                continue;
            }
            let width = bar_w * n as f64 / total as f64;
            let c = cause_color(cause);
            let _ = write!(
                s,
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{width:.1}\" height=\"{:.1}\" fill=\"rgb({},{},{})\"><title>{}: {n} of {total}</title></rect>",
                y + 4.0,
                row_h - 8.0,
                c.0,
                c.1,
                c.2,
                esc(cause.describe())
            );
            x += width;
            if !used.contains(&cause) {
                used.push(cause);
            }
        }
        let _ = write!(s, "<text x=\"{}\" y=\"{}\">{} slow</text>", label_w + bar_w + 8.0, y + row_h * 0.6, total);
    }
    for (k, cause) in used.iter().enumerate() {
        let (col, row) = (k % 3, k / 3);
        let (x, y) = (label_w + col as f64 * 260.0, legend_y + row as f64 * 26.0);
        let c = cause_color(*cause);
        let _ = write!(
            s,
            "<rect x=\"{x}\" y=\"{}\" width=\"16\" height=\"16\" fill=\"rgb({},{},{})\"/><text x=\"{}\" y=\"{}\">{}</text>",
            y - 12.0,
            c.0,
            c.1,
            c.2,
            x + 22.0,
            y + 1.0,
            esc(cause.describe())
        );
    }
    s.push_str("</svg>");
    s
}
