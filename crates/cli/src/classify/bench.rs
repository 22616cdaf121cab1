//! `detpath classify bench`: the XDP classifier against a no-op XDP program on
//! one veth, in the same run, at paper 004's frame sizes, rule counts,
//! encapsulations and receive CPUs (see `detpath_classify::bench`).
//!
//! ```text
//! detpath classify bench [--duration 1s] [--json] [--sizes 132,1500] [--rules 0,16] [--encap udp,gtpu] [--cpus 1,2]
//! ```

use anyhow::{bail, Context};
use detpath_classify::bench::{self, Anchor, BenchOptions, Encap};
use detpath_classify::server;
use std::time::Duration;

/// Arguments of `detpath classify bench`: the time per cell and the grid of
/// frame sizes, rule counts, encapsulations and receive CPUs it measures.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// Generator time per cell, e.g. `1s`, `50ms` (a bare number is seconds;
    /// 216 cells with the defaults: two no-op anchors and the classifier's 4 rule counts per encapsulation, size and CPU count).
    #[arg(long, value_name = "DURATION", value_parser = crate::vocab::secs, default_value = "1s")]
    duration: Duration,
    /// Print the run as one JSON document (one object: environment, machine, cells) instead of a table.
    #[arg(long)]
    json: bool,
    /// Frame sizes in bytes (default: paper 004's Table 1).
    #[arg(long, value_delimiter = ',', default_values_t = bench::SIZES)]
    sizes: Vec<usize>,
    /// Rule counts of the classifier's cells.
    #[arg(long, value_delimiter = ',', default_values_t = bench::RULE_COUNTS)]
    rules: Vec<u32>,
    /// Encapsulations: udp, vxlan, gtpu; and, on request, udp_dscp (IPv4/UDP
    /// marked EF against rules by class: DSCP and port, as class intents are).
    #[arg(long, value_delimiter = ',', default_value = "udp,vxlan,gtpu")]
    encap: Vec<String>,
    /// Receive CPU counts (more than the machine has are skipped, and said so).
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    cpus: Vec<usize>,
    /// BPF_PROG_TEST_RUN repetitions per program and frame for ns/frame.
    #[arg(long, default_value_t = 200_000)]
    test_run_repeat: u32,
    /// Another build of bpf/classify.bpf.c (clang -O2 -target bpf ...) to
    /// measure instead of the built-in program, anchors included: to compare
    /// a change of the program without rebuilding detpath.
    #[arg(long, value_name = "FILE")]
    object: Option<std::path::PathBuf>,
}

/// Checks the arguments, measures every cell of the grid and prints the cells
/// (table or JSON); returns 0 when every cell ran (errors are exit code 2, by `main`).
pub fn run(a: BenchArgs) -> anyhow::Result<i32> {
    if a.duration.is_zero() || a.duration > Duration::from_secs(3600) {
        bail!("--duration {:?}: per cell, more than 0 and at most 3600s (50ms for a quick run)", a.duration);
    }
    let encaps = a
        .encap
        .iter()
        .map(|e| match e.trim() {
            "udp" => Ok(Encap::Udp),
            "vxlan" => Ok(Encap::Vxlan),
            "gtpu" | "gtp" => Ok(Encap::Gtpu),
            "udp_dscp" | "udp-dscp" => Ok(Encap::UdpDscp),
            other => bail!("--encap `{other}`: udp, vxlan, gtpu or udp_dscp"),
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let o = BenchOptions {
        duration: a.duration,
        sizes: a.sizes,
        rules: a.rules,
        encaps,
        cpus: a.cpus,
        test_run_repeat: a.test_run_repeat,
        object: a.object.as_ref().map(|p| std::fs::read(p).with_context(|| format!("--object {}", p.display()))).transpose()?,
        stop: server::stop_on_signal(),
    };
    let json = a.json;
    let r = bench::run(&o, &mut |c| {
        eprintln!(
            "{} rules={} {} {} B cpus={}: {:.3} Mpps{}",
            c.program,
            c.rules,
            c.encap.name(),
            c.size,
            c.cpus,
            c.pps / 1e6,
            match (c.ratio_to_noop, c.anchor, c.ratio_to_noop_drop) {
                (Some(r), Some(Anchor::Pass), Some(d)) => format!(" ({r:.2}x the passing no-op; {d:.2}x the dropping one)"),
                (Some(r), Some(Anchor::Pass), None) => format!(" ({r:.2}x the passing no-op)"),
                (Some(r), _, _) => format!(" ({r:.2}x the dropping no-op)"),
                _ => String::new(),
            }
        )
    })?;
    if json {
        println!("{}", serde_json::to_string(&r.json())?);
    } else {
        print!("{}", bench::table(&r));
    }
    Ok(0)
}
