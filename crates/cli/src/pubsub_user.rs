//! `detpath pubsub pub|sub` with a topic of the user's type: raw serialized
//! payloads under any topic and type name (ROS 2 names with `--ros2`).
