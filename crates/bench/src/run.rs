//! The ping-pong runner (lead).
