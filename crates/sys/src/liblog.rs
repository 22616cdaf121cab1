//! Where libbpf's own messages go.
//!
//! libbpf prints warnings ("libbpf: elf: skipping unrecognized data
//! section ...") to stderr unless told otherwise. A benchmark's output is
//! for detpath's progress and tables; these lines belong in a log file of the
//! run (and on stderr only when the user asks with `-v`). This module points
//! the libbpf linked into detpath (libbpf-rs's copy) at such a file. The
//! copies of libbpf and libxdp that DPDK's af_xdp driver brings, and the
//! DPDK EAL's log, are routed by the DPDK shim to the same file.

use std::fs::File;
use std::io::Write as _;
use std::sync::Mutex;

use libbpf_rs::PrintLevel;

/// The open log and whether lines also go to stderr.
static SINK: Mutex<Option<(File, bool)>> = Mutex::new(None);

fn print(level: PrintLevel, msg: String) {
    // libbpf's debug level is a firehose (every relocation); keep info and up.
    if level == PrintLevel::Debug {
        return;
    }
    let mut sink = SINK.lock().unwrap_or_else(|p| p.into_inner());
    match sink.as_mut() {
        Some((file, tee)) => {
            let _ = file.write_all(msg.as_bytes());
            if *tee {
                eprint!("{msg}");
            }
        }
        None => eprint!("{msg}"),
    }
}

/// Sends libbpf's messages to `file` (appended, one line each) and, with
/// `tee`, to stderr as well. Called again, it moves them to the new file.
pub fn route_to(file: File, tee: bool) {
    *SINK.lock().unwrap_or_else(|p| p.into_inner()) = Some((file, tee));
    libbpf_rs::set_print(Some((PrintLevel::Info, print)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_land_in_the_file() {
        let path = std::env::temp_dir().join(format!("detpath-liblog-{}.log", std::process::id()));
        route_to(File::create(&path).unwrap(), false);
        // libbpf puts its own "libbpf: " prefix on every line.
        print(PrintLevel::Warn, "libbpf: elf: skipping unrecognized data section(8) .xdp_run_config\n".into());
        print(PrintLevel::Debug, "a relocation nobody needs\n".into());
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(text, "libbpf: elf: skipping unrecognized data section(8) .xdp_run_config\n");
    }
}
