//! Publishes ten greetings to a subscriber: `hello_pub <endpoint spec> <peer address>`,
//! e.g. `hello_pub udp://10.0.0.1:7410 10.0.0.2`.
mod hello_type;
use detpath_dds::{DataWriter, DomainParticipant, Qos, Topic};
use hello_type::Hello;
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (spec, peer) = (args.get(1).ok_or("usage: hello_pub SPEC PEER")?, args.get(2).ok_or("usage: hello_pub SPEC PEER")?);
    let dp = DomainParticipant::new(0, spec, &[peer])?;
    let topic = Topic::<Hello>::new(&dp, "HelloWorld");
    let writer = DataWriter::new(&dp, &topic, &Qos::new().reliable().transient_local().keep_last(10))?;
    while writer.status()?.matched_subscriptions == 0 {
        std::thread::sleep(Duration::from_millis(20));
    }
    for count in 0..10 {
        writer.write(&Hello { id: 1, count, text: format!("hello world {count}") })?;
    }
    // Stay until the subscriber has it all (reliable: it acknowledges).
    writer.wait_for_acknowledgments(Duration::from_secs(10))?;
    Ok(())
}
