//! Paper 004's fair spreading through a real veth: one GTP-U tunnel (one TEID
//! rule, `STEER_CPU` with `cpus`: every online CPU) carrying many inner flows.
//! The classifier on the receiving veth redirects each frame through the
//! cpumap to the CPU its inner 5-tuple hashes to; the program's per-target
//! counters show the flows land on more than one CPU, and that one flow
//! always lands on one CPU. Root; needs 2 online CPUs (says so by name).

mod common;

use common::{in_ns, remove_and_check, veth, Namespaces};
use detpath_classify::bench::{frame_with, Encap};
use detpath_classify::{parse_intent, Classifier, XdpMode};

fn diff(a: &[u64], b: &[u64]) -> Vec<u64> {
    a.iter().zip(b).map(|(x, y)| x - y).collect()
}

#[test]
fn inner_flows_of_one_tunnel_spread_over_cpus() {
    let online = detpath_sys::cpu::online().iter().count();
    if !detpath_testkit::need("inner_flows_of_one_tunnel_spread_over_cpus", &format!("2 online CPUs to spread over (this machine has {online})"), online >= 2, "run on a machine with 2 or more cores") {
        return;
    }
    let mut ns = Namespaces::new();
    let (g, e) = (ns.add("g"), ns.add("e"));
    let (ge, ee) = (ns.ifname("g"), ns.ifname("e"));
    veth(&g, &ge, "02:64:63:00:02:01", &e, &ee, "02:64:63:00:02:0e");

    let mut cls = Classifier::load(16).unwrap();
    let cpus: Vec<String> = cls.online_cpus().iter().map(|c| c.to_string()).collect();
    let intent = format!(
        r#"{{"Resources": [{{"encapsulationType1": "gtp", "encapsulationID1": 4096}}], "Action": {{"actionType": "INSERT", "actionName": "STEER_CPU", "cpus": [{}]}}}}"#,
        cpus.join(", ")
    );
    let ins = cls.install(&parse_intent(intent.as_bytes()).unwrap(), None).unwrap();
    in_ns(&e, || cls.attach(&ee, XdpMode::Native)).unwrap();
    let gen = Classifier::load(1).unwrap();
    let send = |sport: u16, n: u32| {
        let f = frame_with(Encap::Gtpu, 200, sport);
        in_ns(&g, || {
            let ifindex = detpath_sys::netdev::ifindex(&ge).unwrap();
            gen.live_frames("cls_gen", &f, ifindex, n).unwrap();
        });
    };
    let wait_for = |want: u64| {
        for _ in 0..100 {
            if cls.cpu_hits().iter().sum::<u64>() >= want {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };

    // 64 inner flows of the tunnel, 20 frames each.
    let h0 = cls.cpu_hits();
    for sport in 0..64u16 {
        send(30000 + sport, 20);
    }
    wait_for(h0.iter().sum::<u64>() + 64 * 20);
    let h1 = cls.cpu_hits();
    let d = diff(&h1, &h0);
    assert_eq!(d.iter().sum::<u64>(), 64 * 20, "every frame redirected once: {d:?}");
    assert_eq!(cls.rule_stat(ins.slot).packets, 64 * 20, "the tunnel's rule matched every frame");
    let used: Vec<usize> = d.iter().enumerate().filter(|(_, n)| **n > 0).map(|(c, _)| c).collect();
    assert!(used.len() >= 2, "64 inner flows of one tunnel all landed on CPUs {used:?}: not spread");
    for c in &used {
        assert!(cls.online_cpus().contains(&(*c as u32)), "CPU {c} is not in the rule's set");
        assert_eq!(d[*c] % 20, 0, "a flow was split between CPUs: {d:?}");
    }

    // One flow: one CPU, every time.
    send(31000, 200);
    wait_for(h1.iter().sum::<u64>() + 200);
    let d = diff(&cls.cpu_hits(), &h1);
    assert_eq!(d.iter().filter(|n| **n > 0).count(), 1, "one flow went to several CPUs: {d:?}");
    assert_eq!(d.iter().sum::<u64>(), 200);
    assert_eq!(cls.total("steer").packets, 64 * 20 + 200);

    cls.detach();
    remove_and_check(ns);
}
