//! detpath-dds: the application API of detpath's RTPS/DDS pub-sub. A
//! [`DomainParticipant`] runs the sans-IO engine of `detpath-pubsub` on its
//! own thread over any detpath endpoint; [`Topic`], [`DataWriter`] and
//! [`DataReader`] carry a user's [`TopicType`]; [`RawWriter`] and
//! [`RawReader`] carry payloads another serializer made (the C and Python
//! bindings' seam); [`Qos`] names policies with DDS's defaults.
//!
//! ```no_run
//! use detpath_dds::{DomainParticipant, Topic, DataWriter, Qos};
//! use detpath_pubsub::types::OneULong;
//! let dp = DomainParticipant::new(0, "udp://10.0.0.1:7410", &["10.0.0.2"])?;
//! let topic = Topic::<OneULong>::new(&dp, "Counter");
//! let w = DataWriter::new(&dp, &topic, &Qos::new().transient_local().keep_last(10))?;
//! w.write(&OneULong { seq: 1 })?;
//! # Ok::<(), detpath_dds::Error>(())
//! ```
//!
//! A control topic with a priority (its datagrams' DSCP, and with a slot
//! scheduler on the endpoint its traffic class) and a latency budget every
//! sample is held to; the application sleeps until one arrives late:
//!
//! ```no_run
//! use detpath_dds::{DataReader, DomainParticipant, Qos, Topic};
//! use detpath_pubsub::types::OneULong;
//! use std::time::Duration;
//! let dp = DomainParticipant::new(0, "udp://10.0.0.2:7410", &["10.0.0.1"])?;
//! let qos = Qos::new().reliable().transport_priority(40).latency_budget(Duration::from_micros(100));
//! let r = DataReader::new(&dp, &Topic::<OneULong>::new(&dp, "Control"), &qos)?;
//! while r.wait_for_over_budget(Duration::from_secs(1))? {
//!     let s = r.latency_budget_status()?; // resets over_change
//!     eprintln!("{} late ({:?}), {} within, clock {}", s.over_change, s.causes, s.within, s.clock.name());
//! }
//! # Ok::<(), detpath_dds::Error>(())
//! ```

//!
//! ROS 2 nodes see a topic made with [`Topic::ros2`]: the ROS topic and the
//! type's ROS name become the DDS names ROS 2 uses ([`ros2`]):
//!
//! ```no_run
//! use detpath_dds::{DataWriter, DomainParticipant, Qos, Topic};
//! #[derive(Clone, Debug, Default, detpath_pubsub::TopicType)]
//! #[dds(type_name = "std_msgs::msg::String")]
//! struct RosString {
//!     data: String,
//! }
//! let dp = DomainParticipant::new(0, "udp://10.0.0.1:7410", &["10.0.0.2"])?;
//! let chatter = Topic::<RosString>::ros2(&dp, "/chatter")?; // rt/chatter, std_msgs::msg::dds_::String_
//! let w = DataWriter::new(&dp, &chatter, &Qos::new().reliable().keep_last(10))?;
//! w.write(&RosString { data: "hello".into() })?;
//! # Ok::<(), detpath_dds::Error>(())
//! ```

#![warn(missing_docs)]

mod endpoint;
mod error;
mod participant;
pub mod qos;
pub mod ros2;

pub use detpath_pubsub::engine::{InstanceState, SampleInfo, WriteError};
pub use detpath_pubsub::types::TopicType;
pub use detpath_pubsub::transport::Wait;
pub use detpath_pubsub::wire::Guid;
pub use detpath_pubsub::budget::{Cause, ClockSync, LatencyHistogram, BUCKET_BOUNDS_NS};
pub use endpoint::{DataReader, DataWriter, LatencyBudgetStatus, RawReader, RawWriter, ReaderStatus, Topic, WriterStatus};
pub use error::{Error, Result};
pub use participant::{DomainParticipant, ParticipantOptions, RawSample};
pub use qos::{Policy, Qos};

/// What a hand-written [`TopicType`] needs: the CDR codec and key hash helpers.
pub mod cdr {
    pub use detpath_pubsub::types::{key_hash_from_payload, key_hash_of_be, key_hash_with, TopicType};
    pub use detpath_pubsub::wire::{CdrReader, CdrWriter, WireError};
}
