//! The Fast DDS reference rows of `detpath pubsub bench`: Fast DDS 2.9 against itself over its own UDP transport (same type, size, QoS and rate as the detpath rows).
