//! `detpath report` (being written).
#[derive(clap::Args)]
pub struct Args {}
pub fn run(_a: Args) -> anyhow::Result<i32> {
    anyhow::bail!("`detpath report` is not written yet")
}
