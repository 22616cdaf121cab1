//! ROS 2 names for topics the application creates: a ROS 2 topic and message
//! type become the DDS names ROS 2 nodes use (`/cmd_vel` is `rt/cmd_vel`,
//! `geometry_msgs/msg/Twist` is `geometry_msgs::msg::dds_::Twist_`), so nodes
//! on rmw_cyclonedds_cpp or rmw_fastrtps_cpp match a detpath writer or
//! reader. The mapping itself is `detpath_pubsub::ros2`'s (one for the CLI
//! and every binding); this module accepts the spellings a type's name comes
//! in from the languages' type declarations.

use crate::error::Result;
use detpath_pubsub::ros2;

/// The DDS topic name of the ROS 2 topic `ros_topic` (`chatter`, `/chatter`
/// or `/robot1/cmd_vel`): `rt/` and the name without its leading `/`. A name
/// ROS would refuse is an error saying why.
pub fn topic_name(ros_topic: &str) -> Result<String> {
    Ok(ros2::topic_name(ros_topic)?)
}

/// The DDS type name of the ROS 2 message type `ros_type`, given as ROS
/// names it (`geometry_msgs/msg/Twist`, `geometry_msgs/Twist`), as ROS's IDL
/// and a derive or `IdlStruct` name it (`geometry_msgs::msg::Twist`,
/// `geometry_msgs.msg.Twist`), or already as DDS names it
/// (`geometry_msgs::msg::dds_::Twist_`, kept).
pub fn type_name(ros_type: &str) -> Result<String> {
    if ros2::ros_type(ros_type).is_some() {
        return Ok(ros_type.to_string());
    }
    let slashed = ros_type.replace("::", "/").replace('.', "/");
    ros2::type_name(&slashed).map_err(|e| match e {
        // The name as the user gave it, not as rewritten here.
        ros2::Ros2NameError::Type { why, .. } => ros2::Ros2NameError::Type { name: ros_type.to_string(), why }.into(),
        other => other.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_a_message_type_maps_to_the_dds_name() {
        for given in ["geometry_msgs/msg/Twist", "geometry_msgs/Twist", "geometry_msgs::msg::Twist", "geometry_msgs.msg.Twist", "geometry_msgs::msg::dds_::Twist_"] {
            assert_eq!(type_name(given).unwrap(), "geometry_msgs::msg::dds_::Twist_", "{given}");
        }
        assert_eq!(topic_name("/robot1/cmd_vel").unwrap(), "rt/robot1/cmd_vel");
    }

    #[test]
    fn a_name_ros_refuses_is_an_error_naming_it() {
        let e = type_name("Twist").unwrap_err().to_string();
        assert!(e.contains("\"Twist\"") && e.contains("package/msg/Type"), "{e}");
        let e = type_name("example_interfaces::srv::AddTwoInts").unwrap_err().to_string();
        assert!(e.contains("only messages"), "{e}");
        let e = topic_name("cmd vel").unwrap_err().to_string();
        assert!(e.contains("cmd vel"), "{e}");
    }
}
