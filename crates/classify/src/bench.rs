//! `detpath classify bench`: the classifier against a no-op XDP program on
//! the same veth, in the same run, at paper 004's frame sizes (its Table 1:
//! 132 to 1,500 B), with 0, 1, 16 and 1,024 rules, plain UDP and VXLAN and
//! GTP-U encapsulated, on 1 and 2 receive CPUs (paper 004's Figures 4 and 5).
//!
//! The testbed: namespaces G and E joined by a veth pair with two queues.
//! The generator is BPF_PROG_RUN in live-frames mode in G (`cls_gen` returns
//! XDP_TX, so every run transmits the frame out of G's veth), one thread per
//! receive CPU, pinned to it. veth hands a frame to the peer's receive queue
//! of the sending CPU (`smp_processor_id() % queues`) and runs that queue's
//! NAPI in the softirq of the same CPU: the generator shares each receive
//! core, and N generator threads give N receive CPUs. On E's veth, natively
//! attached: one of the two no-op anchors (`cls_noop` counts and drops,
//! `cls_noop_pass` counts and passes to E's stack) or the classifier
//! (`cls_main`) with its rules, each its own attachment.
//!
//! Per cell: frames offered (the generator's runs), received by the program,
//! dropped, passed, forwarded by it, lost (offered but never seen: the veth
//! ring was full), the busy and softirq share of the receive CPUs
//! (/proc/stat), and the program's cost per frame without I/O
//! (BPF_PROG_TEST_RUN on CPU 0). The programs of one cell take turns in four
//! slices of its time, so the machine's other load falls on each alike. The classifier's cells say what its rules do
//! with the frame (`verdict`): with rules, the frame's rule drops it; with no
//! rule, the frame is unmatched and passed to E's stack. Each classifier cell
//! is compared with the anchor of the same verdict ([`Anchor`]): a passed
//! frame costs the kernel stack's skb, far more than the whole dropping
//! no-op path, so against the dropping anchor a 0-rule cell would measure
//! the stack, not the classifier. The ratio to the dropping anchor is kept
//! beside it for every classifier cell.
//!
//! Everything (namespaces, XDP attachments, CPU affinity) is undone on drop,
//! and SIGINT/SIGTERM end the run early through [`BenchOptions::stop`].

use crate::error::{Error, Result};
use crate::frames::{build, Layer};
use crate::{parse_intent, Classifier, XdpMode};
use detpath_sys::cputime::{CoreTicks, CoreUse, CpuReport, ThreadCpu, ThreadMeter};
use detpath_sys::xdp::XdpLink;
use serde::Serialize;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Paper 004's frame sizes (Table 1), in bytes of Ethernet frame (no FCS).
pub const SIZES: [usize; 6] = [132, 256, 512, 1024, 1280, 1500];
/// Rule counts of the classifier's cells.
pub const RULE_COUNTS: [u32; 4] = [0, 1, 16, 1024];

/// The encapsulation of a cell's frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Encap {
    /// Ethernet / IPv4 / UDP.
    Udp,
    /// Ethernet / IPv4 / UDP:4789 / VXLAN / Ethernet / IPv4 / UDP.
    Vxlan,
    /// Ethernet / IPv4 / UDP:2152 / GTP-U + PDU session container / IPv4 / UDP.
    Gtpu,
    /// Ethernet / IPv4 marked EF / UDP, with rules by class (DSCP and port):
    /// the receiver's class intents. Not in [`Encap::ALL`]: asked for by name.
    #[serde(rename = "udp_dscp")]
    UdpDscp,
}

impl Encap {
    /// Every encapsulation, in the order the bench runs them.
    pub const ALL: [Encap; 3] = [Encap::Udp, Encap::Vxlan, Encap::Gtpu];

    /// The name in `--encap`, the table and the JSON (`udp`, `vxlan`, `gtpu`, `udp_dscp`).
    pub fn name(self) -> &'static str {
        match self {
            Encap::Udp => "udp",
            Encap::Vxlan => "vxlan",
            Encap::Gtpu => "gtpu",
            Encap::UdpDscp => "udp_dscp",
        }
    }
}

/// A no-op program a classifier cell is compared with: it counts each frame
/// and returns one verdict, so the only difference from the classifier is
/// the classifier's work, not what becomes of the frame after XDP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Anchor {
    /// `cls_noop`: counts, XDP_DROP (the anchor of the cells with rules,
    /// whose rule drops the frame).
    Drop,
    /// `cls_noop_pass`: counts, XDP_PASS to the kernel stack (the anchor of
    /// the 0-rule cells, where the frame is unmatched and passed).
    Pass,
}

impl Anchor {
    /// Both anchors, in the order each cell runs and reports them.
    pub const ALL: [Anchor; 2] = [Anchor::Drop, Anchor::Pass];

    /// The anchor's verdict as the cells and `--json` name it (`drop`, `pass`).
    pub fn name(self) -> &'static str {
        match self {
            Anchor::Drop => "drop",
            Anchor::Pass => "pass",
        }
    }

    /// The anchor's cell `program` (`noop`, `noop_pass`).
    pub(crate) fn cell_program(self) -> &'static str {
        match self {
            Anchor::Drop => "noop",
            Anchor::Pass => "noop_pass",
        }
    }

    /// The BPF program's name in `bpf/classify.bpf.c`.
    pub fn bpf_program(self) -> &'static str {
        match self {
            Anchor::Drop => "cls_noop",
            Anchor::Pass => "cls_noop_pass",
        }
    }

    /// Its slot of the `cls_noop_count` map.
    fn slot(self) -> u32 {
        match self {
            Anchor::Drop => crate::maps::NOOP_DROP,
            Anchor::Pass => crate::maps::NOOP_PASS,
        }
    }

    /// The anchor of an XDP return code: XDP_DROP (1) or XDP_PASS (2); none for the others.
    pub(crate) fn of_xdp_verdict(v: u32) -> Option<Anchor> {
        match v {
            1 => Some(Anchor::Drop),
            2 => Some(Anchor::Pass),
            _ => None,
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Generator time per cell and program (split into slices, see [`run`]).
    pub duration: Duration,
    /// Frame sizes in bytes, Ethernet header included, no FCS (64 to 1514).
    pub sizes: Vec<usize>,
    /// Rule counts of the classifier's cells (at most `maps::MAX_RULES`).
    pub rules: Vec<u32>,
    /// Encapsulations of the cells' frames.
    pub encaps: Vec<Encap>,
    /// Receive CPU counts (1, 2); counts above the online CPUs are skipped, and said so.
    pub cpus: Vec<usize>,
    /// BPF_PROG_TEST_RUN repetitions for `ns_per_frame`.
    pub test_run_repeat: u32,
    /// Another build of `bpf/classify.bpf.c` (its ELF object) to measure
    /// instead of the one built into this crate, anchors included: to compare
    /// a change of the program without rebuilding.
    pub object: Option<Vec<u8>>,
    /// Set to end the run early (the cells done so far are returned).
    pub stop: Arc<AtomicBool>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            duration: Duration::from_secs(1),
            sizes: SIZES.to_vec(),
            rules: RULE_COUNTS.to_vec(),
            encaps: Encap::ALL.to_vec(),
            cpus: vec![1, 2],
            test_run_repeat: 200_000,
            object: None,
            stop: Arc::new(AtomicBool::new(false)),
        }
    }
}

/// One measurement: a program, its rules, a frame, a number of receive CPUs.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// `noop` (the dropping anchor), `noop_pass` (the passing anchor) or `classify`.
    pub program: &'static str,
    /// Rules installed (0 for the anchors).
    pub rules: u32,
    /// The frame's encapsulation.
    pub encap: Encap,
    /// Frame size in bytes.
    pub size: usize,
    /// Receive CPUs (= generator threads, one per CPU, sharing it).
    pub cpus: usize,
    /// What the program does with the cell's frame: `drop` or `pass`.
    pub verdict: &'static str,
    /// Frames/s the program received (what the 0.8x bar compares).
    pub pps: f64,
    /// Frames/s the generator sent.
    pub offered_pps: f64,
    /// Frames/s the program dropped (XDP_DROP).
    pub dropped_pps: f64,
    /// Frames/s passed to E's kernel stack (XDP_PASS).
    pub passed_pps: f64,
    /// Frames/s sent back out to an alternative node (XDP_TX).
    pub forwarded_pps: f64,
    /// Frames/s offered but never seen by the program (the veth ring was full).
    pub lost_pps: f64,
    /// Mean busy share of the receive CPUs in % (the generator's share included).
    pub cpu_pct: f64,
    /// Mean softirq share of the receive CPUs in % (where the receive path runs).
    pub softirq_pct: f64,
    /// The program's mean cost per frame in ns under BPF_PROG_TEST_RUN (no I/O).
    pub ns_per_frame: u64,
    /// CPU accounting of the cell (the shape every benchmark's JSON carries):
    /// the generator threads (one per receive CPU, named `generator`; their
    /// system time includes the receive softirq veth runs on their CPU),
    /// the receive CPUs' busy and steal share, and frames received per
    /// CPU-second of the generator threads.
    pub cpu: CpuReport,
    /// The classifier's pps over the pps of the anchor of its verdict
    /// ([`Cell::anchor`]) in the same cell: the figure the 0.8x bar
    /// compares. The median of the rounds' ratios ([`Cell::ratio_rounds`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_to_noop: Option<f64>,
    /// For the classifier: the ratio in each round (its slice's pps over
    /// the anchor's slice of the same round), in the order they ran.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ratio_rounds: Vec<f64>,
    /// For the classifier: the first and third quartile of `ratio_rounds`,
    /// the spread a cell's ratio has on this machine (a cell whose ratio is
    /// under a bar its third quartile is over is within its own noise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_quartiles: Option<[f64; 2]>,
    /// Each slice's rate (frames/s), in the order the rounds ran: what the
    /// cell's rates and ratios are made of (a slice the host slowed shows).
    pub slices_pps: Vec<f64>,
    /// For the classifier: which anchor `ratio_to_noop` is against, the one
    /// whose verdict is the classifier's for the cell's frame (`drop` with
    /// rules, `pass` with none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anchor: Option<Anchor>,
    /// For the classifier: its pps over the dropping anchor's (`cls_noop`),
    /// whatever its verdict (the one comparison of earlier runs; for a
    /// 0-rule cell it includes the kernel stack's cost); the median of the
    /// rounds' ratios, as `ratio_to_noop`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_to_noop_drop: Option<f64>,
    /// Frames the generator sent over the cell (the rates above are these counts over `seconds`).
    pub frames_offered: u64,
    /// Frames the program ran on.
    pub frames_seen: u64,
    /// Frames it dropped.
    pub frames_dropped: u64,
    /// Frames it passed to the stack (redirect misses and malformed frames included).
    pub frames_passed: u64,
    /// Frames it forwarded (XDP_TX).
    pub frames_forwarded: u64,
    /// Generator time in seconds, summed over the program's slices.
    pub seconds: f64,
}

/// The machine the figures come from.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// Kernel release (`/proc/sys/kernel/osrelease`).
    pub kernel: String,
    /// The first CPU's model name (`/proc/cpuinfo`).
    pub cpu_model: String,
    /// CPUs online when the run started.
    pub online_cpus: usize,
    /// Receive CPU counts asked for but not run (more than the machine has).
    pub skipped_cpus: Vec<usize>,
}

/// The host a run measured on, recorded with its figures so a published
/// number can name its machine (the ping-pong results' `environment` field
/// names, plus `vm` and `load`, the names `detpath report --html` shows).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Environment {
    /// `model name` of /proc/cpuinfo ("unknown" when unreadable).
    pub cpu_model: String,
    /// CPUs online when the run started.
    pub cpus: usize,
    /// Kernel release (`/proc/sys/kernel/osrelease`).
    pub kernel: String,
    /// The host's name (`/proc/sys/kernel/hostname`).
    pub hostname: String,
    /// True when /proc/cpuinfo has the `hypervisor` flag: a guest, whose
    /// host may take its vCPUs (steal) and whose figures vary with the host.
    pub vm: bool,
    /// /proc/loadavg's 1, 5 and 15 minute load averages at the start: a
    /// loaded machine's ratios are not an idle one's.
    pub load: [f64; 3],
    /// UTC, ISO 8601, when the run started.
    pub date: String,
    /// The detpath version that measured.
    pub detpath_version: String,
    /// The command line that made the run, as the process got it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
}

impl Environment {
    /// Reads this host now; never fails (what cannot be read is "unknown" or 0).
    pub(crate) fn capture() -> Environment {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        Environment {
            cpu_model: cpu_model_of(&cpuinfo).unwrap_or_else(|| "unknown".into()),
            cpus: online_cpus(),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()).unwrap_or_else(|_| "unknown".into()),
            hostname: std::fs::read_to_string("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()).unwrap_or_else(|_| "unknown".into()),
            vm: has_hypervisor_flag(&cpuinfo),
            load: load_average_of(&loadavg),
            date: utc_iso8601(secs),
            detpath_version: env!("CARGO_PKG_VERSION").to_string(),
            command: std::env::args().collect(),
        }
    }
}

/// The first `model name` of a /proc/cpuinfo text.
fn cpu_model_of(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim().to_string()).filter(|v| !v.is_empty())
}

/// Whether the first CPU's `flags` line of a /proc/cpuinfo text has `hypervisor`.
fn has_hypervisor_flag(cpuinfo: &str) -> bool {
    cpuinfo.lines().find(|l| l.starts_with("flags")).and_then(|l| l.split_once(':')).is_some_and(|(_, v)| v.split_whitespace().any(|f| f == "hypervisor"))
}

/// The three load averages of a /proc/loadavg text (0 where unreadable).
fn load_average_of(loadavg: &str) -> [f64; 3] {
    let mut out = [0.0; 3];
    for (slot, field) in out.iter_mut().zip(loadavg.split_whitespace()) {
        *slot = field.parse().unwrap_or(0.0);
    }
    out
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian,
/// days to civil date as in Howard Hinnant's algorithm).
fn utc_iso8601(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3_600, rem % 3_600 / 60, rem % 60)
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The host, its load and when: what a published figure names as its machine.
    pub environment: Environment,
    /// Where it ran.
    pub machine: Machine,
    /// Every cell, in run order (per encapsulation, size and CPU count: the
    /// anchors, then the classifier by rule count); what `--json` prints.
    pub cells: Vec<Cell>,
}

fn sh(args: &[&str]) -> Result<()> {
    let out = Command::new(args[0]).args(&args[1..]).output().map_err(|e| Error::io(format!("running {}", args[0]), e))?;
    if !out.status.success() {
        return Err(Error::Config(format!("`{}` failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim())));
    }
    Ok(())
}

/// The two namespaces and their veth pair; removed on drop.
struct Testbed {
    g: String,
    e: String,
    ge: String,
    ee: String,
    /// A veth pair inside G that carries no traffic: the generator program
    /// stays attached to it for the whole run (see [`run`]).
    gk: String,
    names: Vec<String>,
}

impl Testbed {
    fn new(queues: usize) -> Result<Testbed> {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let tag = format!("{}{n}", pid % 100_000);
        let mut t = Testbed {
            g: format!("detpath-clsbench-{pid}-{n}-g"),
            e: format!("detpath-clsbench-{pid}-{n}-e"),
            ge: format!("dcb{tag}g"),
            ee: format!("dcb{tag}e"),
            gk: format!("dcb{tag}k"),
            names: Vec::new(),
        };
        for ns in [t.g.clone(), t.e.clone()] {
            sh(&["ip", "netns", "add", &ns])?;
            t.names.push(ns.clone());
            // No IPv6 (no router solicitations in the counts).
            sh(&["ip", "netns", "exec", &ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"])?;
        }
        let q = queues.max(1).to_string();
        sh(&[
            "ip",
            "-n",
            &t.g,
            "link",
            "add",
            &t.ge,
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
            "type",
            "veth",
            "peer",
            "name",
            &t.ee,
            "netns",
            &t.e,
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
        ])?;
        sh(&["ip", "-n", &t.g, "link", "set", &t.ge, "address", &crate::classifier::format_mac(&GEN_MAC), "up"])?;
        sh(&["ip", "-n", &t.e, "link", "set", &t.ee, "address", &crate::classifier::format_mac(&RECV_MAC), "up"])?;
        let peer = format!("{}p", t.gk);
        sh(&["ip", "-n", &t.g, "link", "add", &t.gk, "type", "veth", "peer", "name", &peer])?;
        sh(&["ip", "-n", &t.g, "link", "set", &t.gk, "up"])?;
        sh(&["ip", "-n", &t.g, "link", "set", &peer, "up"])?;
        Ok(t)
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = sh(&["ip", "netns", "del", n]);
        }
    }
}

const GEN_MAC: [u8; 6] = [0x02, 0x64, 0x63, 0, 2, 0x01];
const RECV_MAC: [u8; 6] = [0x02, 0x64, 0x63, 0, 2, 0x0e];
/// The cell flow's GTP-U TEID and VXLAN VNI, and its innermost destination port.
const FLOW_TEID: u32 = 0x1000;
const FLOW_VNI: u32 = 100;
const FLOW_DPORT: u16 = 5000;
/// The `udp_dscp` cell flow's DSCP (EF, a control topic's by the default priority map).
const FLOW_DSCP: u8 = 46;

/// The cell's frame: `encap`, padded with payload to `size` bytes.
pub fn frame(encap: Encap, size: usize) -> Vec<u8> {
    frame_with(encap, size, 30000)
}

/// The cell's frame with innermost source port `sport` (one inner flow per port).
pub fn frame_with(encap: Encap, size: usize, sport: u16) -> Vec<u8> {
    let outer = [Layer::eth(RECV_MAC, GEN_MAC), Layer::Ip { src: "10.97.0.1".parse().expect("literal"), dst: "10.97.0.2".parse().expect("literal") }];
    let inner_ip = Layer::Ip { src: "172.16.0.1".parse().expect("literal"), dst: "172.17.0.1".parse().expect("literal") };
    let inner_udp = Layer::Udp { sport, dport: FLOW_DPORT };
    let layers: Vec<Layer> = match encap {
        Encap::Udp => [&outer[..], &[Layer::Udp { sport, dport: FLOW_DPORT }]].concat(),
        Encap::UdpDscp => vec![
            outer[0].clone(),
            Layer::IpDscp { src: "10.97.0.1".parse().expect("literal"), dst: "10.97.0.2".parse().expect("literal"), dscp: FLOW_DSCP },
            Layer::Udp { sport, dport: FLOW_DPORT },
        ],
        Encap::Vxlan => [
            &outer[..],
            &[
                Layer::Udp { sport: 40000, dport: 4789 },
                Layer::Vxlan { vni: FLOW_VNI },
                Layer::eth([2, 0, 0, 0, 0, 0xe1], [2, 0, 0, 0, 0, 0x51]),
                inner_ip,
                inner_udp,
            ],
        ]
        .concat(),
        Encap::Gtpu => [
            &outer[..],
            &[Layer::Udp { sport: 2152, dport: 2152 }, Layer::Gtpu { teid: FLOW_TEID, exts: vec![Layer::pdu_session(1)], msg_type: 0xff }, inner_ip, inner_udp],
        ]
        .concat(),
    };
    let head = build(&layers, &[]).len();
    build(&layers, &vec![0u8; size.saturating_sub(head)])
}

/// The intents of a classifier cell: `n` rules; the first matches the cell's
/// frame and drops it, the others (half under a second mask) match other flows
/// and pass. Two masks, so the tuple-space search does two lookups from 2 rules on.
pub fn rules_for(encap: Encap, n: u32) -> Vec<String> {
    (0..n)
        .map(|i| {
            let action = if i == 0 { "DROP" } else { "PASS" };
            let a = i % 2 == 0; // mask A or B
            let res = match (encap, a) {
                // A: destination port; B: destination address and port (another address).
                (Encap::Udp, true) => format!(r#"{{"dstPort": {}, "protocol": "udp"}}"#, FLOW_DPORT as u32 + i),
                (Encap::Udp, false) => format!(r#"{{"dstIP": "10.99.{}.{}", "dstPort": {}, "protocol": "udp"}}"#, i / 256, i % 256, FLOW_DPORT),
                // A: VNI and inner port; B: VNI alone (other VNIs).
                (Encap::Vxlan, true) => {
                    format!(r#"{{"encapsulationType1": "vxlan", "encapsulationID1": {FLOW_VNI}}}, {{"dstPort": {}}}"#, FLOW_DPORT as u32 + i)
                }
                (Encap::Vxlan, false) => format!(r#"{{"encapsulationType1": "vxlan", "encapsulationID1": {}}}"#, FLOW_VNI + 1000 + i),
                // A: TEID; B: TEID and inner port (other TEIDs).
                (Encap::Gtpu, true) => format!(r#"{{"encapsulationType1": "gtp", "encapsulationID1": {}}}"#, FLOW_TEID + i),
                (Encap::Gtpu, false) => format!(r#"{{"encapsulationType1": "gtp", "encapsulationID1": {}}}, {{"dstPort": {FLOW_DPORT}}}"#, FLOW_TEID + i),
                // A: the class (EF) and a port; B: another class (AF41) to another address and the port.
                (Encap::UdpDscp, true) => format!(r#"{{"dscp": {FLOW_DSCP}, "dstPort": {}, "protocol": "udp"}}"#, FLOW_DPORT as u32 + i),
                (Encap::UdpDscp, false) => {
                    format!(r#"{{"dscp": "AF41", "dstIP": "10.99.{}.{}", "dstPort": {}, "protocol": "udp"}}"#, i / 256, i % 256, FLOW_DPORT)
                }
            };
            format!(r#"{{"Resources": [{res}], "Action": {{"actionType": "INSERT", "actionName": "{action}"}}}}"#)
        })
        .collect()
}

/// Pins the calling thread to `cpu`; the previous affinity comes back on drop.
struct Pin(libc::cpu_set_t);

impl Pin {
    fn to(cpu: usize) -> Pin {
        // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity and
        // sched_setaffinity read/write within the set whose size we pass.
        unsafe {
            let mut old: libc::cpu_set_t = std::mem::zeroed();
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut old);
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            Pin(old)
        }
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        // SAFETY: restores the set read in `to`, of the size we pass.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.0);
        }
    }
}

/// (busy, softirq, total) jiffies of one CPU from /proc/stat.
fn cpu_times(cpu: usize) -> (u64, u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let tag = format!("cpu{cpu} ");
    let Some(line) = stat.lines().find(|l| l.starts_with(&tag)) else { return (0, 0, 0) };
    let v: Vec<u64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    (total - idle, v.get(6).copied().unwrap_or(0), total)
}

/// What the receiving program counted: (seen, dropped, passed, forwarded).
type Counts = (u64, u64, u64, u64);

fn classifier_counts(c: &Classifier) -> Counts {
    let t = c.totals();
    let get = |n: &str| crate::maps::total_index(n).and_then(|i| t.get(i)).map(|c| c.packets).unwrap_or(0);
    let dropped = get("drop");
    let forwarded = get("forward");
    let redirected = get("steer") + get("xsk");
    let passed = ["pass_unmatched", "pass_rule", "steer_miss", "xsk_miss", "forward_no_alt", "malformed", "not_ip"].iter().map(|n| get(n)).sum::<u64>();
    (dropped + forwarded + passed + redirected, dropped, passed, forwarded)
}

/// Runs `cpus` generator threads for `secs`, one per CPU 0..cpus, each in namespace G.
fn generate(gen: &Classifier, bed: &Testbed, f: &[u8], cpus: usize, secs: f64, stop: &AtomicBool) -> Result<(u64, f64, Vec<ThreadCpu>)> {
    let ns = detpath_sys::netns::open(&bed.g)?;
    let fd = gen.program_fd("cls_gen")?;
    let t0 = Instant::now();
    let results: Vec<Result<(u64, ThreadCpu)>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..cpus)
            .map(|cpu| {
                let ns = &ns;
                s.spawn(move || -> Result<(u64, ThreadCpu)> {
                    let _pin = Pin::to(cpu);
                    let meter = ThreadMeter::start("generator");
                    let _in = detpath_sys::netns::enter_file(ns, "the generator's namespace")?;
                    let ifindex = detpath_sys::netdev::ifindex(&bed.ge)?;
                    let mut sent = 0u64;
                    // Small batches, so short cells end on time.
                    let batch = 20_000;
                    while t0.elapsed().as_secs_f64() < secs && !stop.load(Ordering::Relaxed) {
                        crate::classifier::live_frames_fd(fd, f, ifindex, batch)?;
                        sent += batch as u64;
                    }
                    Ok((sent, meter.stop()))
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(Error::Config("a generator thread panicked".into())))).collect()
    });
    let el = t0.elapsed().as_secs_f64();
    let mut sent = 0;
    let mut threads = Vec::new();
    for r in results {
        let (n, t) = r?;
        sent += n;
        threads.push(t);
    }
    Ok((sent, el, threads))
}

/// Rounds per cell: in each, every program runs one slice of about this
/// long (at least 4 rounds), the programs taking turns. Short, so a 1 s
/// cell has ten rounds: on a VM the host takes a whole slice now and then,
/// and the median of ten ratios is not moved by one or two such.
const SLICE_S: f64 = 0.1;

fn rounds(secs: f64) -> usize {
    ((secs / SLICE_S).round() as usize).clamp(4, 40)
}

/// The median of per-round ratios (each classifier slice against the
/// anchor slice of the same round): a host preemption that falls on one
/// slice moves one ratio, not the cell's figure.
fn median_ratio(cls: &[f64], anchor: &[f64]) -> (f64, Vec<f64>) {
    let per_round: Vec<f64> = cls.iter().zip(anchor).map(|(c, a)| if *a > 0.0 { c / a } else { 0.0 }).collect();
    let [median] = quantiles(&per_round, [0.5]);
    (median, per_round)
}

/// The quantiles `qs` of `x`, linear between the order statistics (numpy's
/// default: the median of an even count is the mean of the middle two),
/// each 0 when `x` is empty.
fn quantiles<const N: usize>(x: &[f64], qs: [f64; N]) -> [f64; N] {
    let mut v = x.to_vec();
    v.sort_by(f64::total_cmp);
    qs.map(|q| {
        if v.is_empty() {
            return 0.0;
        }
        let pos = q * (v.len() - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
    })
}

#[derive(Default)]
struct Measured {
    offered: u64,
    counts: Counts,
    secs: f64,
    cpu_pct: f64,
    softirq_pct: f64,
    /// Generator threads by index, their times summed over slices.
    threads: Vec<ThreadCpu>,
    /// Receive CPUs, busy and steal shares weighted by slice time.
    cores: Vec<CoreUse>,
}

impl Measured {
    /// Frames the program ran on per second of the slice.
    fn pps(&self) -> f64 {
        self.counts.0 as f64 / self.secs.max(1e-9)
    }

    /// Adds a slice (CPU shares weighted by its time).
    fn add(&mut self, m: &Measured) {
        let t = self.secs + m.secs;
        if t > 0.0 {
            self.cpu_pct = (self.cpu_pct * self.secs + m.cpu_pct * m.secs) / t;
            self.softirq_pct = (self.softirq_pct * self.secs + m.softirq_pct * m.secs) / t;
            for c in &m.cores {
                match self.cores.iter_mut().find(|x| x.core == c.core) {
                    Some(x) => {
                        x.busy = (x.busy * self.secs + c.busy * m.secs) / t;
                        x.steal = (x.steal * self.secs + c.steal * m.secs) / t;
                    }
                    None => self.cores.push(c.clone()),
                }
            }
        }
        for (i, th) in m.threads.iter().enumerate() {
            match self.threads.get_mut(i) {
                Some(x) => {
                    x.user_s += th.user_s;
                    x.system_s += th.system_s;
                    x.core = th.core;
                }
                None => self.threads.push(th.clone()),
            }
        }
        self.secs = t;
        self.offered += m.offered;
        self.counts = (self.counts.0 + m.counts.0, self.counts.1 + m.counts.1, self.counts.2 + m.counts.2, self.counts.3 + m.counts.3);
    }
}

fn measure(gen: &Classifier, bed: &Testbed, f: &[u8], cpus: usize, secs: f64, stop: &AtomicBool, counts: &dyn Fn() -> Counts) -> Result<Measured> {
    let before = counts();
    let t_before: Vec<_> = (0..cpus).map(cpu_times).collect();
    let ticks_before = CoreTicks::now();
    let (offered, el, threads) = generate(gen, bed, f, cpus, secs, stop)?;
    let ticks_after = CoreTicks::now();
    let t_after: Vec<_> = (0..cpus).map(cpu_times).collect();
    let rx_cores: Vec<u32> = (0..cpus as u32).collect();
    // The last batch's frames drain from the ring.
    std::thread::sleep(Duration::from_millis(20));
    let after = counts();
    let (mut busy, mut si) = (0.0, 0.0);
    for (a, b) in t_after.iter().zip(&t_before) {
        let tot = (a.2 - b.2).max(1) as f64;
        busy += 100.0 * (a.0 - b.0) as f64 / tot;
        si += 100.0 * (a.1 - b.1) as f64 / tot;
    }
    Ok(Measured {
        offered,
        counts: (after.0 - before.0, after.1 - before.1, after.2 - before.2, after.3 - before.3),
        secs: el,
        cpu_pct: busy / cpus as f64,
        softirq_pct: si / cpus as f64,
        threads,
        cores: ticks_after.since(&ticks_before, &rx_cores),
    })
}

fn cell_of(program: &'static str, rules: u32, encap: Encap, size: usize, cpus: usize, verdict: &'static str, m: &Measured, ns: u64) -> Cell {
    let s = m.secs.max(1e-9);
    let (seen, dropped, passed, forwarded) = m.counts;
    Cell {
        program,
        rules,
        encap,
        size,
        cpus,
        verdict,
        pps: seen as f64 / s,
        offered_pps: m.offered as f64 / s,
        dropped_pps: dropped as f64 / s,
        passed_pps: passed as f64 / s,
        forwarded_pps: forwarded as f64 / s,
        lost_pps: m.offered.saturating_sub(seen) as f64 / s,
        cpu_pct: m.cpu_pct,
        softirq_pct: m.softirq_pct,
        ns_per_frame: ns,
        cpu: {
            let cpu_s: f64 = m.threads.iter().map(ThreadCpu::total_s).sum();
            CpuReport { threads: m.threads.clone(), cores: m.cores.clone(), work_per_cpu_s: (cpu_s > 0.0).then(|| seen as f64 / cpu_s) }
        },
        ratio_to_noop: None,
        ratio_rounds: Vec::new(),
        ratio_quartiles: None,
        slices_pps: Vec::new(),
        anchor: None,
        ratio_to_noop_drop: None,
        frames_offered: m.offered,
        frames_seen: seen,
        frames_dropped: dropped,
        frames_passed: passed,
        frames_forwarded: forwarded,
        seconds: m.secs,
    }
}

fn attach(c: &Classifier, bed: &Testbed, prog: &str) -> Result<XdpLink> {
    let _in = detpath_sys::netns::enter(&bed.e)?;
    c.attach_helper(prog, &bed.ee, XdpMode::Native)
}

/// Mean ns per run of `prog` over `f` under BPF_PROG_TEST_RUN, on CPU 0.
fn test_run_ns(c: &Classifier, prog: &str, f: &[u8], repeat: u32) -> Result<(u32, u64)> {
    let _pin = Pin::to(0);
    let (verdict, _, ns) = c.test_run_prog(prog, f, repeat.max(1))?;
    Ok((verdict, ns))
}

fn machine(skipped: Vec<usize>) -> Machine {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string();
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .unwrap_or("")
        .trim()
        .to_string();
    Machine { kernel, cpu_model, online_cpus: online_cpus(), skipped_cpus: skipped }
}

fn online_cpus() -> usize {
    detpath_sys::cpu::online().iter().count()
}

/// Runs every cell: for each encapsulation, size and receive-CPU count, the
/// two anchors first (dropping, passing), then the classifier with each rule
/// count. Needs root.
/// `progress` is called after each cell.
pub fn run(o: &BenchOptions, progress: &mut dyn FnMut(&Cell)) -> Result<Report> {
    if o.duration.is_zero() {
        return Err(Error::Config("the cell duration must be more than 0 s (--duration 0.05 for a quick run)".into()));
    }
    if let Some(s) = o.sizes.iter().find(|s| !(64..=1514).contains(*s)) {
        return Err(Error::Config(format!("frame size {s} B: the veth carries 64 to 1514 B frames")));
    }
    if let Some(r) = o.rules.iter().find(|r| **r > crate::maps::MAX_RULES) {
        return Err(Error::Config(format!("{r} rules: the program holds at most {}", crate::maps::MAX_RULES)));
    }
    // Captured before the first cell: the load average then is the other load the cells share.
    let environment = Environment::capture();
    let online = online_cpus();
    let (cpus, skipped): (Vec<usize>, Vec<usize>) = o.cpus.iter().partition(|c| **c >= 1 && **c <= online.min(crate::maps::MAX_CPUS as usize));
    let bed = Testbed::new(cpus.iter().copied().max().unwrap_or(1))?;
    let load = |max_rules: u32| match &o.object {
        Some(obj) => Classifier::load_object(obj, max_rules),
        None => Classifier::load(max_rules),
    };
    let gen = load(1)?;
    // Every BPF_PROG_RUN of an XDP program puts it into the kernel's XDP
    // dispatcher and takes it out again, and each change waits for an RCU
    // grace period (milliseconds on this VM): a lone generator thread slept
    // 80-90 % of each slice there (two threads overlap and hide it). A
    // program the dispatcher already holds only has its count changed, so
    // the generator program stays attached, natively, to a veth in G that
    // carries no traffic, for the whole run.
    let _keep_generator_dispatched = {
        let _in = detpath_sys::netns::enter(&bed.g)?;
        gen.attach_helper("cls_gen", &bed.gk, XdpMode::Native)?
    };
    let secs = o.duration.as_secs_f64();
    let mut cells = Vec::new();

    for &encap in &o.encaps {
        // One classifier per rule count for this encapsulation, loaded once.
        let mut classifiers = Vec::new();
        for &n in &o.rules {
            let mut c = load(crate::maps::MAX_RULES)?;
            for (i, text) in rules_for(encap, n).iter().enumerate() {
                let r = parse_intent(text.as_bytes())?;
                c.install(&r, None).map_err(|e| Error::Config(format!("installing bench rule {i} of {n}: {e}")))?;
            }
            classifiers.push((n, c));
        }
        for &size in &o.sizes {
            let f = frame(encap, size);
            let mut anchor_ns = Vec::new();
            for a in Anchor::ALL {
                anchor_ns.push(test_run_ns(&gen, a.bpf_program(), &f, o.test_run_repeat)?.1);
            }
            // Per classifier: its cost and the anchor of its verdict.
            let mut cls = Vec::new();
            for (n, c) in &classifiers {
                let (v, ns) = test_run_ns(c, "cls_main", &f, o.test_run_repeat)?;
                let want = if *n == 0 { Anchor::Pass } else { Anchor::Drop };
                if Anchor::of_xdp_verdict(v) != Some(want) {
                    return Err(Error::Config(format!(
                        "the classifier with {n} rules returned XDP verdict {v} for the {} frame, expected {}",
                        encap.name(),
                        want.name()
                    )));
                }
                cls.push((ns, want));
            }
            for &ncpu in &cpus {
                if o.stop.load(Ordering::Relaxed) {
                    return Ok(Report { environment, machine: machine(skipped), cells });
                }
                // The programs take turns in rounds of slices of the cell's time,
                // so a change in the machine's other load falls on all of them alike.
                let na = Anchor::ALL.len();
                let mut acc: Vec<Measured> = (0..na + classifiers.len()).map(|_| Measured::default()).collect();
                let mut slice_pps: Vec<Vec<f64>> = vec![Vec::new(); na + classifiers.len()];
                let nrounds = rounds(secs);
                for _ in 0..nrounds {
                    for (i, a) in Anchor::ALL.into_iter().enumerate() {
                        let link = attach(&gen, &bed, a.bpf_program())?;
                        let m = measure(&gen, &bed, &f, ncpu, secs / nrounds as f64, &o.stop, &|| {
                            let n = gen.noop_count(a.slot());
                            match a {
                                Anchor::Drop => (n, n, 0, 0),
                                Anchor::Pass => (n, 0, n, 0),
                            }
                        })?;
                        drop(link);
                        slice_pps[i].push(m.pps());
                        acc[i].add(&m);
                    }
                    for (i, (_, c)) in classifiers.iter().enumerate() {
                        let link = attach(c, &bed, "cls_main")?;
                        let m = measure(&gen, &bed, &f, ncpu, secs / nrounds as f64, &o.stop, &|| classifier_counts(c))?;
                        drop(link);
                        slice_pps[na + i].push(m.pps());
                        acc[na + i].add(&m);
                    }
                }
                for (i, a) in Anchor::ALL.into_iter().enumerate() {
                    let mut cell = cell_of(a.cell_program(), 0, encap, size, ncpu, a.name(), &acc[i], anchor_ns[i]);
                    cell.slices_pps = slice_pps[i].clone();
                    progress(&cell);
                    cells.push(cell);
                }
                let anchor_slices = |a: Anchor| &slice_pps[Anchor::ALL.iter().position(|x| *x == a).expect("an anchor")];
                for (i, ((n, _), (ns, anchor))) in classifiers.iter().zip(&cls).enumerate() {
                    let mut cell = cell_of("classify", *n, encap, size, ncpu, anchor.name(), &acc[na + i], *ns);
                    let (ratio, per_round) = median_ratio(&slice_pps[na + i], anchor_slices(*anchor));
                    cell.ratio_to_noop = Some(ratio);
                    cell.ratio_quartiles = Some(quantiles(&per_round, [0.25, 0.75]));
                    cell.ratio_rounds = per_round;
                    cell.slices_pps = slice_pps[na + i].clone();
                    cell.anchor = Some(*anchor);
                    cell.ratio_to_noop_drop = Some(median_ratio(&slice_pps[na + i], anchor_slices(Anchor::Drop)).0);
                    progress(&cell);
                    cells.push(cell);
                }
            }
        }
    }
    Ok(Report { environment, machine: machine(skipped), cells })
}

impl Report {
    /// The run as one JSON document: `{"environment": {...}, "machine": {...},
    /// "cells": [...]}` (what `--json` should print, so a saved file names its host).
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({ "environment": self.environment, "machine": self.machine, "cells": self.cells })
    }
}

/// The report as a table (one line per cell).
pub fn table(r: &Report) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let m = &r.machine;
    let _ = writeln!(
        s,
        "detpath classify bench: kernel {}, {} ({} CPUs online), veth native XDP; generator: BPF_PROG_RUN live frames, one thread per receive CPU, sharing it (CPU 0, then CPU 1)",
        m.kernel, m.cpu_model, m.online_cpus
    );
    if !m.skipped_cpus.is_empty() {
        let _ = writeln!(s, "receive CPU counts skipped (more than this machine has): {:?}", m.skipped_cpus);
    }
    // The encap column as wide as its longest name (5 for the default grid, 8 with udp_dscp).
    let ew = r.cells.iter().map(|c| c.encap.name().len()).max().unwrap_or(0).max(5);
    let _ = writeln!(
        s,
        "{:<9} {:>5} {:<ew$} {:>5} {:>4} {:<4} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>5} {:>5} {:>8} {:<6} {:>6} {:>9} {:>6}",
        "program",
        "rules",
        "encap",
        "size",
        "cpus",
        "verd",
        "offered",
        "recv",
        "dropped",
        "passed",
        "fwd",
        "lost",
        "cpu%",
        "si%",
        "ns/frame",
        "anchor",
        "ratio",
        "q1-q3",
        "r_drop"
    );
    let mpps = |x: f64| format!("{:.3}", x / 1e6);
    for c in &r.cells {
        let _ = writeln!(
            s,
            "{:<9} {:>5} {:<ew$} {:>5} {:>4} {:<4} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>5.0} {:>5.0} {:>8} {:<6} {:>6} {:>9} {:>6}",
            c.program,
            c.rules,
            c.encap.name(),
            c.size,
            c.cpus,
            c.verdict,
            mpps(c.offered_pps),
            mpps(c.pps),
            mpps(c.dropped_pps),
            mpps(c.passed_pps),
            mpps(c.forwarded_pps),
            mpps(c.lost_pps),
            c.cpu_pct,
            c.softirq_pct,
            c.ns_per_frame,
            c.anchor.map(Anchor::name).unwrap_or_default(),
            c.ratio_to_noop.map(|r| format!("{r:.2}")).unwrap_or_default(),
            c.ratio_quartiles.map(|[a, b]| format!("{a:.2}-{b:.2}")).unwrap_or_default(),
            c.ratio_to_noop_drop.map(|r| format!("{r:.2}")).unwrap_or_default()
        );
    }
    let _ = writeln!(
        s,
        "(rates in Mpps; recv = frames the program ran on; anchors: noop counts and drops, noop_pass counts and passes to the stack; \
         ratio = classifier recv / recv of the anchor named in `anchor` (the one with the classifier's verdict) in the same cell; \
         q1-q3 = the first and third quartile of the rounds' ratios (the cell's own spread); r_drop = classifier recv / noop recv)"
    );
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_environment_record_reads_model_vm_flag_and_load_from_proc_texts() {
        let cpuinfo = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu vme hypervisor lahf_lm\n";
        assert_eq!(cpu_model_of(cpuinfo).as_deref(), Some("Intel(R) Xeon(R) Processor"));
        assert!(has_hypervisor_flag(cpuinfo));
        assert!(!has_hypervisor_flag("flags\t\t: fpu vme hypervisorx\n"), "a flag is a whole word");
        assert_eq!(load_average_of("0.52 1.10 2.00 1/123 4567\n"), [0.52, 1.10, 2.00]);
        assert_eq!(load_average_of(""), [0.0; 3]);
        assert_eq!(utc_iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_iso8601(1_795_839_191), "2026-11-28T04:13:11Z");
        let e = Environment::capture();
        assert!(e.cpus >= 1 && !e.kernel.is_empty() && e.date.ends_with('Z'), "{e:?}");
    }

    use super::*;

    #[test]
    fn the_cell_ratio_is_the_median_of_the_rounds_so_one_slow_slice_does_not_decide_it() {
        // Round 3's classifier slice lost half its rate to a preemption.
        let (m, per_round) = median_ratio(&[80.0, 82.0, 40.0, 81.0, 79.0], &[100.0, 100.0, 100.0, 100.0, 100.0]);
        assert_eq!(per_round, [0.8, 0.82, 0.4, 0.81, 0.79]);
        assert_eq!(m, 0.8);
        // An even count: the mean of the two middle ratios; a dead anchor slice gives 0, not infinity.
        let (m, _) = median_ratio(&[50.0, 90.0, 70.0, 10.0], &[100.0, 100.0, 100.0, 0.0]);
        assert!((m - 0.6).abs() < 1e-12, "{m}");
        assert_eq!(rounds(0.05), 4);
    }

    #[test]
    fn quartiles_interpolate_between_the_order_statistics() {
        assert_eq!(quantiles(&[0.9, 0.7, 0.8, 0.6, 1.0], [0.25, 0.75]), [0.7, 0.9]);
        let [a, b] = quantiles(&[4.0, 1.0, 3.0, 2.0], [0.25, 0.75]);
        assert!((a - 1.75).abs() < 1e-12 && (b - 3.25).abs() < 1e-12, "{a} {b}");
        assert_eq!(quantiles(&[0.8], [0.25, 0.75]), [0.8, 0.8]);
        assert_eq!(quantiles(&[], [0.25, 0.75]), [0.0, 0.0]);
        assert_eq!(rounds(1.0), 10);
        assert_eq!(rounds(3.0), 30);
        assert_eq!(rounds(60.0), 40);
    }
}
