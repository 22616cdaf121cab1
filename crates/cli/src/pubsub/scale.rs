//! `detpath pubsub scale`: discovery time and memory as the number of
//! participants grows, and fan-out latency from one writer to many readers,
//! detpath beside CycloneDDS in the same run (`detpath_pubsub_bench::scale`).

/// Arguments of `detpath pubsub scale`.
#[derive(clap::Args)]
pub struct ScaleArgs {}

/// Runs the scale benchmark; returns its exit code.
pub fn run(_args: ScaleArgs) -> anyhow::Result<i32> {
    anyhow::bail!("pubsub scale: not built yet")
}
