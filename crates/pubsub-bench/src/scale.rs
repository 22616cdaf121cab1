//! The scale benchmark: discovery time and memory for 2 to 64 participants, fan-out latency from one writer to 1, 4 and 16 readers; detpath and CycloneDDS in the same run.
