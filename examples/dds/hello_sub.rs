//! Receives ten greetings and prints them: `hello_sub <endpoint spec> <peer address>`,
//! e.g. `hello_sub udp://10.0.0.2:7410 10.0.0.1`.
mod hello_type;
use detpath_dds::{DataReader, DomainParticipant, Qos, Topic};
use hello_type::Hello;
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (spec, peer) = (args.get(1).ok_or("usage: hello_sub SPEC PEER")?, args.get(2).ok_or("usage: hello_sub SPEC PEER")?);
    let dp = DomainParticipant::new(0, spec, &[peer])?;
    let topic = Topic::<Hello>::new(&dp, "HelloWorld");
    let reader = DataReader::new(&dp, &topic, &Qos::new().reliable().transient_local().keep_last(10))?;
    let mut received = 0;
    while received < 10 {
        let samples = reader.take_timeout(10, Duration::from_secs(30))?;
        if samples.is_empty() {
            return Err("nothing received for 30 s".into());
        }
        for (hello, _info) in samples.iter().filter(|(_, info)| info.valid_data) {
            println!("{} {}: {}", hello.id, hello.count, hello.text);
            received += 1;
        }
    }
    Ok(())
}
