//! Debian's ddsperf (cyclonedds-tools) as a test peer in a testbed namespace.
// Compiled into each test or example that declares it, and each uses a
// part: what one leaves unused is dead code there.
#![allow(dead_code)]

use detpath::testbed::Side;
use std::process::{Child, Command, Stdio};

/// ddsperf runs here (the burst example asks; the tests go through detpath-testkit).
pub fn have_ddsperf() -> bool {
    Command::new("ddsperf").arg("help").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

/// A ddsperf process in a namespace, killed (by PID) and its configuration
/// removed when dropped.
pub struct Ddsperf(pub Child, std::path::PathBuf);

impl Drop for Ddsperf {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

/// CycloneDDS over UDP with unicast discovery to `peer` (the testbed has no multicast on bypass datapaths).
pub fn udp_config(side: &Side, peer: std::net::Ipv4Addr) -> String {
    format!(
        r#"<CycloneDDS><Domain Id="any"><General><Interfaces><NetworkInterface name="{}"/></Interfaces><AllowMulticast>false</AllowMulticast></General><Discovery><ParticipantIndex>auto</ParticipantIndex><Peers><Peer Address="{peer}"/></Peers></Discovery></Domain></CycloneDDS>"#,
        side.iface
    )
}

/// CycloneDDS over raweth (Ethernet frames, EtherType 7400) on the side's interface.
pub fn raweth_config(side: &Side) -> String {
    format!(
        r#"<CycloneDDS><Domain Id="any"><General><Transport>raweth</Transport><Interfaces><NetworkInterface name="{}"/></Interfaces></General></Domain></CycloneDDS>"#,
        side.iface
    )
}

/// Runs `ddsperf ARGS` in the side's namespace with `config` (tagged `tag` in its temporary directory).
pub fn spawn_in(side: &Side, tag: &str, config: &str, args: &[&str]) -> Ddsperf {
    let dir = std::env::temp_dir().join(format!("detpath-{tag}-{}-{}", side.netns, std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("cyclonedds.xml");
    std::fs::write(&cfg, config).unwrap();
    let child = Command::new("ip")
        .args(["netns", "exec", &side.netns, "ddsperf"])
        .args(args)
        .env("CYCLONEDDS_URI", format!("file://{}", cfg.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ip netns exec ddsperf");
    Ddsperf(child, dir)
}

/// Runs `ddsperf ARGS` in the side's namespace with CycloneDDS's default
/// configuration (no CYCLONEDDS_URI: it picks the interface itself and
/// discovers over the SPDP multicast group, no peer list).
pub fn spawn_default_in(side: &Side, args: &[&str]) -> Ddsperf {
    let dir = std::env::temp_dir().join(format!("detpath-default-{}-{}", side.netns, std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let child = Command::new("ip")
        .args(["netns", "exec", &side.netns, "ddsperf"])
        .args(args)
        .env_remove("CYCLONEDDS_URI")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ip netns exec ddsperf");
    Ddsperf(child, dir)
}
