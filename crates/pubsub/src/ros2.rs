//! ROS 2's names on DDS: what a topic and a message type are called on the
//! wire, so that ROS 2 nodes (rmw_cyclonedds_cpp, rmw_fastrtps_cpp) match a
//! detpath topic.
//!
//! Both RMW layers follow the same convention (ROS 2 design article "Topic
//! and Service name mapping to DDS"): a topic's fully qualified ROS name gets
//! the prefix `rt` (`/chatter` is the DDS topic `rt/chatter`), and a message
//! type `pkg/msg/Type` is the DDS type `pkg::msg::dds_::Type_`. ROS 2 names
//! are checked here as ROS checks them, so a typo is an error at creation and
//! never a topic no ROS node will ever see.

use thiserror::Error;

/// The prefix of a ROS 2 topic's DDS name.
pub const TOPIC_PREFIX: &str = "rt";

/// A ROS 2 name that ROS itself would refuse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Ros2NameError {
    /// A topic name ROS would refuse (empty, `//`, a trailing `/`, a token
    /// starting with a digit, a character outside `[A-Za-z0-9_/]`, or `~`/`{}`
    /// substitutions, which a DDS name cannot hold unresolved).
    #[error("ROS 2 topic name {name:?}: {why}")]
    Topic {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A type that is not `package/msg/Type` (or `package/Type`).
    #[error("ROS 2 message type {name:?}: {why} (expected package/msg/Type, e.g. std_msgs/msg/String)")]
    Type {
        /// The type as given.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
}

/// The DDS topic name of a ROS 2 topic: `chatter` and `/chatter` (a relative
/// name resolves in the root namespace) both become `rt/chatter`;
/// `/robot1/cmd_vel` becomes `rt/robot1/cmd_vel`.
pub fn topic_name(ros_topic: &str) -> Result<String, Ros2NameError> {
    let err = |why| Ros2NameError::Topic { name: ros_topic.to_string(), why };
    let absolute = ros_topic.strip_prefix('/').unwrap_or(ros_topic);
    if absolute.is_empty() {
        return Err(err("empty"));
    }
    if absolute.ends_with('/') {
        return Err(err("ends with '/'"));
    }
    for token in absolute.split('/') {
        check_token(token).map_err(err)?;
    }
    Ok(format!("{TOPIC_PREFIX}/{absolute}"))
}

/// The ROS 2 topic (fully qualified, `/chatter`) of a DDS topic name, or
/// `None` when the DDS topic is not a ROS 2 topic (no `rt/` prefix).
pub fn ros_topic(dds_topic: &str) -> Option<String> {
    let rest = dds_topic.strip_prefix(TOPIC_PREFIX)?.strip_prefix('/')?;
    topic_name(rest).ok().map(|_| format!("/{rest}"))
}

/// The DDS type name of a ROS 2 message type: `std_msgs/msg/String` (or
/// `std_msgs/String`) becomes `std_msgs::msg::dds_::String_`.
pub fn type_name(ros_type: &str) -> Result<String, Ros2NameError> {
    let err = |why| Ros2NameError::Type { name: ros_type.to_string(), why };
    let parts: Vec<&str> = ros_type.split('/').collect();
    let (package, kind, name) = match parts.as_slice() {
        [p, n] => (*p, "msg", *n),
        [p, k, n] => (*p, *k, *n),
        _ => return Err(err("not two or three parts")),
    };
    if kind != "msg" {
        return Err(err("only messages (msg) are topics; services and actions are not mapped here"));
    }
    for token in [package, name] {
        check_token(token).map_err(err)?;
    }
    Ok(format!("{package}::msg::dds_::{name}_"))
}

/// The ROS 2 message type (`std_msgs/msg/String`) of a DDS type name, or
/// `None` when it does not follow the convention.
pub fn ros_type(dds_type: &str) -> Option<String> {
    let (package, rest) = dds_type.split_once("::msg::dds_::")?;
    let name = rest.strip_suffix('_')?;
    let ros = format!("{package}/msg/{name}");
    type_name(&ros).ok().map(|_| ros)
}

/// One `/`-separated token of a ROS name: `[A-Za-z_][A-Za-z0-9_]*`.
fn check_token(token: &str) -> Result<(), &'static str> {
    let mut chars = token.chars();
    match chars.next() {
        None => Err("an empty token ('//')"),
        Some(c) if c.is_ascii_digit() => Err("a token starts with a digit"),
        Some(c) if !(c.is_ascii_alphabetic() || c == '_') => Err("a character outside [A-Za-z0-9_/]"),
        _ if chars.any(|c| !(c.is_ascii_alphanumeric() || c == '_')) => Err("a character outside [A-Za-z0-9_/]"),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_get_the_rt_prefix_relative_or_absolute() {
        assert_eq!(topic_name("chatter").unwrap(), "rt/chatter");
        assert_eq!(topic_name("/chatter").unwrap(), "rt/chatter");
        assert_eq!(topic_name("/robot1/cmd_vel").unwrap(), "rt/robot1/cmd_vel");
        assert_eq!(ros_topic("rt/robot1/cmd_vel").as_deref(), Some("/robot1/cmd_vel"));
        assert_eq!(ros_topic("DetpathMixedBulk"), None);
        assert_eq!(ros_topic("rq/add_two_intsRequest").as_deref(), None);
    }

    #[test]
    fn names_ros_refuses_are_refused_with_the_reason() {
        for (bad, why) in [
            ("", "empty"),
            ("/", "empty"),
            ("a//b", "empty token"),
            ("a/", "ends with"),
            ("1abc", "digit"),
            ("a-b", "outside"),
            ("~/x", "outside"),
        ] {
            let e = topic_name(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    #[test]
    fn message_types_map_both_ways() {
        assert_eq!(type_name("std_msgs/msg/String").unwrap(), "std_msgs::msg::dds_::String_");
        assert_eq!(type_name("geometry_msgs/Twist").unwrap(), "geometry_msgs::msg::dds_::Twist_");
        assert_eq!(ros_type("std_msgs::msg::dds_::String_").as_deref(), Some("std_msgs/msg/String"));
        assert_eq!(ros_type("KeyedSeq"), None);
        assert!(type_name("example_interfaces/srv/AddTwoInts").unwrap_err().to_string().contains("only messages"));
        assert!(type_name("String").is_err());
        assert!(type_name("std msgs/msg/String").is_err());
    }
}
