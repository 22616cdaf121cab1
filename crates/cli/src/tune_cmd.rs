//! `detpath tune` (being written).
#[derive(clap::Args)]
pub struct Args {}
pub fn run(_a: Args) -> anyhow::Result<i32> {
    anyhow::bail!("`detpath tune` is not written yet")
}
