//! A reader meets writers of its topic it cannot decode (two engines on
//! the in-memory network): one of another layout under the reader's own
//! type name (matched; each sample fails to deserialize, is counted in the
//! reader's status and dropped, and the writer is reported once by its
//! type name), one that announces another type name (not matched, reported
//! once), and through it all a writer of the right layout still delivers.
//! Against a real CycloneDDS peer: tests/cyclonedds.rs.

mod common;
use common::*;
use detpath_pubsub::engine::{EngineError, Event, ReaderId, Undecodable};
use detpath_pubsub::qos::Qos;
use detpath_pubsub::wire::{CdrReader, Guid, WireError};
use detpath_pubsub::TopicType;

/// What the reader declares: `demo::Reading`, three fields.
#[derive(TopicType, Clone, Debug, Default, PartialEq)]
#[dds(type_name = "demo::Reading")]
struct Reading {
    #[key]
    sensor: u32,
    celsius: f64,
    taken_at: u64,
}

/// Another layout under the same name: the third field is missing.
#[derive(TopicType, Clone, Debug, Default, PartialEq)]
#[dds(type_name = "demo::Reading")]
struct OldReading {
    #[key]
    sensor: u32,
    celsius: f64,
}

/// Another type name on the same topic.
#[derive(TopicType, Clone, Debug, Default, PartialEq)]
#[dds(type_name = "demo::Humidity")]
struct Humidity {
    #[key]
    sensor: u32,
    percent: f32,
}

const TOPIC: &str = "Readings";

/// The undecodable-type events node 1 has seen since the last call: (reader, writer, type name, why).
fn undecodable_events(net: &mut Net) -> Vec<(ReaderId, Guid, String, Undecodable)> {
    let mut got = Vec::new();
    while let Some(e) = net.nodes[1].poll_event() {
        if let Event::UndecodableType { reader, writer, type_name, why } = e {
            got.push((reader, writer, type_name, why));
        }
    }
    got
}

#[test]
fn samples_of_another_layout_are_counted_dropped_and_their_writer_reported_once() {
    let mut net = Net::new(2);
    let q = Qos::reliable_keep_last(16);
    let old_w = net.nodes[0].create_writer_for(TOPIC, q.clone(), &OldReading::default()).unwrap();
    let r = net.nodes[1].create_reader_for(0, TOPIC, q.clone(), &Reading::default()).unwrap();
    net.run_until(2000, |n| n.nodes[1].reader_status(r).matched == 1).expect("the same type name matches");
    let old_guid = net.nodes[0].writer_guid(old_w);

    for i in 0..5 {
        let now = net.now;
        net.nodes[0].write(now, &mut net.outs[0], old_w, None, &OldReading { sensor: i, celsius: 20.5 }).unwrap();
    }
    net.run_until(2000, |n| n.nodes[1].reader_status(r).waiting == 5).expect("five samples arrive");
    let mut rx = Reading::default();
    let mut errors = Vec::new();
    loop {
        match net.nodes[1].take(r, &mut rx) {
            Ok(Some(_)) => panic!("a sample of another layout decoded: {rx:?}"),
            Ok(None) => break,
            Err(e) => errors.push(e),
        }
    }
    assert_eq!(errors, vec![EngineError::Deserialize(WireError::Truncated); 5], "each too short for the reader's layout");
    let st = net.nodes[1].reader_status(r);
    assert_eq!((st.undecodable, st.received, st.waiting), (5, 5, 0));
    let evs = undecodable_events(&mut net);
    assert_eq!(evs, [(r, old_guid, "demo::Reading".to_string(), Undecodable::Layout(WireError::Truncated))], "reported once, by name");

    // A writer announcing another type name on the topic: not matched, reported once.
    let other_w = net.nodes[0].create_writer_for(TOPIC, q.clone(), &Humidity::default()).unwrap();
    net.run_until(3000, |_| false);
    let evs = undecodable_events(&mut net);
    assert_eq!(evs, [(r, net.nodes[0].writer_guid(other_w), "demo::Humidity".to_string(), Undecodable::OtherTypeName)]);
    assert_eq!(net.nodes[1].reader_status(r).matched, 1, "the other type is not matched");

    // More of the old layout: counted, not reported again; a writer of the right layout delivers.
    let good_w = net.nodes[0].create_writer_for(TOPIC, q, &Reading::default()).unwrap();
    net.run_until(2000, |n| n.nodes[1].reader_status(r).matched == 2).expect("the right layout matches");
    let now = net.now;
    net.nodes[0].write(now, &mut net.outs[0], old_w, None, &OldReading { sensor: 9, celsius: 1.0 }).unwrap();
    let want = Reading { sensor: 3, celsius: 21.25, taken_at: 77 };
    net.nodes[0].write(now, &mut net.outs[0], good_w, None, &want).unwrap();
    net.run_until(2000, |n| n.nodes[1].reader_status(r).waiting == 2).expect("both arrive");
    let mut good = Vec::new();
    let mut bad = 0;
    for _ in 0..2 {
        match net.nodes[1].take(r, &mut rx) {
            Ok(Some(info)) => good.push((info.writer, rx.clone())),
            Ok(None) => break,
            Err(EngineError::Deserialize(_)) => bad += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(good, [(net.nodes[0].writer_guid(good_w), want)]);
    assert_eq!((bad, net.nodes[1].reader_status(r).undecodable), (1, 6));
    assert_eq!(undecodable_events(&mut net), [], "each writer and type is reported once");
}

#[test]
fn an_application_decoding_raw_samples_reports_the_ones_it_cannot() {
    let mut net = Net::new(2);
    let q = Qos::reliable_keep_last(4);
    let w = net.nodes[0].create_writer_for(TOPIC, q.clone(), &OldReading::default()).unwrap();
    let r = net.nodes[1].create_reader_for(0, TOPIC, q, &Reading::default()).unwrap();
    net.run_until(2000, |n| n.nodes[1].reader_status(r).matched == 1).expect("matched");
    for i in 0..2 {
        let now = net.now;
        net.nodes[0].write(now, &mut net.outs[0], w, None, &OldReading { sensor: i, celsius: 0.5 }).unwrap();
    }
    net.run_until(2000, |n| n.nodes[1].reader_status(r).waiting == 2).expect("both arrive");
    let decode = |bytes: &[u8]| CdrReader::from_payload(bytes).and_then(|mut c| Reading::default().deserialize_into(&mut c));
    while let Some((writer, res)) = net.nodes[1].take_raw(r, |info, bytes| (info.writer, decode(bytes))) {
        let e = res.expect_err("another layout");
        net.nodes[1].report_undecodable(r, writer, e);
    }
    assert_eq!(net.nodes[1].reader_status(r).undecodable, 2);
    assert_eq!(undecodable_events(&mut net).len(), 1);
}
