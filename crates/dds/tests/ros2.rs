//! ROS 2 names as a user meets them: a `Twist` declared with ROS's IDL name
//! (`geometry_msgs::msg::Twist`) on the ROS 2 topic `/cmd_vel` is on the
//! wire as the DDS topic `rt/cmd_vel` of type
//! `geometry_msgs::msg::dds_::Twist_` (a raw reader under exactly those
//! names matches and gets the six doubles in ROS's field order), a typed
//! reader of the relative name `cmd_vel` gets it field for field, and a
//! reader under the unmapped names matches nothing. ROS's own CDR of the
//! message (the `rosbags` serializer) is checked by the Python binding's
//! test, crates/python/python/tests/test_ros2.py. Needs root (namespaces).

use detpath::testbed::{Side, Testbed, TestbedConfig};
use detpath_dds::{DataReader, DataWriter, DomainParticipant, Error, ParticipantOptions, Qos, Topic};
use std::time::{Duration, Instant};

/// ROS 2's `geometry_msgs/msg/Vector3`.
#[derive(Clone, Debug, Default, PartialEq, detpath_pubsub::TopicType)]
#[dds(type_name = "geometry_msgs::msg::Vector3")]
struct Vector3 {
    x: f64,
    y: f64,
    z: f64,
}

/// ROS 2's `geometry_msgs/msg/Twist`.
#[derive(Clone, Debug, Default, PartialEq, detpath_pubsub::TopicType)]
#[dds(type_name = "geometry_msgs::msg::Twist")]
struct Twist {
    linear: Vector3,
    angular: Vector3,
}

const PORT: u16 = 7410;

fn participant(side: &Side, peer: &Side) -> DomainParticipant {
    let opts = ParticipantOptions { netns: Some(side.netns.clone()), ..Default::default() };
    DomainParticipant::with_options(0, &side.uri("udp", PORT), &[&peer.addr.to_string()], opts).expect("participant")
}

fn until(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < end, "{what}: not within 5 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_twist_on_ros2_names_reaches_readers_under_the_dds_names() {
    let tb = Testbed::up(TestbedConfig::unique("ros2")).expect("testbed up (needs root)");
    let (a, b) = (tb.a(), tb.b());
    let (pa, pb) = (participant(a, b), participant(b, a));
    // ROS 2's default QoS: reliable, volatile, KEEP_LAST 10.
    let qos = Qos::new().reliable().keep_last(10);
    let topic = Topic::<Twist>::ros2(&pa, "/cmd_vel").unwrap();
    assert_eq!((topic.name(), topic.type_name()), ("rt/cmd_vel", "geometry_msgs::msg::dds_::Twist_"));
    let w = DataWriter::new(&pa, &topic, &qos).unwrap();
    let typed = DataReader::new(&pb, &Topic::<Twist>::ros2(&pb, "cmd_vel").unwrap(), &qos).unwrap();
    let raw = pb.create_raw_reader("rt/cmd_vel", "geometry_msgs::msg::dds_::Twist_", false, &qos).unwrap();
    let unmapped = DataReader::new(&pb, &Topic::<Twist>::new(&pb, "cmd_vel"), &qos).unwrap();
    until("the writer matches the two readers under ROS 2's names", || w.status().unwrap().matched_subscriptions == 2);
    until("the readers match", || typed.status().unwrap().matched_publications == 1 && raw.status().unwrap().matched_publications == 1);

    let sent = Twist { linear: Vector3 { x: 0.5, y: -1.25, z: 2.0 }, angular: Vector3 { x: 0.0, y: 3.5, z: -0.125 } };
    w.write(&sent).unwrap();
    let got = typed.take_timeout(10, Duration::from_secs(5)).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, sent, "field for field");

    let bytes = raw.take_timeout(10, Duration::from_secs(5)).unwrap();
    let payload = &bytes[0].0;
    assert_eq!(payload.len(), 4 + 6 * 8, "encapsulation header and six doubles");
    let doubles: Vec<f64> = payload[4..].chunks(8).map(|c| if payload[1] == 1 { f64::from_le_bytes(c.try_into().unwrap()) } else { f64::from_be_bytes(c.try_into().unwrap()) }).collect();
    assert_eq!(doubles, [0.5, -1.25, 2.0, 0.0, 3.5, -0.125], "linear x y z, angular x y z");

    assert_eq!(unmapped.status().unwrap().matched_publications, 0, "the unmapped names are another topic");
    assert!(unmapped.take(10).unwrap().is_empty());
    assert_eq!(pb.counters().unwrap().rx_malformed, 0);
}

#[test]
fn names_ros_refuses_are_errors_at_creation() {
    let tb = Testbed::up(TestbedConfig::unique("ros2n")).expect("testbed up (needs root)");
    let (a, b) = (tb.a(), tb.b());
    let pa = participant(a, b);
    let e = Topic::<Twist>::ros2(&pa, "cmd vel").unwrap_err();
    assert!(matches!(e, Error::Ros2Name(_)) && e.to_string().contains("\"cmd vel\""), "{e}");
    /// A Rust name, not a ROS message type.
    #[derive(Clone, Debug, Default, detpath_pubsub::TopicType)]
    struct Plain {
        x: u32,
    }
    let e = Topic::<Plain>::ros2(&pa, "/plain").unwrap_err().to_string();
    assert!(e.contains("\"Plain\"") && e.contains("std_msgs/msg/String"), "{e}");
}
